//! `apply` and `undo` against a machine that keeps its state in memory and acts on the commands
//! the real tools take (`ip link set dev X mtu N`, `sysctl -w k=v`, `modprobe`), so the record,
//! the stop on failure and the undo are checked value by value.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io;

use fabrik_doctor::remedy::{sysctl_path, Change};
use fabrik_doctor::NamedNode;
use fabrik_fix::apply::{apply, undo, Record, Status, System};
use fabrik_fix::Plan;
use fabrik_model::{Finding, Node, Severity};

#[derive(Default)]
struct Machine {
    values: BTreeMap<String, String>,
    files: BTreeMap<String, String>,
    ran: Vec<Vec<String>>,
    fail_on: Option<String>,
}

impl System for Machine {
    fn run(&mut self, argv: &[String]) -> Result<String, String> {
        self.ran.push(argv.to_vec());
        if self.fail_on.as_deref() == Some(argv[0].as_str()) {
            return Err(format!(
                "{} failed (exit status: 1): Operation not permitted",
                argv[0]
            ));
        }
        match argv
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice()
        {
            ["ip", "link", "set", "dev", nd, "mtu", m] => {
                self.values
                    .insert(format!("/sys/class/net/{nd}/mtu"), m.to_string());
            }
            ["sysctl", "-w", kv] => {
                let (k, v) = kv.split_once('=').unwrap();
                self.values.insert(sysctl_path(k), v.to_string());
            }
            ["modprobe", name] => {
                self.values
                    .insert(format!("/sys/module/{name}"), String::new());
            }
            ["modprobe", "-r", name] => {
                self.values.remove(&format!("/sys/module/{name}"));
            }
            _ => {}
        }
        Ok(String::new())
    }
    fn read_value(&mut self, path: &str) -> io::Result<String> {
        self.values
            .get(path)
            .cloned()
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }
    fn exists(&mut self, path: &str) -> bool {
        self.values.contains_key(path)
    }
    fn read_file(&mut self, path: &str) -> io::Result<Option<String>> {
        Ok(self.files.get(path).cloned())
    }
    fn write_file(&mut self, path: &str, text: &str) -> io::Result<()> {
        self.files.insert(path.into(), text.into());
        Ok(())
    }
    fn remove_file(&mut self, path: &str) -> io::Result<()> {
        self.files.remove(path);
        Ok(())
    }
    fn write_value(&mut self, path: &str, value: &str) -> io::Result<()> {
        self.values.insert(path.into(), value.into());
        Ok(())
    }
    fn has_program(&mut self, _name: &str) -> bool {
        true
    }
}

/// A plan of three steps on node `n`, made through fabrik_fix::plan from findings of the
/// rules that call for them, on a node that holds the values.
fn three_steps() -> Plan {
    let node = Node {
        hostname: Some("n".into()),
        modules: vec![fabrik_model::KernelModule {
            name: "mlx5_ib".into(),
            refcount: None,
            version: None,
        }],
        ..Default::default()
    };
    let nodes = vec![NamedNode {
        name: "n".into(),
        node,
    }];
    let f = |rule: &str, sev| Finding {
        rule: rule.into(),
        severity: sev,
        subject: "node".into(),
        message: String::new(),
        evidence: vec![],
        fix: "by hand".into(),
    };
    let plan = fabrik_fix::plan(
        &[
            f("FAB-RDMA-002", Severity::Error),
            f("FAB-RDMA-003", Severity::Warning),
        ],
        &nodes,
        None,
        &[],
    );
    assert_eq!(plan.steps.len(), 2, "{plan:#?}");
    plan
}

fn machine() -> Machine {
    let mut m = Machine::default();
    m.values
        .insert("/sys/class/net/eth2/mtu".into(), "1500".into());
    m.files.insert(
        "/etc/security/limits.d/90-fabrik-memlock.conf".into(),
        "old\n".into(),
    );
    m
}

