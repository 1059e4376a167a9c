//! Fault cases on the Soft-RoCE VM (`testbed/softroce/`): one boot runs every case, so the
//! campaign pays for one TCG boot. The VM's script (`testbed/softroce/vm-faults.sh`) injects
//! each fault for real on the VM's `rxe0` or its veth (the port taken down, a memlock limit, a
//! wrong `NCCL_IB_GID_INDEX`, an MTU mismatch between the veth's two ends, run as two hosts) and
//! prints fabrik's JSON; this side judges it as the other targets are judged.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Entity, Rng, Run};
use crate::TestbedError;

fn err(what: &str, e: impl std::fmt::Display) -> TestbedError {
    TestbedError::Command {
        command: what.to_string(),
        detail: e.to_string(),
    }
}

/// Why the VM cannot boot here, or `None` when it can.
pub fn skip_reason() -> Option<String> {
    if crate::require_root().is_err() {
        return Some("needs root (apt-get download, dpkg -x)".into());
    }
    for c in [
        "qemu-system-x86_64",
        "busybox",
        "cpio",
        "ibv_devinfo",
        "ib_write_bw",
    ] {
        if crate::tools::find(c).is_none() {
            return Some(format!("{c} missing (install scripts/apt/test/verbs.txt)"));
        }
    }
    None
}

/// One case as the VM printed it.
#[derive(Debug, Clone, PartialEq)]
pub struct Printed {
    /// The group whose healthy run is its baseline (`doctor`, `env`, `matrix`,
    /// `cluster-doctor`).
    pub group: String,
    /// The class, or `healthy`.
    pub class: String,
    /// Expected culprits as the script writes them (`port:vm:rxe0:1`).
    pub expected: Vec<String>,
    /// Seconds fabrik took, by the VM's clock.
    pub seconds: f64,
    /// fabrik's standard output.
    pub out: String,
}

/// The cases in a console log.
pub fn parse_console(log: &str) -> Vec<Printed> {
    let mut out = Vec::new();
    let mut cur: Option<(Printed, String)> = None;
    for line in log.lines() {
        let line = line.trim_end_matches('\r');
        // The firmware's terminal codes may share the first line with the script's output.
        let line = line.find("FAULT-").map_or(line, |i| &line[i..]);
        if let Some(head) = line.strip_prefix("FAULT-CASE ") {
            let f: Vec<&str> = head.split('|').collect();
            if let [group, class, expected, t0, t1] = f.as_slice() {
                let secs = t1.parse::<f64>().unwrap_or(0.0) - t0.parse::<f64>().unwrap_or(0.0);
                cur = Some((
                    Printed {
                        group: group.to_string(),
                        class: class.to_string(),
                        expected: expected.split_whitespace().map(str::to_string).collect(),
                        seconds: secs.max(0.0),
                        out: String::new(),
                    },
                    String::new(),
                ));
            }
        } else if let Some(b) = line.strip_prefix("FAULT-B64 ") {
            if let Some((_, acc)) = cur.as_mut() {
                acc.push_str(b.trim());
            }
        } else if line == "FAULT-END" {
            if let Some((mut p, acc)) = cur.take() {
                p.out = decode_base64(&acc)
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default();
                out.push(p);
            }
        }
    }
    out
}

/// Standard base64 (what busybox `base64` writes); `None` on anything else. Hand-written: a
/// dozen lines, for the one place the campaign reads it.
pub fn decode_base64(s: &str) -> Option<Vec<u8>> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        })
    };
    let clean: Vec<u8> = s.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    if clean.len() % 4 != 0 {
        return None;
    }
    let mut out = Vec::with_capacity(clean.len() / 4 * 3);
    for q in clean.chunks(4) {
        let pad = q.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 {
            return None;
        }
        let mut n = 0u32;
        for &c in &q[..4 - pad] {
            n = (n << 6) | val(c)?;
        }
        n <<= 6 * pad as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

fn entity(spec: &str) -> Entity {
    let parts: Vec<&str> = spec.splitn(3, ':').collect();
    match parts.as_slice() {
        ["host", h] => Entity::Host(h.to_string()),
        ["link", a, b] => Entity::Link(a.to_string(), b.to_string()),
        ["port", h, p] => Entity::Port(h.to_string(), p.to_string()),
        _ => Entity::Fabric,
    }
}

/// (rule, subject) of a single-node doctor report's warnings and errors.
fn node_keys(report: &Value) -> Vec<(String, String)> {
    report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| matches!(f["severity"].as_str(), Some("warning" | "error")))
        .filter_map(|f| {
            Some((
                f["rule"].as_str()?.to_string(),
                f["subject"].as_str()?.to_string(),
            ))
        })
        .collect()
}

