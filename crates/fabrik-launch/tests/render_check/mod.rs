//! Checks shared by the hostile-value property test and the renderers' fuzz target: the cases
//! (a hostile value in one field of one renderer), the fake launchers a script runs with, and
//! what a script's run or a manifest's reading must show.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fabrik_launch::{render, JobShape, K8sKind, Kind};
use fabrik_model::Node;
use fabrik_nccl::env::render as env_render;
use fabrik_nccl::{generate, Env, Profile, Request};
use serde_json::Value;

pub const PAYLOADS: &[&str] = &[
    "x\ntouch PWNED",
    "x\npwned",
    "$(pwned)",
    "`pwned`",
    ";pwned",
    "|pwned",
    "&pwned&",
    "&&pwned",
    "||pwned",
    "'$(pwned)'",
    "\"$(pwned)\"",
    "'\"$(pwned)\"'",
    "\\'$(pwned)",
    "${IFS}pwned",
    "$((1+1))",
    "$'\\npwned'",
    "x\r\npwned",
    "x\u{2028}pwned",
    "x\u{85}pwned",
    "\n---\nkind: Pod\nmetadata:\n  name: evil\n",
    "x\nprivileged: true",
    "x\n  privileged: true",
    "x\u{2028}privileged: true",
    "x\u{85}- evil",
    "x\u{2029}---\u{2029}kind: Pod",
    "x # comment",
    "a: b",
    "- item",
    "on",
    "yes",
    "no",
    "0777",
    "1e3",
    "0x1F",
    "~",
    "null",
    "2024-01-02",
    "1:20",
    "<<",
    "=",
    "&anchor",
    "*alias",
    "!!python/object/apply:os.system ['pwned']",
    "!tag",
    "{a: b}",
    "[a]",
    "|",
    ">",
    "%YAML 1.1",
    "@x",
    "HOSTFILE\npwned",
    "HOSTFILE",
    "EOF",
    "\u{1b}]0;title\u{7}",
    "\u{202e}evil",
    "\u{feff}x",
    "\u{9b}31m",
    "$(NODE_RANK)",
    "$$(NODE_RANK)",
    "$(SHELL)",
    "#SBATCH --wrap=pwned",
    "x\n#SBATCH --wrap=pwned",
    "-x",
    "--privileged",
    "-oProxyCommand=pwned",
    "*",
    "~root",
    "{a,b}",
    "!!",
    "\\",
    "'",
    "\"",
    "\\\n",
    "\t",
    " ",
    "",
    "a\0b",
];

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Field {
    Name,
    Host0,
    Host1,
    MasterAddr,
    Image,
    Command,
    RdmaResource,
    InstanceType,
    KeptValue,
    KeptName,
    Device,
    Netdev,
}

pub const FIELDS: [Field; 12] = [
    Field::Name,
    Field::Host0,
    Field::Host1,
    Field::MasterAddr,
    Field::Image,
    Field::Command,
    Field::RdmaResource,
    Field::InstanceType,
    Field::KeptValue,
    Field::KeptName,
    Field::Device,
    Field::Netdev,
];

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Out {
    Launch(Kind, K8sKind),
    EnvShell,
    EnvDotenv,
    EnvDocker,
    EnvK8s,
}

pub const OUTS: [Out; 12] = [
    Out::Launch(Kind::Torchrun, K8sKind::Job),
    Out::Launch(Kind::Docker, K8sKind::Job),
    Out::Launch(Kind::Slurm, K8sKind::Job),
    Out::Launch(Kind::Hostfile, K8sKind::Job),
    Out::Launch(Kind::K8s, K8sKind::Job),
    Out::Launch(Kind::K8s, K8sKind::JobSet),
    Out::Launch(Kind::K8s, K8sKind::PyTorchJob),
    Out::EnvShell,
    Out::EnvDotenv,
    Out::EnvDocker,
    Out::EnvK8s,
    // Slurm with an explicit rendezvous address takes another path (no scontrol).
    Out::Launch(Kind::Slurm, K8sKind::JobSet),
];

pub use fabrik_testbed::fixtures::repo;

pub fn base_shape(k8s_kind: K8sKind) -> JobShape {
    JobShape {
        name: "train".into(),
        nodes: 2,
        gpus_per_node: 4,
        image: Some("nvcr.io/nvidia/pytorch:24.04-py3".into()),
        command: "train.py --data '/data/my set' --note \"it's\"".into(),
        master_port: 29501,
        master_addr: None,
        hosts: vec!["node-a".into(), "node-b".into()],
        k8s_kind,
        rdma_resource: None,
        instance_type: None,
    }
}