#[test]
fn apply_records_before_changing_and_undo_puts_everything_back() {
    let plan = three_steps();
    let mut m = machine();
    let mut saved: Vec<Record> = vec![];
    let out = apply(&plan, "n", false, 7, &mut m, &mut |r| {
        saved.push(r.clone());
        Ok(())
    })
    .unwrap();
    assert!(out.failed().is_none());
    // The module step: recorded as started (with the value read) before modprobe ran.
    assert_eq!(saved[0].steps[0].status, Status::Applying);
    assert_eq!(saved[0].steps[0].previous.as_deref(), Some("not loaded"));
    assert_eq!(m.ran[0], vec!["modprobe", "ib_uverbs"]);
    let rec = &out.record;
    assert_eq!(rec.steps[0].status, Status::Applied);
    assert_eq!(rec.steps[0].after.as_deref(), Some("loaded"));
    assert_eq!(
        m.files["/etc/modules-load.d/fabrik-ib_uverbs.conf"],
        "# Written by fabrik fix.\nib_uverbs\n"
    );
    // The memlock step replaced an existing file: its old text is in the record.
    assert_eq!(rec.steps[1].files[0].before.as_deref(), Some("old\n"));
    assert!(m.files["/etc/security/limits.d/90-fabrik-memlock.conf"]
        .contains("root hard memlock unlimited"));

    let undone = undo(out.record.clone(), &mut m);
    assert!(undone.failed.is_empty(), "{:?}", undone.failed);
    assert!(!m.values.contains_key("/sys/module/ib_uverbs"));
    assert!(!m
        .files
        .contains_key("/etc/modules-load.d/fabrik-ib_uverbs.conf"));
    assert!(!m
        .files
        .contains_key("/etc/systemd/system.conf.d/90-fabrik-memlock.conf"));
    assert_eq!(
        m.files["/etc/security/limits.d/90-fabrik-memlock.conf"],
        "old\n"
    );
    assert!(undone
        .record
        .steps
        .iter()
        .all(|d| d.status == Status::Undone));
}

#[test]
fn a_failing_step_stops_the_run_and_says_what_was_not_done() {
    let plan = three_steps();
    let mut m = machine();
    m.fail_on = Some("modprobe".into());
    let out = apply(&plan, "n", false, 7, &mut m, &mut |_| Ok(())).unwrap();
    let failed = out.failed().unwrap();
    assert_eq!(failed.id, "s1");
    assert!(failed
        .error
        .as_deref()
        .unwrap()
        .contains("Operation not permitted"));
    assert_eq!(out.not_attempted, vec!["s2".to_string()]);
    assert!(!m
        .files
        .contains_key("/etc/systemd/system.conf.d/90-fabrik-memlock.conf"));
}

#[test]
fn steps_that_need_a_drain_wait_for_the_flag_and_values_already_set_are_left() {
    let mut plan = three_steps();
    let mtu = fabrik_fix::Step {
        id: "s3".into(),
        node: "n".into(),
        rules: vec!["FAB-MTU-001".into()],
        change: Change::Mtu {
            netdev: "eth2".into(),
            mtu: 9000,
        },
        setting: "MTU of eth2".into(),
        previous: Some("1500".into()),
        target: "9000".into(),
        risk: fabrik_doctor::remedy::Risk::NeedsDrain,
        takes: fabrik_doctor::remedy::Takes::Now,
        then: None,
        sources: &[],
    };
    plan.steps.push(mtu);
    let mut m = machine();
    let out = apply(&plan, "n", false, 7, &mut m, &mut |_| Ok(())).unwrap();
    assert_eq!(out.skipped[0].0, "s3");
    assert_eq!(m.values["/sys/class/net/eth2/mtu"], "1500");
    let out = apply(&plan, "n", true, 7, &mut m, &mut |_| Ok(())).unwrap();
    assert_eq!(m.values["/sys/class/net/eth2/mtu"], "9000");
    let s3 = out.record.steps.iter().find(|d| d.id == "s3").unwrap();
    assert_eq!(
        (s3.previous.as_deref(), s3.after.as_deref()),
        (Some("1500"), Some("9000"))
    );
    // Again: everything is in place, nothing runs.
    let before = m.ran.len();
    let again = apply(&plan, "n", true, 8, &mut m, &mut |_| Ok(())).unwrap();
    assert!(
        again
            .record
            .steps
            .iter()
            .all(|d| d.status == Status::AlreadySet),
        "{:?}",
        again.record.steps
    );
    assert_eq!(m.ran.len(), before);
    // Undo of the MTU puts 1500 back with the same command.
    let u = undo(out.record, &mut m);
    assert!(u.failed.is_empty());
    assert_eq!(m.values["/sys/class/net/eth2/mtu"], "1500");
}