/// Judges the printed cases. A single node's doctor report always holds the VM's own findings
/// (its 1500-byte MTU, its virtual interfaces): the first healthy run of a group is the
/// baseline, and every later run of the group, healthy ones included, is judged against it. A
/// run across the two hosts is judged on its cross-node findings when healthy, and against its
/// group's healthy run when faulty.
pub fn judge(cases: &[Printed]) -> Vec<Run> {
    let mut base_node: std::collections::BTreeMap<&str, BTreeSet<(String, String)>> =
        Default::default();
    let mut base_cluster: BTreeSet<(String, String)> = BTreeSet::new();
    for c in cases
        .iter()
        .filter(|c| c.class == "healthy" && c.group == "cluster-doctor")
    {
        let v: Value = serde_json::from_str(&c.out).unwrap_or(Value::Null);
        base_cluster.extend(
            super::output::finding_keys(&v)
                .into_iter()
                .map(|(r, _, rest)| (r, rest)),
        );
    }
    let mut runs = Vec::new();
    for c in cases {
        let v: Value = serde_json::from_str(&c.out).unwrap_or(Value::Null);
        let healthy = c.class == "healthy";
        let mut note = None;
        let mut named: Vec<Entity> = match c.group.as_str() {
            "doctor" | "env" => {
                let keys = node_keys(&v);
                match base_node.get(c.group.as_str()) {
                    None if healthy => {
                        base_node.insert(c.group.as_str(), keys.into_iter().collect());
                        note = Some("the group's baseline".to_string());
                        Vec::new()
                    }
                    base => keys
                        .into_iter()
                        .filter(|k| base.is_none_or(|b| !b.contains(k)))
                        .map(|(_, s)| {
                            if s.rsplit_once(':')
                                .is_some_and(|(_, p)| p.parse::<u32>().is_ok())
                            {
                                Entity::Port("vm".into(), s)
                            } else {
                                Entity::Host("vm".into())
                            }
                        })
                        .collect(),
                }
            }
            "matrix" => super::output::named_by_matrix(&c.out, ""),
            _ => super::output::finding_keys(&v)
                .into_iter()
                .filter(|(r, _, rest)| {
                    if healthy {
                        r.starts_with("FAB-X-") || r == "FAB-MTU-002" || r == "FAB-PORT-005"
                    } else {
                        !base_cluster.contains(&(r.clone(), rest.clone()))
                    }
                })
                .map(|(_, h, _)| Entity::Host(h))
                .collect(),
        };
        named.sort();
        named.dedup();
        if c.out.trim().is_empty() {
            note = Some("fabrik printed nothing".to_string());
        }
        runs.push(Run {
            target: "vm",
            class: c.class.clone(),
            detail: format!("Soft-RoCE VM, {}", c.group),
            expected: c.expected.iter().map(|e| entity(e)).collect(),
            named,
            seconds: c.seconds,
            note,
            pending: false,
        });
    }
    runs
}