/// The RoCE fixture node as its JSON document, to play a hostile `--node` file.
pub fn node_json() -> String {
    let node = fabrik_probe::probe(&repo().join("fixtures/nodes/roce-dualport")).unwrap();
    serde_json::to_string(&node).unwrap()
}

pub fn node_with(json: &str, from: &str, to: &str) -> Node {
    let quoted = serde_json::to_string(to).unwrap();
    let text = json.replace(&format!("\"{from}\""), &quoted);
    serde_json::from_str(&text).unwrap()
}

/// The case: the environment and the shape with `value` in `field`, or `None` when the
/// environment itself refuses (generate may reject a node).
pub fn case(field: Field, value: &str, out: Out, i: usize, json: &str) -> Option<(Env, JobShape)> {
    let k8s_kind = match out {
        Out::Launch(Kind::K8s, k) => k,
        _ => K8sKind::Job,
    };
    let mut shape = base_shape(k8s_kind);
    if out == Out::Launch(Kind::Slurm, K8sKind::JobSet) {
        shape.master_addr = Some("node-a".into());
    }
    let mut existing = BTreeMap::new();
    let mut keep_env = false;
    let mut node = node_with(json, "none-such", "none-such");
    match field {
        Field::Name => shape.name = value.into(),
        Field::Host0 => shape.hosts[0] = value.into(),
        Field::Host1 => shape.hosts[1] = value.into(),
        Field::MasterAddr => shape.master_addr = Some(value.into()),
        Field::Image => shape.image = Some(value.into()),
        Field::Command => {
            shape.command = if i % 2 == 0 {
                value.into()
            } else {
                match shlex::try_quote(value) {
                    Ok(q) => format!("train.py {q} --x"),
                    Err(_) => format!("train.py {value}"),
                }
            }
        }
        Field::RdmaResource => shape.rdma_resource = Some(value.into()),
        Field::InstanceType => shape.instance_type = Some(value.into()),
        Field::KeptValue => {
            existing.insert("NCCL_DEBUG".to_string(), value.to_string());
            keep_env = true;
        }
        Field::KeptName => {
            existing.insert(format!("NCCL_{value}"), "1".to_string());
            keep_env = true;
        }
        Field::Device => node = node_with(json, "mlx5_0", value),
        Field::Netdev => node = node_with(json, "ens1f0np0", value),
    }
    // Every other case takes the TCPX profile, whose receive-datapath sidecar is written into
    // the docker, slurm and Kubernetes outputs.
    let profile = if i % 2 == 1 {
        Profile::GcpA3Tcpx
    } else {
        Profile::Auto
    };
    let env = generate(&Request {
        profile,
        node: Some(&node),
        existing: &existing,
        keep_env,
    })
    .ok()?;
    Some((env, shape))
}

pub fn rendered(out: Out, env: &Env, shape: &JobShape) -> Option<String> {
    match out {
        Out::Launch(kind, _) => render(kind, env, shape).ok(),
        Out::EnvShell => env_render::shell(env).ok(),
        Out::EnvDotenv => env_render::dotenv(env).ok(),
        Out::EnvDocker => env_render::docker_flags(env)
            .ok()
            .map(|f| format!("#!/bin/bash\nset -euo pipefail\ndocker run --rm {f} img:1 true\n")),
        Out::EnvK8s => env_render::k8s_env(env).ok(),
    }
}

pub const RECORDER: &str = r#"#!/bin/bash
{
  printf '%s\0' CALL "$(basename "$0")" "$#" "$@"
  env -0
  printf 'END\0'
} >> "$OUT"
"#;

pub const SRUN: &str = r#"#!/bin/bash
while [ "$1" != "bash" ]; do shift; done
shift; shift
for id in 0 1; do SLURM_NODEID=$id bash -c "$1"; done
"#;

pub const SCONTROL: &str = "#!/bin/bash\nprintf 'node-a\\nnode-b\\n'\n";

pub const PWNED: &str = "#!/bin/sh\necho \"pwned $*\" >> \"$PWNED_LOG\"\n";

pub struct Bin {
    dir: tempfile::TempDir,
}

