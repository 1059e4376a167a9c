//! `docs/schema/node.schema.json` is the JSON Schema of [`fabrik_model::Node`], generated from
//! the types. This test fails when the committed file and the types disagree; run it with
//! `FABRIK_BLESS=1` to rewrite the file after changing the model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

fn generated() -> String {
    let schema = schemars::schema_for!(fabrik_model::Node);
    let mut text = serde_json::to_string_pretty(&schema).unwrap();
    text.push('\n');
    text
}

#[test]
fn committed_node_schema_matches_the_types() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema/node.schema.json");
    let want = generated();
    if std::env::var_os("FABRIK_BLESS").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{} is out of date; regenerate with FABRIK_BLESS=1 cargo test -p fabrik-probe --test schema",
        path.display()
    );
}

#[test]
fn fixture_output_validates_in_shape() {
    // Every key of a probed node appears among the schema's properties.
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/nodes/roce-dualport");
    let node = fabrik_probe::probe(&root).unwrap();
    let value = serde_json::to_value(&node).unwrap();
    let schema: serde_json::Value = serde_json::from_str(&generated()).unwrap();
    let props = schema["properties"].as_object().unwrap();
    for key in value.as_object().unwrap().keys() {
        assert!(props.contains_key(key), "schema lacks {key}");
    }
    assert_eq!(value["schema_version"], 1);
}