/// Boots the VM once with the campaign's script and judges what it printed. `repo` is the
/// workspace root (for `testbed/softroce`), `fabrik` the binary to put in the VM (a release
/// build: the VM emulates every instruction).
pub fn campaign(
    fabrik: &Path,
    repo: &Path,
    rng: &mut Rng,
    progress: &mut dyn FnMut(&Run),
) -> Result<Vec<Run>, TestbedError> {
    if let Some(why) = skip_reason() {
        return Err(err("the Soft-RoCE VM", why));
    }
    let here = repo.join("testbed/softroce");
    let cache = std::env::var_os("SOFTROCE_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo.join("testbed/cache"));
    let st = Command::new(here.join("build.sh"))
        .arg(fabrik)
        .env("SOFTROCE_SCRIPTS", here.join("vm-faults.sh"))
        .env("SOFTROCE_CACHE", &cache)
        .stdout(Stdio::null())
        .status()
        .map_err(|e| err("testbed/softroce/build.sh", e))?;
    if !st.success() {
        return Err(err("testbed/softroce/build.sh", st));
    }
    let ver = std::fs::read_to_string(cache.join("kernel-version"))
        .map_err(|e| err("reading testbed/cache/kernel-version", e))?;
    let ver = ver.trim();
    let gid = [0u32, 2, 3, 5, 9][rng.usize(0..5)];
    let memlock = [64u32, 8192, 65536][rng.usize(0..3)];
    let mtu = [4200u32, 9000, 1400, 1280][rng.usize(0..4)];
    let log = cache.join("faults-console.txt");
    let console = std::fs::File::create(&log).map_err(|e| err("creating the console log", e))?;
    let t0 = Instant::now();
    let mut child = Command::new("qemu-system-x86_64")
        .args(["-accel", "tcg", "-m", "1024", "-smp", "2"])
        .arg("-kernel")
        .arg(cache.join(format!("kern/boot/vmlinuz-{ver}")))
        .arg("-initrd")
        .arg(cache.join("initrd.gz"))
        .args(["-nographic", "-no-reboot", "-append"])
        .arg(format!(
            "console=ttyS0 quiet panic=-1 fab.script=vm-faults.sh fab.gid={gid} fab.memlock={memlock} fab.mtu={mtu}"
        ))
        .stdin(Stdio::null())
        .stdout(console)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| err("qemu-system-x86_64", e))?;
    let limit = Duration::from_secs(
        std::env::var("FAULTS_VM_TIMEOUT")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(420),
    );
    while t0.elapsed() < limit {
        if matches!(child.try_wait(), Ok(Some(_))) {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = child.kill();
    let _ = child.wait();
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    eprintln!(
        "faults: the VM ran {:.0} s (gid {gid}, memlock {memlock} KiB, MTU {mtu}); console in {}",
        t0.elapsed().as_secs_f64(),
        log.display()
    );
    if !text.contains("FAULT-DONE") {
        let tail: Vec<&str> = text.lines().rev().take(20).collect();
        return Err(err(
            "the Soft-RoCE VM",
            format!(
                "did not finish within {} s; console tail:\n{}",
                limit.as_secs(),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ),
        ));
    }
    let mut runs = judge(&parse_console(&text));
    for r in &mut runs {
        if r.class == "wrong GID index" {
            r.detail = format!("{}, NCCL_IB_GID_INDEX={gid}", r.detail);
        } else if r.class == "memlock limit" {
            r.detail = format!("{}, ulimit -l {memlock}", r.detail);
        } else if r.class.starts_with("MTU mismatch") {
            r.detail = format!("{}, vb MTU {mtu} against va 1500", r.detail);
        }
        progress(r);
    }
    Ok(runs)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn base64_as_busybox_writes_it() {
        assert_eq!(decode_base64("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(decode_base64("aGVsbG8h").unwrap(), b"hello!");
        assert_eq!(decode_base64("aGk=").unwrap(), b"hi");
        assert_eq!(decode_base64("aA==").unwrap(), b"h");
        assert_eq!(decode_base64("").unwrap(), b"");
        assert_eq!(decode_base64("a"), None);
        assert_eq!(decode_base64("a*=="), None);
    }

    #[test]
    fn a_console_log_gives_its_cases_judged_against_their_group() {
        let doc = |findings: &str| format!(r#"{{"findings":[{findings}]}}"#);
        let b64 = |s: &str| {
            // The console splits base64 into lines; this test keeps one.
            let table = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            let mut out = String::new();
            for c in s.as_bytes().chunks(3) {
                let n = (u32::from(c[0]) << 16)
                    | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
                    | u32::from(*c.get(2).unwrap_or(&0));
                for i in 0..4 {
                    if i <= c.len() {
                        out.push(table[((n >> (18 - 6 * i)) & 63) as usize] as char);
                    } else {
                        out.push('=');
                    }
                }
            }
            out
        };
        let mtu = r#"{"rule":"FAB-MTU-001","severity":"warning","subject":"rxe0:1"}"#;
        let down = r#"{"rule":"FAB-PORT-001","severity":"error","subject":"rxe0:1"}"#;
        let log = format!(
            "noise\n\x1bc\x1b[?7l\x1b[2JFAULT-CASE doctor|healthy||10.00|11.50\nFAULT-B64 {}\nFAULT-END\n\
             FAULT-CASE doctor|port down|port:vm:rxe0:1|12.00|13.25\nFAULT-B64 {}\nFAULT-END\nFAULT-DONE\n",
            b64(&doc(mtu)),
            b64(&doc(&format!("{mtu},{down}")))
        );
        let cases = parse_console(&log);
        assert_eq!(cases.len(), 2);
        assert_eq!(cases[1].seconds, 1.25);
        let runs = judge(&cases);
        assert_eq!(runs[0].outcome(), super::super::Outcome::Quiet);
        assert_eq!(
            runs[1].named,
            vec![Entity::Port("vm".into(), "rxe0:1".into())]
        );
        assert_eq!(runs[1].outcome(), super::super::Outcome::Right);
    }
}
