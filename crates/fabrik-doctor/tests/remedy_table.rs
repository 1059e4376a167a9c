//! docs/fix.md's table of rules and their remediation class is generated from the catalog and
//! `remedy::REMEDIES`; this test fails when they drift, and `FABRIK_BLESS=1` rewrites it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

const BEGIN: &str = "<!-- remediation table: generated, FABRIK_BLESS=1 cargo test -p fabrik-doctor --test remedy_table -->\n";
const END: &str = "<!-- end of the remediation table -->\n";

#[test]
fn docs_fix_md_holds_the_generated_table() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/fix.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (head, rest) = doc.split_once(BEGIN).expect("begin marker in docs/fix.md");
    let (_, tail) = rest.split_once(END).expect("end marker in docs/fix.md");
    let want = format!(
        "{head}{BEGIN}{}{END}{tail}",
        fabrik_doctor::remedy::table_markdown()
    );
    if std::env::var_os("FABRIK_BLESS").is_some() {
        std::fs::write(&path, want).unwrap();
    } else {
        assert!(doc == want, "docs/fix.md's table drifted: FABRIK_BLESS=1 cargo test -p fabrik-doctor --test remedy_table");
    }
}