impl Bin {
    pub fn new() -> Bin {
        let dir = tempfile::tempdir().unwrap();
        for (name, body) in [
            ("torchrun", RECORDER),
            ("docker", RECORDER),
            ("mpirun", RECORDER),
            ("srun", SRUN),
            ("scontrol", SCONTROL),
            ("pwned", PWNED),
        ] {
            let p = dir.path().join(name);
            std::fs::write(&p, body).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        Bin { dir }
    }
}

/// One launcher call as the recorder saw it.
#[derive(Debug)]
pub struct Call {
    pub program: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
}

pub fn parse_calls(bytes: &[u8]) -> Vec<Call> {
    let fields: Vec<String> = bytes
        .split(|b| *b == 0)
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect();
    let mut calls = Vec::new();
    let mut i = 0;
    while i + 2 < fields.len() && fields[i] == "CALL" {
        let program = fields[i + 1].clone();
        let n: usize = fields[i + 2].parse().unwrap();
        let args = fields[i + 3..i + 3 + n].to_vec();
        i += 3 + n;
        let mut env = BTreeMap::new();
        while i < fields.len() && fields[i] != "END" {
            if let Some((k, v)) = fields[i].split_once('=') {
                env.insert(k.to_string(), v.to_string());
            }
            i += 1;
        }
        i += 1;
        calls.push(Call { program, args, env });
    }
    calls
}

/// What running a script showed.
pub struct Ran {
    pub ok: bool,
    pub stderr: String,
    pub calls: Vec<Call>,
    /// Anything that ran that should not have: the `pwned` log, files made besides the
    /// script's own.
    pub executed: Vec<String>,
    pub hostfile: Option<String>,
    /// `env -0` after sourcing, for `fabrik env`'s shell form.
    pub sourced: BTreeMap<String, String>,
}

pub fn run_script(bin: &Bin, text: &str, source_only: bool) -> Ran {
    let work = tempfile::tempdir().unwrap();
    let script = work.path().join("job.sh");
    std::fs::write(&script, text).unwrap();
    let out = work.path().join("calls.bin");
    let log = bin
        .dir
        .path()
        .join(format!("pwned-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let path = format!(
        "{}:{}",
        bin.dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("bash");
    if source_only {
        cmd.args(["-c", "set -e; . ./job.sh; env -0 > \"$OUT\""]);
    } else {
        cmd.arg("job.sh");
    }
    cmd.current_dir(work.path())
        .env("PATH", path)
        .env("OUT", &out)
        .env("PWNED_LOG", &log)
        .env("NODE_RANK", "1")
        .env("SLURM_JOB_NODELIST", "node-[a-b]")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, _) in std::env::vars() {
        if k.starts_with("NCCL_") || k.starts_with("MASTER_") {
            cmd.env_remove(k);
        }
    }
    let mut child = cmd.spawn().unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut stderr);
    }
    let mut executed = Vec::new();
    if let Ok(t) = std::fs::read_to_string(&log) {
        executed.push(format!("the pwned command ran: {t}"));
    }
    let expected: BTreeSet<&str> = ["job.sh", "calls.bin", "hostfile"].into();
    for e in std::fs::read_dir(work.path()).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if !expected.contains(name.as_str()) {
            executed.push(format!("a file appeared: {name:?}"));
        }
    }
    let bytes = std::fs::read(&out).unwrap_or_default();
    let (calls, sourced) = if source_only {
        let env = bytes
            .split(|b| *b == 0)
            .filter_map(|f| {
                let f = String::from_utf8_lossy(f).into_owned();
                f.split_once('=')
                    .map(|(k, v)| (k.to_string(), v.to_string()))
            })
            .collect();
        (Vec::new(), env)
    } else {
        (parse_calls(&bytes), BTreeMap::new())
    };
    Ran {
        ok: status.is_some_and(|s| s.success()),
        stderr,
        calls,
        executed,
        hostfile: std::fs::read_to_string(work.path().join("hostfile")).ok(),
        sourced,
    }
}

