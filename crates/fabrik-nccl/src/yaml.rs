//! YAML that YAML 1.1 readers read back as written: the writer of [`fabrik_quote::yaml`],
//! used by `fabrik env --format k8s` here and by fabrik-launch's manifests, so both write the
//! same YAML.

pub use fabrik_quote::yaml::{needs_quotes, to_string};
