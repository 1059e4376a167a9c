//! Making a plan's changes on the live node, and undoing them.
//!
//! [`apply`] reads each setting's current value from the node just before changing it, writes
//! the undo [`Record`] through the caller's `save` (the CLI writes it atomically) before every
//! change, so a run that dies leaves a record of what it touched, and stops at the first
//! failure. [`undo`] puts back the recorded values and files, newest first, and goes on past a
//! failure so that as much as possible is restored. The machine is reached through [`System`]:
//! [`Live`] runs the commands and touches files under a root, tests drive a fake.

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fabrik_doctor::remedy::{parse_mstconfig_query, Change, Op, Read, Risk, Takes};
use fabrik_model::{Finding, SCHEMA_VERSION};
use serde::{Deserialize, Serialize};

use crate::{Plan, Step};

/// What `apply` and `undo` need from a machine.
pub trait System {
    /// Runs a program; its standard output, or why it failed (exit status and stderr).
    fn run(&mut self, argv: &[String]) -> Result<String, String>;
    /// The first line of a kernel file (sysfs, procfs), trimmed.
    fn read_value(&mut self, path: &str) -> io::Result<String>;
    /// Whether a path exists.
    fn exists(&mut self, path: &str) -> bool;
    /// A configuration file's text, `None` when it does not exist.
    fn read_file(&mut self, path: &str) -> io::Result<Option<String>>;
    /// Writes a configuration file (directories made as needed), replacing it atomically.
    fn write_file(&mut self, path: &str, text: &str) -> io::Result<()>;
    /// Removes a configuration file.
    fn remove_file(&mut self, path: &str) -> io::Result<()>;
    /// Writes a value and a newline into a kernel file.
    fn write_value(&mut self, path: &str, value: &str) -> io::Result<()>;
    /// Whether a program is installed (on `PATH`).
    fn has_program(&mut self, name: &str) -> bool;
}

/// The machine fabrik runs on: commands run here, files are read and written under `root`
/// (`/`; another directory only for a tree that stands in for one).
pub struct Live {
    root: PathBuf,
    reader: fabrik_probe::confined::Root,
    /// How long one command may run.
    pub timeout: Duration,
}

impl Live {
    /// The machine, with its files under `root`.
    pub fn new(root: &Path) -> io::Result<Live> {
        Ok(Live {
            root: root.to_path_buf(),
            reader: fabrik_probe::confined::Root::open(root)?,
            timeout: Duration::from_secs(120),
        })
    }

    fn path(&self, p: &str) -> PathBuf {
        self.root.join(p.trim_start_matches('/'))
    }
}

/// Kernel files and configuration files are small; anything longer is not what fabrik wrote.
const MAX_FILE: u64 = 1 << 20;