/// Why a script's run does not carry the values exactly, if it does not.
pub fn check_script(out: Out, env: &Env, shape: &JobShape, ran: &Ran) -> Result<(), String> {
    if !ran.ok {
        return Err(format!("the script failed: {}", ran.stderr));
    }
    let words = shlex::split(&shape.command).unwrap_or_default();
    let env_matches = |seen: &BTreeMap<String, String>| -> Result<(), String> {
        for v in &env.vars {
            if seen.get(&v.name) != Some(&v.value) {
                return Err(format!(
                    "{} arrived as {:?}, not {:?}",
                    v.name,
                    seen.get(&v.name),
                    v.value
                ));
            }
        }
        Ok(())
    };
    let tail_is_command = |args: &[String]| -> Result<(), String> {
        if args.len() < words.len() || args[args.len() - words.len()..] != words[..] {
            return Err(format!("arguments {args:?} do not end with {words:?}"));
        }
        Ok(())
    };
    match out {
        Out::EnvShell => env_matches(&ran.sourced),
        Out::EnvDocker => {
            let call = ran.calls.first().ok_or("docker never ran")?;
            for v in &env.vars {
                let pair = format!("{}={}", v.name, v.value);
                if !call.args.windows(2).any(|w| w[0] == "-e" && w[1] == pair) {
                    return Err(format!("-e {pair:?} missing from {:?}", call.args));
                }
            }
            Ok(())
        }
        Out::Launch(Kind::Hostfile, _) => {
            let want: String = shape
                .hosts
                .iter()
                .map(|h| format!("{h} slots={}\n", shape.gpus_per_node))
                .collect();
            if ran.hostfile.as_deref() != Some(want.as_str()) {
                return Err(format!("hostfile {:?}, not {want:?}", ran.hostfile));
            }
            let call = ran
                .calls
                .iter()
                .find(|c| c.program == "mpirun")
                .ok_or("mpirun never ran")?;
            for v in &env.vars {
                let pair = format!("{}={}", v.name, v.value);
                if !call.args.windows(2).any(|w| w[0] == "-x" && w[1] == pair) {
                    return Err(format!("-x {pair:?} missing from {:?}", call.args));
                }
            }
            tail_is_command(&call.args)
        }
        Out::Launch(kind, _) => {
            let trainers: Vec<&Call> = ran
                .calls
                .iter()
                .filter(|c| c.program == "torchrun" || c.args.iter().any(|a| a == "torchrun"))
                .collect();
            let want = if kind == Kind::Slurm { 2 } else { 1 };
            if trainers.len() != want {
                return Err(format!("{} trainer calls, not {want}", trainers.len()));
            }
            for c in trainers {
                tail_is_command(&c.args)?;
                env_matches(&c.env)?;
            }
            Ok(())
        }
        Out::EnvDotenv | Out::EnvK8s => Ok(()),
    }
}

/// dotenv: one `NAME=VALUE` line per variable in order, every other line a comment.
pub fn check_dotenv(env: &Env, text: &str) -> Result<(), String> {
    let names: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split_once('=').map_or(l, |(k, _)| k))
        .collect();
    let want: Vec<&str> = env.vars.iter().map(|v| v.name.as_str()).collect();
    if names != want {
        return Err(format!("dotenv lines {names:?}, not {want:?}"));
    }
    Ok(())
}

/// The Python with PyYAML: the test tools' venv, else python3 on PATH.
pub fn pyyaml() -> Option<PathBuf> {
    let venv = fabrik_testbed::tools::test_venv().join("bin/python3");
    for py in [venv, PathBuf::from("python3")] {
        let ok = Command::new(&py)
            .args(["-c", "import yaml"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return Some(py);
        }
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must have PyYAML (scripts/setup.sh --tests)"
    );
    eprintln!("skipped: no Python with PyYAML (scripts/setup.sh --tests)");
    None
}

/// Every file's documents as PyYAML (YAML 1.1) reads them, or its error.
pub fn pyyaml_docs(py: &Path, files: &[PathBuf]) -> Vec<Result<Vec<Value>, String>> {
    const SCRIPT: &str = r#"
import json, sys, yaml
def other(o):
    return {"__python__": type(o).__name__, "repr": repr(o)}
for path in sys.argv[1:]:
    try:
        with open(path, encoding="utf-8") as f:
            docs = list(yaml.safe_load_all(f))
        print(json.dumps({"docs": docs}, default=other))
    except Exception as e:
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
"#;
    let mut results = Vec::new();
    for chunk in files.chunks(400) {
        let out = Command::new(py)
            .arg("-c")
            .arg(SCRIPT)
            .args(chunk)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for line in String::from_utf8(out.stdout).unwrap().lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            results.push(match v.get("docs") {
                Some(Value::Array(d)) => Ok(d.clone()),
                _ => Err(v["error"].as_str().unwrap_or("?").to_string()),
            });
        }
    }
    assert_eq!(results.len(), files.len());
    results
}

