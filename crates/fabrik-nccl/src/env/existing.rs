//! What the caller already set. Nothing is overridden silently: kept values are reported, and
//! replaced values raise a warning that names both.

use std::collections::BTreeMap;

use super::{Builder, ExistingAction, ExistingVar, Note};

/// The variable families NCCL and its network plugins read.
pub fn is_fabric_var(name: &str) -> bool {
    ["NCCL_", "FI_", "UCX_"].iter().any(|p| name.starts_with(p))
}

pub(crate) fn merge(
    b: &mut Builder,
    existing: &BTreeMap<String, String>,
    keep_env: bool,
) -> Vec<ExistingVar> {
    let mut out = Vec::new();
    // Every variable fabrik sets is checked against the caller's (LD_LIBRARY_PATH and
    // CUDA_DEVICE_ORDER too); the NCCL/libfabric/UCX families are also passed through when
    // fabrik has no opinion on them.
    let relevant = |k: &String| is_fabric_var(k) || b.vars.iter().any(|v| &v.name == k);
    let selected: Vec<(&String, &String)> = existing.iter().filter(|(k, _)| relevant(k)).collect();
    for (name, value) in selected {
        match b.vars.iter_mut().find(|v| &v.name == name) {
            Some(var) if &var.value == value => out.push(ExistingVar {
                name: name.clone(),
                value: value.clone(),
                proposed: Some(var.value.clone()),
                action: ExistingAction::Kept,
            }),
            Some(var) if keep_env => {
                let proposed = std::mem::replace(&mut var.value, value.clone());
                var.reason = format!(
                    "kept from the environment (--keep-env); fabrik would set {proposed:?}: {}",
                    var.reason
                );
                var.source = "environment".into();
                b.notes.push(Note::info(format!(
                    "{name}={value:?} kept from the environment; fabrik proposed {proposed:?}"
                )));
                out.push(ExistingVar {
                    name: name.clone(),
                    value: value.clone(),
                    proposed: Some(proposed),
                    action: ExistingAction::Kept,
                });
            }
            Some(var) => {
                b.notes.push(Note::warning(format!(
                    "{name}={value:?} is set in the environment and fabrik's value {:?} replaces it; pass --keep-env to keep yours",
                    var.value
                )));
                out.push(ExistingVar {
                    name: name.clone(),
                    value: value.clone(),
                    proposed: Some(var.value.clone()),
                    action: ExistingAction::Overridden,
                });
            }
            None => {
                b.set(
                    name,
                    value.clone(),
                    "already set in the environment; passed through unchanged",
                    "environment",
                );
                b.notes.push(Note::info(format!(
                    "{name}={value:?} from the environment is passed through"
                )));
                out.push(ExistingVar {
                    name: name.clone(),
                    value: value.clone(),
                    proposed: None,
                    action: ExistingAction::Kept,
                });
            }
        }
    }
    out
}
