//! Command outputs that `snapshot` saved under `ROOT/fabrik/cmd/NAME.txt`.

use std::collections::BTreeMap;

use crate::fs::{join, RootFs};

/// The directory of command captures inside a root.
pub const CMD_DIR: &str = "/fabrik/cmd";

/// The captured texts by name (`mlnx_qos-eth2`), sorted.
pub struct Captures {
    texts: BTreeMap<String, String>,
}

impl Captures {
    /// Reads every `NAME.txt` under [`CMD_DIR`]; an unreadable one is left out with a warning.
    pub fn read(fs: &mut RootFs) -> Self {
        let mut texts = BTreeMap::new();
        for file in fs.list_opt(CMD_DIR) {
            let Some(name) = file.strip_suffix(".txt") else {
                continue;
            };
            if let Some(text) = fs.text_opt(&join(CMD_DIR, &file)) {
                texts.insert(name.to_string(), text);
            }
        }
        Captures { texts }
    }

    /// Adds (or replaces) capture `name`: a tool's output gathered on the live machine.
    pub fn insert(&mut self, name: &str, text: String) {
        self.texts.insert(name.to_string(), text);
    }

    /// The capture names (`ibstat`, `mlnx_qos-eth2`), sorted.
    pub fn names(&self) -> Vec<String> {
        self.texts.keys().cloned().collect()
    }

    /// The text of capture `name`, when there is one.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.texts.get(name).map(String::as_str)
    }

    /// Every capture whose name starts with `prefix`, in name order.
    pub fn with_prefix<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = (&'a str, &'a str)> {
        self.texts
            .iter()
            .filter(move |(k, _)| k.starts_with(prefix))
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The file a capture was read from, for evidence.
    pub fn path_of(name: &str) -> String {
        format!("{CMD_DIR}/{name}.txt")
    }
}