/// The documents as serde_yaml_ng (a YAML 1.2 reader) reads them.
pub fn yaml12_docs(text: &str) -> Result<Vec<Value>, String> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| {
            let v = <serde_yaml_ng::Value as serde::Deserialize>::deserialize(d)
                .map_err(|e| e.to_string())?;
            serde_json::to_value(v).map_err(|e| e.to_string())
        })
        .collect()
}

/// Same documents, keys and types as the benign rendering. Lists whose length the values
/// decide (the environment, command words) may differ in length, and each of their items must
/// have the shape of one of the benign list's. The one map keyed by a value, a container's
/// resource limits, may hold the RDMA resource asked for besides the benign keys.
pub fn same_shape(a: &Value, b: &Value, path: &str, resource: Option<&str>) -> Result<(), String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let kx: BTreeSet<&str> = x.keys().map(String::as_str).collect();
            let ky: BTreeSet<&str> = y.keys().map(String::as_str).collect();
            let extra: BTreeSet<&str> = kx.difference(&ky).copied().collect();
            let allowed = path.ends_with("/limits")
                && ky.is_subset(&kx)
                && extra.iter().all(|k| Some(*k) == resource);
            if kx != ky && !allowed {
                return Err(format!("{path}: keys {kx:?}, benign {ky:?}"));
            }
            for (k, v) in x {
                if let Some(w) = y.get(k) {
                    same_shape(v, w, &format!("{path}/{k}"), resource)?;
                }
            }
            Ok(())
        }
        (Value::Array(x), Value::Array(y)) => {
            let free = ["/env", "/command", "/args"]
                .iter()
                .any(|s| path.ends_with(s));
            if free {
                for (i, v) in x.iter().enumerate() {
                    let p = format!("{path}/{i}");
                    if !y.is_empty() && !y.iter().any(|w| same_shape(v, w, &p, resource).is_ok()) {
                        return Err(format!("{p}: {v} has the shape of no benign item"));
                    }
                }
                return Ok(());
            }
            if x.len() != y.len() {
                return Err(format!("{path}: {} items, benign {}", x.len(), y.len()));
            }
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                same_shape(v, w, &format!("{path}/{i}"), resource)?;
            }
            Ok(())
        }
        (Value::String(_), Value::String(_))
        | (Value::Number(_), Value::Number(_))
        | (Value::Bool(_), Value::Bool(_))
        | (Value::Null, Value::Null) => Ok(()),
        _ => Err(format!("{path}: {a} where the benign rendering has {b}")),
    }
}

