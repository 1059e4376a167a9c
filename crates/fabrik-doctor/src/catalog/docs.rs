//! The catalog as JSON documents: `fabrik rules` and `fabrik explain ID`.

use fabrik_model::{Rule, SCHEMA_VERSION};
use serde::Serialize;

/// Every rule, as `fabrik rules --format json` writes them.
#[derive(Debug, Serialize)]
pub struct RulesDoc {
    /// The document's schema version.
    pub schema_version: u32,
    /// The rules, in [`super::rules`]' order.
    pub rules: Vec<&'static Rule>,
}

/// One rule and its page, as `fabrik explain ID --format json` writes them.
#[derive(Debug, Serialize)]
pub struct ExplainDoc {
    /// The document's schema version.
    pub schema_version: u32,
    /// The rule.
    pub rule: &'static Rule,
    /// The page as `--format text` prints it.
    pub page: String,
}

/// Every rule [`super::rules`] lists.
pub fn rules_doc() -> RulesDoc {
    RulesDoc {
        schema_version: SCHEMA_VERSION,
        rules: super::rules(),
    }
}

/// Rule `id` (any case) with its page; `None` for an id no rule has.
pub fn explain(id: &str) -> Option<ExplainDoc> {
    let rule = super::rule(id)?;
    Some(ExplainDoc {
        schema_version: SCHEMA_VERSION,
        rule,
        page: super::page(rule),
    })
}
