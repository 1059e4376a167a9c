//! Fault cases on eight namespace hosts: the fault is made with the tools an operator (or a bad
//! cable) would make it with, inside the host's namespace or its switch port, and fabrik runs as
//! one rank per host (`RANK`/`WORLD_SIZE`/`MASTER_ADDR` as torchrun sets them).
//!
//! - rate: `tc tbf` on the host's link both ways (a slow NIC), an htb class on one path (a bad
//!   cable to one peer);
//! - loss: iptables' `statistic` match dropping a share of what the host receives, sends, or
//!   both, or of what one peer sends it (the kernel here has no `sch_netem`);
//! - delay: `tc netem` where the kernel has it (the case is left out, and said so, where not);
//! - MTU: the host's interface MTU changed (above or below its peers'), or a black hole: every
//!   packet above a size dropped in the host's namespace, with no ICMP;
//! - a firewalled pair: one peer's packets dropped or rejected;
//! - small TCP buffers (`net.ipv4.tcp_rmem`/`tcp_wmem`, per namespace);
//! - a rank that never starts, a rank killed mid-run;
//! - two faults at once on different hosts.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{node_name, Entity, Rng, Run};
use crate::{Testbed, TestbedError};

mod draw;

pub use super::output::{blamed_ranks, culprit_whys, finding_keys, named_by_matrix, FindingKey};
pub use draw::cases;

/// Hosts of the testbed.
pub const HOSTS: usize = 8;

/// How fabrik is run on the hosts.
#[derive(Debug, Clone)]
pub struct Options {
    /// The `fabrik` binary.
    pub fabrik: PathBuf,
    /// `--timeout` of every run (seconds): a pair's waits get an eighth, its transfers a
    /// quarter.
    pub timeout_s: u32,
    /// `--size` of the matrix's transfers.
    pub size: String,
    /// `--iters` of the matrix.
    pub iters: u32,
    /// How long a run may take before the campaign kills it and counts it as hung.
    pub hang_s: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            fabrik: PathBuf::from("fabrik"),
            timeout_s: 16,
            size: "4M".into(),
            iters: 3,
            hang_s: 240,
        }
    }
}

/// One fault on the testbed. Hosts are testbed host numbers (rank = host); each variant's doc
/// says what its fields are.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum Fault {
    /// Host `h`'s link shaped to `rate` both ways.
    HostRate { h: usize, rate: String },
    /// What `a` sends to `b` shaped to `rate`.
    LinkRate { a: usize, b: usize, rate: String },
    /// Host `h` drops `pct` % of what it receives (`input`), sends (`output`), or both.
    HostLoss {
        h: usize,
        pct: f64,
        input: bool,
        output: bool,
    },
    /// Host `b` drops `pct` % of what `a` sends it.
    LinkLoss { a: usize, b: usize, pct: f64 },
    /// Host `h` delays what it sends by `ms` (netem).
    HostDelay { h: usize, ms: u32 },
    /// Host `h`'s interface MTU set to `mtu` (its peers keep 1500).
    MtuMismatch { h: usize, mtu: u32 },
    /// Host `h` drops every packet larger than `limit` bytes, both ways, without ICMP.
    BlackHole { h: usize, limit: u32 },
    /// Host `b` drops (or rejects) everything from `a`.
    Firewall { a: usize, b: usize, reject: bool },
    /// Host `h`'s TCP buffers capped at 8 KiB.
    TcpBuffers { h: usize },
    /// Rank `h` is never started.
    NeverStarts { h: usize },
    /// Rank `h` is killed once `rounds` rounds of the matrix are done.
    Killed { h: usize, rounds: u32 },
}

impl Fault {
    /// What fabrik should name for it.
    pub fn culprit(&self) -> Entity {
        let host = |h: usize| Entity::Host(node_name(h));
        match *self {
            Fault::LinkRate { a, b, .. }
            | Fault::LinkLoss { a, b, .. }
            | Fault::Firewall { a, b, .. } => Entity::Link(node_name(a), node_name(b)),
            Fault::HostRate { h, .. }
            | Fault::HostLoss { h, .. }
            | Fault::HostDelay { h, .. }
            | Fault::MtuMismatch { h, .. }
            | Fault::BlackHole { h, .. }
            | Fault::TcpBuffers { h }
            | Fault::NeverStarts { h }
            | Fault::Killed { h, .. } => host(h),
        }
    }