/// Every mapping under `v` that has `key`.
pub fn objects_with<'a>(
    v: &'a Value,
    key: &str,
    out: &mut Vec<&'a serde_json::Map<String, Value>>,
) {
    match v {
        Value::Object(m) => {
            if m.contains_key(key) {
                out.push(m);
            }
            for x in m.values() {
                objects_with(x, key, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| objects_with(x, key, out)),
        _ => {}
    }
}

pub fn literal(s: &str) -> String {
    s.replace('$', "$$")
}

/// The values a manifest must carry unchanged.
pub fn check_manifest(out: Out, env: &Env, shape: &JobShape, docs: &[Value]) -> Result<(), String> {
    let want_env: Vec<(String, String)> = env
        .vars
        .iter()
        .map(|v| (v.name.clone(), literal(&v.value)))
        .collect();
    let has_env = |list: &Value| -> Result<(), String> {
        let list = list.as_array().ok_or("env is not a list")?;
        for (n, v) in &want_env {
            let found = list
                .iter()
                .any(|e| e["name"].as_str() == Some(n) && e["value"].as_str() == Some(v));
            if !found {
                return Err(format!("env {n}={v:?} missing"));
            }
        }
        Ok(())
    };
    if out == Out::EnvK8s {
        return has_env(&docs[0]["env"]);
    }
    let name = docs
        .last()
        .and_then(|d| d["metadata"]["name"].as_str())
        .ok_or("no metadata.name")?;
    if name != shape.name {
        return Err(format!("metadata.name {name:?}, not {:?}", shape.name));
    }
    let words: Vec<String> = shlex::split(&shape.command)
        .unwrap_or_default()
        .iter()
        .map(|w| literal(w))
        .collect();
    let mut containers = Vec::new();
    for d in docs {
        objects_with(d, "env", &mut containers);
    }
    let trainers: Vec<_> = containers
        .into_iter()
        .filter(|c| matches!(c["name"].as_str(), Some("trainer" | "pytorch")))
        .collect();
    if trainers.is_empty() {
        return Err("no trainer container".into());
    }
    for c in trainers {
        has_env(&c["env"])?;
        let cmd: Vec<String> = c["command"]
            .as_array()
            .ok_or("no command")?
            .iter()
            .map(|w| w.as_str().unwrap_or("<not a string>").to_string())
            .collect();
        if cmd.len() < words.len() || cmd[cmd.len() - words.len()..] != words[..] {
            return Err(format!("command {cmd:?} does not end with {words:?}"));
        }
    }
    Ok(())
}

pub fn is_yaml(out: Out) -> bool {
    matches!(out, Out::Launch(Kind::K8s, _) | Out::EnvK8s)
}

/// The resource a shape asks for by name, the one map key a value decides.
pub fn resource_of(shape: &JobShape) -> Option<&str> {
    shape
        .rdma_resource
        .as_deref()
        .map(|r| r.split_once('=').map_or(r, |(n, _)| n).trim())
}

/// A manifest's verdict: YAML 1.1's reading (`docs11`, when PyYAML read it) equals YAML 1.2's,
/// the documents, keys and types are the benign rendering's, and the values are carried.
pub fn check_yaml(
    out: Out,
    env: &Env,
    shape: &JobShape,
    text: &str,
    docs11: Option<Vec<Value>>,
    benign: &[Value],
) -> Result<(), String> {
    let docs12 = yaml12_docs(text)?;
    if let Some(docs11) = &docs11 {
        if *docs11 != docs12 {
            return Err(format!(
                "YAML 1.1 reads {docs11:?}\nYAML 1.2 reads {docs12:?}"
            ));
        }
    }
    if docs12.len() != benign.len() {
        return Err(format!(
            "{} documents, benign {}",
            docs12.len(),
            benign.len()
        ));
    }
    for (d, b) in docs12.iter().zip(benign) {
        same_shape(d, b, "", resource_of(shape))?;
    }
    check_manifest(out, env, shape, &docs12)
}

/// What checking one rendering found: nothing, or that something ran or was mis-read.
pub enum Verdict {
    Held,
    Refused,
    Executed(String),
    Misparsed(String),
}

/// Renders `value` in `field` for `out` and checks what was written: scripts run with the fake
/// launchers, manifests read by a YAML 1.2 reader against `benign` (PyYAML's reading is the
/// caller's, batched).
pub fn verdict(
    bin: &Bin,
    field: Field,
    value: &str,
    out: Out,
    i: usize,
    json: &str,
    benign: &[Value],
) -> Verdict {
    let Some((env, shape)) = case(field, value, out, i, json) else {
        return Verdict::Refused;
    };
    let Some(text) = rendered(out, &env, &shape) else {
        return Verdict::Refused;
    };
    if is_yaml(out) {
        return match check_yaml(out, &env, &shape, &text, None, benign) {
            Ok(()) => Verdict::Held,
            Err(e) => Verdict::Misparsed(format!("{e}\n{text}")),
        };
    }
    if out == Out::EnvDotenv {
        return match check_dotenv(&env, &text) {
            Ok(()) => Verdict::Held,
            Err(e) => Verdict::Misparsed(format!("{e}\n{text}")),
        };
    }
    let ran = run_script(bin, &text, out == Out::EnvShell);
    if !ran.executed.is_empty() {
        return Verdict::Executed(format!("{:?}\n{text}", ran.executed));
    }
    match check_script(out, &env, &shape, &ran) {
        Ok(()) => Verdict::Held,
        Err(e) => Verdict::Misparsed(format!("{e}\n{text}")),
    }
}

/// The benign rendering's documents of a manifest kind (YAML 1.2's reading), for
/// [`check_yaml`] without PyYAML.
pub fn benign_docs(out: Out, i: usize, json: &str) -> Vec<Value> {
    let (env, shape) = case(Field::Name, "train", out, i, json).unwrap();
    yaml12_docs(&rendered(out, &env, &shape).unwrap()).unwrap()
}