impl System for Live {
    fn run(&mut self, argv: &[String]) -> Result<String, String> {
        let Some((prog, args)) = argv.split_first() else {
            return Err("empty command".into());
        };
        let mut child = Command::new(prog)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {prog}: {e}"))?;
        let start = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if start.elapsed() > self.timeout => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!(
                        "{prog} did not finish in {} s",
                        self.timeout.as_secs()
                    ));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => return Err(format!("waiting for {prog}: {e}")),
            }
        }
        let out = child
            .wait_with_output()
            .map_err(|e| format!("reading {prog}'s output: {e}"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(format!(
                "{prog} failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }

    fn read_value(&mut self, path: &str) -> io::Result<String> {
        let bytes = self.reader.read(path.trim_start_matches('/'), MAX_FILE)?;
        let text = String::from_utf8_lossy(&bytes);
        // One word, or a vector sysctl's numbers (`4096\t131072\t6291456`) with single spaces,
        // as plans write them.
        Ok(text
            .lines()
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "))
    }

    fn exists(&mut self, path: &str) -> bool {
        self.reader.exists(path.trim_start_matches('/'))
    }

    fn read_file(&mut self, path: &str) -> io::Result<Option<String>> {
        match self.reader.read(path.trim_start_matches('/'), MAX_FILE) {
            Ok(b) => Ok(Some(String::from_utf8_lossy(&b).into_owned())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn write_file(&mut self, path: &str, text: &str) -> io::Result<()> {
        let full = self.path(path);
        let dir = full
            .parent()
            .ok_or_else(|| io::Error::other(format!("{path} has no directory")))?;
        std::fs::create_dir_all(dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        io::Write::write_all(&mut tmp, text.as_bytes())?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644))?;
        tmp.persist(&full).map_err(|e| e.error)?;
        Ok(())
    }

    fn remove_file(&mut self, path: &str) -> io::Result<()> {
        match std::fs::remove_file(self.path(path)) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    fn write_value(&mut self, path: &str, value: &str) -> io::Result<()> {
        std::fs::write(self.path(path), format!("{value}\n"))
    }

    fn has_program(&mut self, name: &str) -> bool {
        std::env::var_os("PATH")
            .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(name).is_file()))
    }
}

/// Runs a command that makes a service re-read a file written (`udevadm control --reload`,
/// `systemctl enable`): where the program is not installed or its service is not running (a
/// container, a node booted without systemd) there is nothing to tell, and the file takes
/// effect when the service starts.
fn notify(sys: &mut dyn System, argv: &[String]) -> Result<(), String> {
    let Some(p) = argv.first() else {
        return Ok(());
    };
    let running = fabrik_doctor::remedy::service_marker(p).is_none_or(|m| sys.exists(m));
    if !sys.has_program(p) || !running {
        return Ok(());
    }
    sys.run(argv).map(|_| ())
}

/// The undo record of one `fix --apply` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// [`fabrik_model::SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// `fabrik-fix-undo`, so that another JSON file is not taken for one.
    pub kind: String,
    /// The node, as the plan names it.
    pub node: String,
    /// Seconds since the epoch when the run started.
    pub started_unix: u64,
    /// The steps touched, in the order they were made.
    pub steps: Vec<Done>,
}

/// The record's `kind`.
pub const RECORD_KIND: &str = "fabrik-fix-undo";

/// What a step did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Done {
    /// The plan's step id.
    pub id: String,
    /// The rules it fixes.
    pub rules: Vec<String>,
    /// The change.
    pub change: Change,
    /// The value read just before the change (`None` when it could not be read).
    pub previous: Option<String>,
    /// The value read after it.
    pub after: Option<String>,
    /// Configuration files written, with their text before (`None`: there was none).
    pub files: Vec<FileBefore>,
    /// Where it stands.
    pub status: Status,
    /// Why it failed, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A file and its text before the change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileBefore {
    /// Absolute path.
    pub path: String,
    /// Its text before, `None` when it did not exist.
    pub before: Option<String>,
}

/// Where a step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Started; a run that died here may have changed it.
    Applying,
    /// Changed.
    Applied,
    /// Already at the value, files already in place: nothing changed.
    AlreadySet,
    /// Failed part way: see `error`.
    Failed,
    /// Put back by `--undo`.
    Undone,
    /// `--undo` could not put it back: see `error`.
    UndoFailed,
}

/// The end of an apply run.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// The record (also handed to `save` after every change).
    pub record: Record,
    /// Steps not made, with why (`needs a drained node`).
    pub skipped: Vec<(String, String)>,
    /// Steps not reached because an earlier one failed.
    pub not_attempted: Vec<String>,
}

impl Outcome {
    /// The step that failed, when one did.
    pub fn failed(&self) -> Option<&Done> {
        self.record
            .steps
            .iter()
            .find(|d| d.status == Status::Failed)
    }
}

fn read_now(change: &Change, step: &Step, sys: &mut dyn System) -> Result<Option<String>, String> {
    match change.read() {
        Read::File { path } => sys
            .read_value(&path)
            .map(Some)
            .map_err(|e| format!("reading {path}: {e}")),
        Read::Exists { path } => Ok(Some(if sys.exists(&path) {
            "loaded".into()
        } else {
            "not loaded".into()
        })),
        Read::Mstconfig { device, key } => {
            let out = sys.run(&[
                "mstconfig".into(),
                "-d".into(),
                device.clone(),
                "query".into(),
                key.clone(),
            ])?;
            Ok(parse_mstconfig_query(&out, &key))
        }
        Read::Probed => Ok(step.previous.clone()),
    }
}

fn run_op(op: &Op, sys: &mut dyn System) -> Result<(), String> {
    match op {
        Op::Run { argv } => sys.run(argv).map(|_| ()),
        Op::Write { path, value } => sys
            .write_value(path, value)
            .map_err(|e| format!("writing {value} into {path}: {e}")),
    }
}

/// Makes `node`'s steps of `plan` (those that need a drained node only with `drained`),
/// handing the record to `save` before and after every change. Stops at the first failure.
pub fn apply(
    plan: &Plan,
    node: &str,
    drained: bool,
    started_unix: u64,
    sys: &mut dyn System,
    save: &mut dyn FnMut(&Record) -> io::Result<()>,
) -> io::Result<Outcome> {
    let mut record = Record {
        schema_version: SCHEMA_VERSION,
        kind: RECORD_KIND.into(),
        node: node.into(),
        started_unix,
        steps: vec![],
    };
    let mut skipped = vec![];
    let mut not_attempted = vec![];
    let mut stopped = false;
    for step in plan.steps_of(node) {
        if stopped {
            not_attempted.push(step.id.clone());
            continue;
        }
        if step.risk == Risk::NeedsDrain && !drained {
            skipped.push((
                step.id.clone(),
                "needs a drained node (--drained)".to_string(),
            ));
            continue;
        }
        let mut done = Done {
            id: step.id.clone(),
            rules: step.rules.clone(),
            change: step.change.clone(),
            previous: None,
            after: None,
            files: vec![],
            status: Status::Applying,
            error: None,
        };
        let result = make(step, &mut done, &mut record, sys, save);
        match result {
            Ok(changed) => {
                done.status = if changed {
                    Status::Applied
                } else {
                    Status::AlreadySet
                };
                if let Read::File { path } | Read::Exists { path } = step.change.read() {
                    done.after = match step.change.read() {
                        Read::Exists { .. } => Some(
                            if sys.exists(&path) {
                                "loaded"
                            } else {
                                "not loaded"
                            }
                            .into(),
                        ),
                        _ => sys.read_value(&path).ok(),
                    };
                }
            }
            Err(e) => {
                done.status = Status::Failed;
                done.error = Some(e);
                stopped = true;
            }
        }
        upsert(&mut record, done);
        save(&record)?;
    }
    Ok(Outcome {
        record,
        skipped,
        not_attempted,
    })
}

fn upsert(record: &mut Record, done: Done) {
    match record.steps.iter_mut().find(|d| d.id == done.id) {
        Some(d) => *d = done,
        None => record.steps.push(done),
    }
}

/// One step: true when something changed.
fn make(
    step: &Step,
    done: &mut Done,
    record: &mut Record,
    sys: &mut dyn System,
    save: &mut dyn FnMut(&Record) -> io::Result<()>,
) -> Result<bool, String> {
    step.change.check().map_err(|e| e.to_string())?;
    done.previous = read_now(&step.change, step, sys)?;
    // The record names the step before anything changes.
    upsert(record, done.clone());
    save(record).map_err(|e| format!("writing the undo record: {e}"))?;
    let at_target = match step.change.read() {
        Read::File { .. } | Read::Exists { .. } => {
            done.previous.as_deref() == Some(step.target.as_str())
        }
        Read::Mstconfig { .. } => done.previous.as_deref() == Some(step.target.as_str()),
        Read::Probed => false,
    };
    let mut changed = false;
    if !at_target {
        for op in step.change.apply() {
            run_op(&op, sys)?;
            changed = true;
        }
    }
    for f in step.change.persist() {
        let mut text = f.lines.join("\n");
        text.push('\n');
        let before = sys
            .read_file(&f.path)
            .map_err(|e| format!("reading {}: {e}", f.path))?;
        if before.as_deref() == Some(text.as_str()) {
            continue;
        }
        done.files.push(FileBefore {
            path: f.path.clone(),
            before,
        });
        upsert(record, done.clone());
        save(record).map_err(|e| format!("writing the undo record: {e}"))?;
        sys.write_file(&f.path, &text)
            .map_err(|e| format!("writing {}: {e}", f.path))?;
        changed = true;
        for t in &f.then {
            notify(sys, t)?;
        }
    }
    Ok(changed)
}

/// The end of an undo run: the record with each step's new status.
#[derive(Debug, Clone, Serialize)]
pub struct Undone {
    /// The record, updated.
    pub record: Record,
    /// Steps put back.
    pub restored: Vec<String>,
    /// Steps that could not be put back, with why.
    pub failed: Vec<(String, String)>,
}

/// Puts back what `record` changed, newest step first.
pub fn undo(mut record: Record, sys: &mut dyn System) -> Undone {
    let mut restored = vec![];
    let mut failed = vec![];
    for done in record.steps.iter_mut().rev() {
        if !matches!(
            done.status,
            Status::Applied | Status::Applying | Status::Failed | Status::UndoFailed
        ) {
            continue;
        }
        let mut errors: Vec<String> = vec![];
        match done.previous.as_deref().map(|p| done.change.undo(p)) {
            Some(Some(ops)) => {
                for op in ops {
                    if let Err(e) = run_op(&op, sys) {
                        errors.push(e);
                    }
                }
            }
            Some(None) => errors.push(format!(
                "cannot put back `{}` for {}",
                done.previous.as_deref().unwrap_or(""),
                done.change.setting()
            )),
            None if done.change.apply().is_empty() => {}
            None => errors.push(format!(
                "the value before was not read, {} is left as it is",
                done.change.setting()
            )),
        }
        let persisted = done.change.persist();
        for f in done.files.iter().rev() {
            let spec = persisted.iter().find(|p| p.path == f.path);
            let result = match &f.before {
                Some(text) => sys.write_file(&f.path, text),
                None => {
                    for t in spec.map(|s| s.undo_then.clone()).unwrap_or_default() {
                        if let Err(e) = notify(sys, &t) {
                            errors.push(e);
                        }
                    }
                    sys.remove_file(&f.path)
                }
            };
            if let Err(e) = result {
                errors.push(format!("restoring {}: {e}", f.path));
            }
        }
        if errors.is_empty() {
            done.status = Status::Undone;
            done.error = None;
            restored.push(done.id.clone());
        } else {
            let e = errors.join("; ");
            done.status = Status::UndoFailed;
            done.error = Some(e.clone());
            failed.push((done.id.clone(), e));
        }
    }
    Undone {
        record,
        restored,
        failed,
    }
}

/// What the checks say after a run, per finding of the plan on the node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// Rule id.
    pub rule: String,
    /// Subject on the node.
    pub subject: String,
    /// The outcome.
    pub outcome: Verdicts,
}