    /// The fault in words.
    pub fn describe(&self) -> String {
        match self {
            Fault::HostRate { h, rate } => format!("node{h} shaped to {rate} (tbf, both ways)"),
            Fault::LinkRate { a, b, rate } => format!("node{a} -> node{b} shaped to {rate} (htb)"),
            Fault::HostLoss {
                h,
                pct,
                input,
                output,
            } => format!(
                "node{h} drops {pct:.1} % of what it {} (iptables statistic)",
                match (input, output) {
                    (true, true) => "receives and sends",
                    (true, false) => "receives",
                    _ => "sends",
                }
            ),
            Fault::LinkLoss { a, b, pct } => {
                format!("node{b} drops {pct:.1} % of what node{a} sends it")
            }
            Fault::HostDelay { h, ms } => {
                format!("node{h} delays what it sends by {ms} ms (netem)")
            }
            Fault::MtuMismatch { h, mtu } => format!("node{h}'s eth0 MTU {mtu} (peers 1500)"),
            Fault::BlackHole { h, limit } => {
                format!("node{h} drops every packet above {limit} bytes, both ways, no ICMP")
            }
            Fault::Firewall { a, b, reject } => format!(
                "node{b} {} everything from node{a}",
                if *reject { "rejects" } else { "drops" }
            ),
            Fault::TcpBuffers { h } => format!("node{h}'s TCP buffers capped at 8 KiB"),
            Fault::NeverStarts { h } => format!("rank {h} (node{h}) never started"),
            Fault::Killed { h, rounds } => {
                format!("rank {h} (node{h}) killed after {rounds} matrix round(s)")
            }
        }
    }
}

/// A command to run in a namespace to take a fault back.
struct Undo {
    ns: String,
    argv: Vec<String>,
}

/// The eight hosts, and what a run needs.
pub struct Bed {
    tb: Testbed,
    opts: Options,
    dir: tempfile::TempDir,
    port: u16,
    netem: bool,
}

fn cmd_err(what: &str, e: impl std::fmt::Display) -> TestbedError {
    TestbedError::Command {
        command: what.to_string(),
        detail: e.to_string(),
    }
}