/// The outcome for one finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdicts {
    /// The finding is gone.
    Fixed,
    /// Made, and it takes effect later (new sessions, a firmware reset): the finding stays
    /// until then.
    Pending,
    /// Made, and the finding is still there.
    StillPresent,
    /// Not all its steps were made (skipped, failed, or not reached).
    NotApplied,
}

/// Compares the plan's findings on `node` with the findings of the same checks run again
/// (`after`, subjects as the doctor gives them for `names`).
pub fn verdicts(
    plan: &Plan,
    node: &str,
    outcome: &Outcome,
    after: &[Finding],
    many: bool,
) -> Vec<Verdict> {
    let mut out = vec![];
    for item in plan
        .items
        .iter()
        .filter(|i| i.node == node && !i.steps.is_empty())
    {
        let done: Vec<Option<&Done>> = item
            .steps
            .iter()
            .map(|id| outcome.record.steps.iter().find(|d| &d.id == id))
            .collect();
        let made = done
            .iter()
            .all(|d| d.is_some_and(|d| matches!(d.status, Status::Applied | Status::AlreadySet)));
        let subject = if many && item.subject != "node" {
            format!("{}/{}", item.node, item.subject)
        } else if many {
            item.node.clone()
        } else {
            item.subject.clone()
        };
        let present = after.iter().any(|f| {
            f.rule == item.rule
                && (f.subject == subject
                    || (many && f.subject == format!("{}/{}", item.node, item.subject)))
        });
        let later = item.steps.iter().any(|id| {
            plan.steps
                .iter()
                .find(|s| &s.id == id)
                .is_some_and(|s| s.takes != Takes::Now)
        });
        let outcome = match (made, present) {
            (false, _) => Verdicts::NotApplied,
            (true, false) => Verdicts::Fixed,
            (true, true) if later => Verdicts::Pending,
            (true, true) => Verdicts::StillPresent,
        };
        out.push(Verdict {
            rule: item.rule.clone(),
            subject: item.subject.clone(),
            outcome,
        });
    }
    out
}