/// Runs `argv` in namespace `ns` and fails unless it succeeds.
fn ns_exec(ns: &str, argv: &[&str]) -> Result<(), TestbedError> {
    let out = Command::new("ip")
        .args(["netns", "exec", ns])
        .args(argv)
        .output()
        .map_err(|e| cmd_err(&argv.join(" "), e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(cmd_err(
            &format!("ip netns exec {ns} {}", argv.join(" ")),
            String::from_utf8_lossy(&out.stderr).trim(),
        ))
    }
}

impl Bed {
    /// Builds the testbed. `None` (with the reason) where namespaces or iptables are missing.
    pub fn new(opts: Options) -> Result<Bed, TestbedError> {
        if let Some(why) = crate::skip_reason() {
            return Err(cmd_err("ip netns add", why));
        }
        let tb = Testbed::builder().hosts(HOSTS).build()?;
        let dir = tempfile::tempdir().map_err(|e| cmd_err("mktemp -d", e))?;
        // iptables must work inside the namespaces: every loss, black hole and firewall case
        // depends on it.
        ns_exec(&tb.netns(0), &["iptables", "-S"])?;
        let netem = ns_exec(
            &tb.netns(0),
            &[
                "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms",
            ],
        )
        .is_ok();
        if netem {
            let _ = ns_exec(&tb.netns(0), &["tc", "qdisc", "del", "dev", "lo", "root"]);
        }
        Ok(Bed {
            tb,
            opts,
            dir,
            port: 29600,
            netem,
        })
    }

    /// Whether the kernel has `sch_netem` (delay cases run only then).
    pub fn has_netem(&self) -> bool {
        self.netem
    }

    fn ns(&self, h: usize) -> String {
        self.tb.netns(h)
    }

    fn switch(&self) -> String {
        format!("{}-sw", self.tb.name())
    }

    fn inject(&self, f: &Fault) -> Result<Vec<Undo>, TestbedError> {
        let undo = |ns: String, argv: &[&str]| Undo {
            ns,
            argv: argv.iter().map(|s| s.to_string()).collect(),
        };
        let flush = |h: usize| undo(self.ns(h), &["iptables", "-F"]);
        let pct = |p: f64| format!("{:.4}", p / 100.0);
        Ok(match f {
            Fault::HostRate { h, rate } => {
                crate::shape_link(self.tb.name(), *h, 0, rate)?;
                vec![
                    undo(self.ns(*h), &["tc", "qdisc", "del", "dev", "eth0", "root"]),
                    undo(
                        self.switch(),
                        &["tc", "qdisc", "del", "dev", &format!("h{h}l0"), "root"],
                    ),
                ]
            }
            Fault::LinkRate { a, b, rate } => {
                self.tb.shape_path(*a, 0, *b, rate)?;
                vec![undo(
                    self.ns(*a),
                    &["tc", "qdisc", "del", "dev", "eth0", "root"],
                )]
            }
            Fault::HostLoss {
                h,
                pct: p,
                input,
                output,
            } => {
                // What a bad NIC or cable loses on the way out never reaches the peers, and the
                // sender's stack does not know: dropped at the peers' input, not in the host's
                // OUTPUT chain (a local drop is an error the sender sees at once).
                let from = self.tb.addr(*h, 0).to_string();
                let mut undos = Vec::new();
                let statistic = |ns: &str, extra: &[&str]| {
                    let mut argv = vec!["iptables", "-A", "INPUT"];
                    argv.extend_from_slice(extra);
                    argv.extend_from_slice(&[
                        "-m",
                        "statistic",
                        "--mode",
                        "random",
                        "--probability",
                    ]);
                    let p = pct(*p);
                    argv.push(&p);
                    argv.extend_from_slice(&["-j", "DROP"]);
                    ns_exec(ns, &argv)
                };
                if *input {
                    statistic(&self.ns(*h), &[])?;
                    undos.push(flush(*h));
                }
                if *output {
                    for peer in (0..HOSTS).filter(|x| x != h) {
                        statistic(&self.ns(peer), &["-s", &from])?;
                        undos.push(flush(peer));
                    }
                }
                undos
            }
            Fault::LinkLoss { a, b, pct: p } => {
                let from = self.tb.addr(*a, 0).to_string();
                ns_exec(
                    &self.ns(*b),
                    &[
                        "iptables",
                        "-A",
                        "INPUT",
                        "-s",
                        &from,
                        "-m",
                        "statistic",
                        "--mode",
                        "random",
                        "--probability",
                        &pct(*p),
                        "-j",
                        "DROP",
                    ],
                )?;
                vec![flush(*b)]
            }
            Fault::HostDelay { h, ms } => {
                ns_exec(
                    &self.ns(*h),
                    &[
                        "tc",
                        "qdisc",
                        "replace",
                        "dev",
                        "eth0",
                        "root",
                        "netem",
                        "delay",
                        &format!("{ms}ms"),
                    ],
                )?;
                vec![undo(
                    self.ns(*h),
                    &["tc", "qdisc", "del", "dev", "eth0", "root"],
                )]
            }
            Fault::MtuMismatch { h, mtu } => {
                ns_exec(
                    &self.ns(*h),
                    &["ip", "link", "set", "eth0", "mtu", &mtu.to_string()],
                )?;
                vec![undo(
                    self.ns(*h),
                    &["ip", "link", "set", "eth0", "mtu", "1500"],
                )]
            }
            Fault::BlackHole { h, limit } => {
                let above = format!("{}:65535", limit + 1);
                for chain in ["INPUT", "OUTPUT"] {
                    ns_exec(
                        &self.ns(*h),
                        &[
                            "iptables", "-A", chain, "-m", "length", "--length", &above, "-j",
                            "DROP",
                        ],
                    )?;
                }
                vec![flush(*h)]
            }
            Fault::Firewall { a, b, reject } => {
                let from = self.tb.addr(*a, 0).to_string();
                let target = if *reject { "REJECT" } else { "DROP" };
                ns_exec(
                    &self.ns(*b),
                    &["iptables", "-A", "INPUT", "-s", &from, "-j", target],
                )?;
                vec![flush(*b)]
            }
            Fault::TcpBuffers { h } => {
                let keys = ["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"];
                let mut undos = Vec::new();
                for k in keys {
                    let out = Command::new("ip")
                        .args(["netns", "exec", &self.ns(*h), "sysctl", "-n", k])
                        .output()
                        .map_err(|e| cmd_err("sysctl", e))?;
                    let was = String::from_utf8_lossy(&out.stdout)
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" ");
                    ns_exec(
                        &self.ns(*h),
                        &["sysctl", "-q", "-w", &format!("{k}=4096 8192 8192")],
                    )?;
                    undos.push(Undo {
                        ns: self.ns(*h),
                        argv: vec![
                            "sysctl".into(),
                            "-q".into(),
                            "-w".into(),
                            format!("{k}={was}"),
                        ],
                    });
                }
                undos
            }
            Fault::NeverStarts { .. } | Fault::Killed { .. } => Vec::new(),
        })
    }

    fn undo(undos: Vec<Undo>) {
        for u in undos {
            let argv: Vec<&str> = u.argv.iter().map(String::as_str).collect();
            if let Err(e) = ns_exec(&u.ns, &argv) {
                eprintln!("faults: undoing a fault: {e}");
            }
        }
    }

    /// Starts `fabrik ARGS --name node<h>` as rank h on every host but `skip`.
    fn start(
        &mut self,
        args: &[&str],
        skip: Option<usize>,
    ) -> Result<Vec<Option<Child>>, TestbedError> {
        self.port += 1;
        let mut children = Vec::new();
        for h in 0..HOSTS {
            if Some(h) == skip {
                children.push(None);
                continue;
            }
            let file = |ext: &str| {
                std::fs::File::create(self.dir.path().join(format!("r{h}.{ext}")))
                    .map_err(|e| cmd_err("creating a rank's output file", e))
            };
            let child = self
                .tb
                .command(h, &self.opts.fabrik.to_string_lossy())
                .args(args)
                .args(["--name", &node_name(h)])
                .args(["--timeout", &self.opts.timeout_s.to_string()])
                .env("RANK", h.to_string())
                .env("WORLD_SIZE", HOSTS.to_string())
                .env("LOCAL_RANK", "0")
                .env("MASTER_ADDR", self.tb.addr(0, 0).to_string())
                .env("MASTER_PORT", self.port.to_string())
                .env("FABRIK_TOKEN", "fault-campaign")
                .stdin(Stdio::null())
                .stdout(file("out")?)
                .stderr(file("err")?)
                .spawn()
                .map_err(|e| cmd_err("starting fabrik", e))?;
            children.push(Some(child));
        }
        Ok(children)
    }

    fn read(&self, h: usize, ext: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("r{h}.{ext}"))).unwrap_or_default()
    }

    /// Waits for rank 0 (killing every rank past the hang limit), then for the others a little.
    /// Returns whether rank 0 finished by itself.
    fn wait(&self, children: &mut [Option<Child>], since: Instant) -> bool {
        let limit = since + Duration::from_secs(self.opts.hang_s);
        let mut finished = false;
        if let Some(Some(c)) = children.first_mut() {
            while Instant::now() < limit {
                if matches!(c.try_wait(), Ok(Some(_))) {
                    finished = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let grace = Instant::now() + Duration::from_secs(2 * u64::from(self.opts.timeout_s) + 10);
        for c in children.iter_mut().flatten() {
            while Instant::now() < grace && !matches!(c.try_wait(), Ok(Some(_))) {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        finished
    }

    /// One matrix run with `faults` in place; what rank 0 named, and how long it took.
    pub fn matrix(&mut self, class: &str, faults: &[Fault]) -> Result<Run, TestbedError> {
        let mut undos = Vec::new();
        for f in faults {
            match self.inject(f) {
                Ok(u) => undos.extend(u),
                Err(e) => {
                    Bed::undo(undos);
                    return Err(e);
                }
            }
        }
        let skip = faults.iter().find_map(|f| match f {
            Fault::NeverStarts { h } => Some(*h),
            _ => None,
        });
        let kill = faults.iter().find_map(|f| match f {
            Fault::Killed { h, rounds } => Some((*h, *rounds)),
            _ => None,
        });
        let iters = self.opts.iters.to_string();
        let size = self.opts.size.clone();
        let args = [
            "cluster", "matrix", "--format", "json", "--size", &size, "--iters", &iters,
        ];
        let started = Instant::now();
        let mut children = self.start(&args, skip)?;
        let mut since = started;
        let mut note = None;
        if let Some((h, rounds)) = kill {
            let mark = format!("# progress: matrix {rounds}/");
            let until = Instant::now() + Duration::from_secs(60);
            while !self.read(0, "err").contains(&mark) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
            if let Some(Some(c)) = children.get_mut(h) {
                let _ = c.kill();
            }
            since = Instant::now();
            if !self.read(0, "err").contains(&mark) {
                note = Some(format!("killed before round {rounds} was seen"));
            }
        }
        let finished = self.wait(&mut children, started);
        let seconds = since.elapsed().as_secs_f64();
        Bed::undo(undos);
        let (out, err) = (self.read(0, "out"), self.read(0, "err"));
        let named = if !finished {
            note = Some(format!("no verdict within {} s: killed", self.opts.hang_s));
            Vec::new()
        } else {
            named_by_matrix(&out, &err)
        };
        let whys = culprit_whys(&out);
        if note.is_none() && !whys.is_empty() {
            note = Some(whys.join(" | "));
        }
        Ok(Run {
            target: "netns",
            class: class.to_string(),
            detail: if faults.is_empty() {
                format!("{HOSTS} hosts, `cluster matrix --size {size} --iters {iters}`")
            } else {
                faults
                    .iter()
                    .map(Fault::describe)
                    .collect::<Vec<_>>()
                    .join("; ")
            },
            expected: faults.iter().map(Fault::culprit).collect(),
            named,
            seconds,
            note,
            pending: false,
        })
    }

    /// One `cluster doctor` run with `faults` in place; `baseline` holds the (rule, subject
    /// without its host) pairs of a healthy run, which name nobody.
    pub fn doctor(
        &mut self,
        class: &str,
        faults: &[Fault],
        baseline: &mut Option<Vec<(String, String)>>,
    ) -> Result<Run, TestbedError> {
        let mut undos = Vec::new();
        for f in faults {
            undos.extend(self.inject(f)?);
        }
        let started = Instant::now();
        let mut children = self.start(&["cluster", "doctor", "--format", "json"], None)?;
        let finished = self.wait(&mut children, started);
        let seconds = started.elapsed().as_secs_f64();
        Bed::undo(undos);
        let report: Value = serde_json::from_str(&self.read(0, "out")).unwrap_or(Value::Null);
        let keys = finding_keys(&report);
        let base = baseline.get_or_insert_with(|| {
            if faults.is_empty() {
                keys.iter()
                    .map(|(r, _, rest)| (r.clone(), rest.clone()))
                    .collect()
            } else {
                Vec::new()
            }
        });
        let mut named: Vec<Entity> = keys
            .iter()
            .filter(|(rule, _, rest)| !base.contains(&(rule.clone(), rest.clone())))
            .map(|(_, host, _)| Entity::Host(host.clone()))
            .collect();
        named.sort();
        named.dedup();
        Ok(Run {
            target: "netns",
            class: class.to_string(),
            detail: if faults.is_empty() {
                format!("{HOSTS} hosts, `cluster doctor`")
            } else {
                format!(
                    "{} (`cluster doctor`)",
                    faults
                        .iter()
                        .map(Fault::describe)
                        .collect::<Vec<_>>()
                        .join("; ")
                )
            },
            expected: faults.iter().map(Fault::culprit).collect(),
            named,
            seconds,
            note: (!finished).then(|| "no verdict in time: killed".to_string()),
            pending: false,
        })
    }
}

/// The whole netns part of the campaign: every class `rounds` times, each fault run followed by
/// a healthy run; the MTU mismatch and small TCP buffers are also judged by `cluster doctor`,
/// beside healthy doctor runs. `progress` sees each run as it ends.
pub fn campaign(
    opts: Options,
    rng: &mut Rng,
    rounds: u32,
    progress: &mut dyn FnMut(&Run),
) -> Result<Vec<Run>, TestbedError> {
    let mut bed = Bed::new(opts)?;
    let mut runs = Vec::new();
    let mut keep = |r: Run, runs: &mut Vec<Run>| {
        progress(&r);
        runs.push(r);
    };
    if !bed.has_netem() {
        eprintln!("faults: this kernel has no sch_netem: the host delay class is left out");
    }
    let mut baseline = None;
    keep(bed.doctor("healthy", &[], &mut baseline)?, &mut runs);
    for _ in 0..rounds.max(1) {
        for (class, faults) in cases(rng, bed.has_netem()) {
            keep(bed.matrix(&class, &faults)?, &mut runs);
            // A node setting (an interface's MTU, the TCP buffer limits) is also judged as an
            // operator checks settings: `cluster doctor` over every node.
            if let [Fault::MtuMismatch { .. } | Fault::TcpBuffers { .. }] = faults.as_slice() {
                keep(bed.doctor(&class, &faults, &mut baseline)?, &mut runs);
                keep(bed.doctor("healthy", &[], &mut baseline)?, &mut runs);
            }
            keep(bed.matrix("healthy", &[])?, &mut runs);
        }
    }
    Ok(runs)
}

/// `target/{release,debug}/fabrik` of this workspace, the newer of the two, when one exists.
pub fn built_fabrik() -> Option<PathBuf> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    ["release", "debug"]
        .iter()
        .map(|p| target.join(p).join("fabrik"))
        .filter(|p| p.is_file())
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
}
