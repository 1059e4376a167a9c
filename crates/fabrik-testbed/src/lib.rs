//! Several hosts on one machine, for tests: each host is a network namespace, and each of its
//! links is a veth pair into a per-link bridge in a "switch" namespace, so link `k` of every
//! host shares subnet `10.77.k.0/24` (as each GCP TCPX data NIC sits in its own VPC, or each rail
//! of a rail-optimised cluster is its own network). Links can be shaped with `tc ... tbf` to
//! play a slow NIC or a bad cable.
//!
//! Everything is torn down on `Drop`, which also runs when a test panics; namespaces left by a
//! process that was killed outright are removed, half an hour later, by the next [`Testbed`] built
//! on the machine.
//! Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN); call [`skip_reason`] first and, when it returns
//! `Some`, skip the test with [`skip()`] (which fails it where `FABRIK_REQUIRE_TESTBEDS=1`).
//! The crate's `fabrik-netns` binary (run by `testbed/netns.sh`) builds the same layout under a
//! chosen name ([`Builder::name`], [`Testbed::keep`]) for people and benchmark scripts, and
//! removes it with [`down`].
//!
//! ```no_run
//! # fn main() -> Result<(), fabrik_testbed::TestbedError> {
//! if let Some(why) = fabrik_testbed::skip_reason() {
//!     fabrik_testbed::skip("this test", &why);
//!     return Ok(());
//! }
//! let tb = fabrik_testbed::Testbed::builder()
//!     .hosts(2)
//!     .links_per_host(4)
//!     .shape(0, "100mbit")
//!     .build()?;
//! let out = tb.exec(0, &["ping", "-c1", &tb.addr(1, 0).to_string()])?;
//! assert!(out.status.success());
//! # Ok(())
//! # }
//! ```
#![warn(missing_docs)]

use std::net::Ipv4Addr;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

pub mod campaign;
pub mod fixtures;
pub mod hostile;
mod rate;
pub mod skip;
pub mod slurm;
pub mod tools;

pub use rate::parse_rate;
pub use skip::{not_applicable, skip};

/// Every namespace this crate creates starts with this, then the creating process id.
pub const PREFIX: &str = "fab-";

/// Why a testbed could not be built or driven.
#[derive(Debug, thiserror::Error)]
pub enum TestbedError {
    /// The process is not root; the uid it runs as.
    #[error("the testbed needs root (network namespaces and veth links); running as uid {0}")]
    NotRoot(u32),
    /// A command (`ip`, `tc`, ...) failed.
    #[error("`{command}` failed: {detail}")]
    Command {
        /// The command line.
        command: String,
        /// What went wrong: its standard error, or why it could not run.
        detail: String,
    },
    /// The builder's settings are out of range.
    #[error("invalid testbed: {0}")]
    Config(String),
}

/// Why testbed tests cannot run here, or `None` when they can. Probes once per process by
/// creating and deleting a namespace, so a root user inside a container without CAP_SYS_ADMIN is
/// told so too.
pub fn skip_reason() -> Option<String> {
    static REASON: OnceLock<Option<String>> = OnceLock::new();
    REASON
        .get_or_init(|| {
            let uid = effective_uid();
            if uid != Some(0) {
                return Some(TestbedError::NotRoot(uid.unwrap_or(u32::MAX)).to_string());
            }
            let probe = format!("{PREFIX}{}-probe", std::process::id());
            if let Err(e) = ip(&["netns", "add", &probe]) {
                return Some(format!("cannot create network namespaces here: {e}"));
            }
            let _ = ip(&["netns", "del", &probe]);
            None
        })
        .clone()
}

/// `Ok` when this process runs as root, which namespaces, veth links and tc need.
pub fn require_root() -> Result<(), TestbedError> {
    match effective_uid() {
        Some(0) => Ok(()),
        uid => Err(TestbedError::NotRoot(uid.unwrap_or(u32::MAX))),
    }
}

fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// A link of one host, for shaping.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Shape {
    host: Option<usize>,
    link: usize,
    rate: String,
}

/// Settings of a [`Testbed`]: hosts, links per host, MTU, shaped links.
#[derive(Debug, Clone)]
pub struct Builder {
    hosts: usize,
    links: usize,
    mtu: Option<u32>,
    shapes: Vec<Shape>,
    name: Option<String>,
}

impl Builder {
    /// Sets the number of hosts (1 to 250).
    pub fn hosts(mut self, n: usize) -> Self {
        self.hosts = n;
        self
    }

    /// Sets the number of links of every host.
    pub fn links_per_host(mut self, n: usize) -> Self {
        self.links = n;
        self
    }

    /// MTU of every link (veth default 1500; GCP's TCPX NICs use 8244).
    pub fn mtu(mut self, mtu: u32) -> Self {
        self.mtu = Some(mtu);
        self
    }

    /// Shapes link `link` of every host to `rate` (tc syntax: `100mbit`, `2gbit`), both ways.
    pub fn shape(mut self, link: usize, rate: &str) -> Self {
        self.shapes.push(Shape {
            host: None,
            link,
            rate: rate.to_string(),
        });
        self
    }

    /// Shapes one host's link to `rate`, both ways: a slow NIC or a bad cable.
    pub fn shape_host(mut self, host: usize, link: usize, rate: &str) -> Self {
        self.shapes.push(Shape {
            host: Some(host),
            link,
            rate: rate.to_string(),
        });
        self
    }

    /// Names the testbed: its namespaces become `NAME-h<h>` and `NAME-sw` (`fabrik-netns up`)
    /// instead of a name that carries this process id. A testbed of that name that is already
    /// there is removed first.
    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.to_string());
        self
    }

    /// Creates the namespaces, links and bridges; undone on any failure.
    pub fn build(self) -> Result<Testbed, TestbedError> {
        if let Some(name) = &self.name {
            // `ip netns` makes a file of each name under /run/netns.
            let ok = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
                && !name.starts_with('.');
            if !ok {
                return Err(TestbedError::Config(format!(
                    "testbed name {name:?} (letters, digits, '-', '_', '.')"
                )));
            }
        }
        if self.hosts == 0 || self.hosts > 250 {
            return Err(TestbedError::Config(format!(
                "{} hosts (1 to 250 fit the address plan)",
                self.hosts
            )));
        }
        if self.links == 0 || self.links > 200 {
            return Err(TestbedError::Config(format!(
                "{} links per host (1 to 200)",
                self.links
            )));
        }
        for s in &self.shapes {
            if s.link >= self.links || s.host.is_some_and(|h| h >= self.hosts) {
                return Err(TestbedError::Config(format!(
                    "shaping host {:?} link {} outside {} hosts x {} links",
                    s.host, s.link, self.hosts, self.links
                )));
            }
            parse_rate(&s.rate).ok_or_else(|| {
                TestbedError::Config(format!("{:?} is not a tc rate (e.g. 100mbit)", s.rate))
            })?;
        }
        if let Some(why) = skip_reason() {
            return Err(match effective_uid() {
                Some(0) => TestbedError::Command {
                    command: "ip netns add".into(),
                    detail: why,
                },
                uid => TestbedError::NotRoot(uid.unwrap_or(u32::MAX)),
            });
        }
        cleanup_stale();
        static SEQ: AtomicUsize = AtomicUsize::new(0);
        let name = match &self.name {
            Some(name) => {
                down(name);
                name.clone()
            }
            None => format!(
                "{PREFIX}{}-{}",
                std::process::id(),
                SEQ.fetch_add(1, Ordering::Relaxed)
            ),
        };
        // The Testbed exists before anything is created, so a failure half-way is torn down
        // by its Drop.
        let tb = Testbed {
            name,
            hosts: self.hosts,
            links: self.links,
        };
        tb.create(&self)?;
        Ok(tb)
    }
}

/// A running testbed. Dropping it kills what runs inside and deletes the namespaces.
#[derive(Debug)]
pub struct Testbed {
    name: String,
    hosts: usize,
    links: usize,
}

impl Testbed {
    /// Two hosts with one link each, unshaped, default MTU.
    pub fn builder() -> Builder {
        Builder {
            hosts: 2,
            links: 1,
            mtu: None,
            shapes: Vec::new(),
            name: None,
        }
    }

    /// The testbed's name: the prefix of its namespaces.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Leaves the namespaces in place when the testbed goes out of scope (`fabrik-netns up`);
    /// [`down`] removes them later. Returns the testbed's name.
    pub fn keep(self) -> String {
        let kept = std::mem::ManuallyDrop::new(self);
        kept.name.clone()
    }

    /// The namespace of host `host` (for `ip netns exec`).
    pub fn netns(&self, host: usize) -> String {
        format!("{}-h{host}", self.name)
    }

    fn switch(&self) -> String {
        format!("{}-sw", self.name)
    }

    /// The number of hosts.
    pub fn hosts(&self) -> usize {
        self.hosts
    }

    /// The number of links of every host.
    pub fn links_per_host(&self) -> usize {
        self.links
    }

    /// The interface name of link `link` inside every host.
    pub fn iface(&self, link: usize) -> String {
        format!("eth{link}")
    }

    /// The address of host `host` on link `link`: `10.77.link.(host+1)`, prefix /24.
    pub fn addr(&self, host: usize, link: usize) -> Ipv4Addr {
        // Every host and link of a built testbed is inside the plan.
        addr(host, link).unwrap_or(Ipv4Addr::UNSPECIFIED)
    }

    /// Slows only what host `host` sends to host `to` on link `link`, to `rate`: an htb class
    /// behind a u32 filter on the host's NIC, the rest of its traffic at full pace. One bad
    /// path, not a bad node. Replaces the NIC's root qdisc (htb and u32, not prio: kernels built
    /// without sch_prio still have them).
    pub fn shape_path(
        &self,
        host: usize,
        link: usize,
        to: usize,
        rate: &str,
    ) -> Result<(), TestbedError> {
        if host >= self.hosts || to >= self.hosts || link >= self.links {
            return Err(TestbedError::Config(format!(
                "path {host} -> {to} on link {link} outside {} hosts x {} links",
                self.hosts, self.links
            )));
        }
        parse_rate(rate)
            .ok_or_else(|| TestbedError::Config(format!("{rate:?} is not a tc rate")))?;
        let (ns, dev) = (self.netns(host), self.iface(link));
        let dst = format!("{}/32", self.addr(to, link));
        let tc = |args: &[&str]| {
            let mut all = vec!["-n", ns.as_str()];
            all.extend_from_slice(args);
            ip_like("tc", &all)
        };
        tc(&[
            "qdisc", "replace", "dev", &dev, "root", "handle", "1:", "htb", "default", "1",
        ])?;
        tc(&[
            "class", "add", "dev", &dev, "parent", "1:", "classid", "1:1", "htb", "rate", "100gbit",
        ])?;
        tc(&[
            "class", "add", "dev", &dev, "parent", "1:", "classid", "1:2", "htb", "rate", rate,
            "ceil", rate,
        ])?;
        tc(&[
            "filter", "add", "dev", &dev, "parent", "1:", "protocol", "ip", "prio", "1", "u32",
            "match", "ip", "dst", &dst, "flowid", "1:2",
        ])
    }

    /// A command that runs `program` inside host `host`'s namespace.
    pub fn command(&self, host: usize, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.netns(host), program]);
        c
    }

    /// Runs `argv` inside host `host` and waits for it.
    pub fn exec(&self, host: usize, argv: &[&str]) -> Result<Output, TestbedError> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| TestbedError::Config("an empty command".into()))?;
        self.command(host, program)
            .args(args)
            .output()
            .map_err(|e| TestbedError::Command {
                command: argv.join(" "),
                detail: e.to_string(),
            })
    }

    /// Starts `argv` inside host `host` with piped stdout and stderr. The testbed kills it on
    /// drop if it still runs.
    pub fn spawn(&self, host: usize, argv: &[&str]) -> Result<Child, TestbedError> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| TestbedError::Config("an empty command".into()))?;
        self.command(host, program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| TestbedError::Command {
                command: argv.join(" "),
                detail: e.to_string(),
            })
    }

    fn create(&self, b: &Builder) -> Result<(), TestbedError> {
        let sw = self.switch();
        ip(&["netns", "add", &sw])?;
        ip(&["-n", &sw, "link", "set", "lo", "up"])?;
        for k in 0..self.links {
            let br = format!("br{k}");
            ip(&["-n", &sw, "link", "add", &br, "type", "bridge"])?;
            ip(&["-n", &sw, "link", "set", &br, "up"])?;
        }
        for h in 0..self.hosts {
            let ns = self.netns(h);
            ip(&["netns", "add", &ns])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
            for k in 0..self.links {
                let eth = self.iface(k);
                let port = format!("h{h}l{k}");
                ip(&[
                    "link", "add", "name", &eth, "netns", &ns, "type", "veth", "peer", "name",
                    &port, "netns", &sw,
                ])?;
                if let Some(mtu) = b.mtu {
                    let m = mtu.to_string();
                    ip(&["-n", &ns, "link", "set", &eth, "mtu", &m])?;
                    ip(&["-n", &sw, "link", "set", &port, "mtu", &m])?;
                }
                ip(&["-n", &sw, "link", "set", &port, "master", &format!("br{k}")])?;
                ip(&["-n", &sw, "link", "set", &port, "up"])?;
                let cidr = format!("{}/24", self.addr(h, k));
                ip(&["-n", &ns, "addr", "add", &cidr, "dev", &eth])?;
                ip(&["-n", &ns, "link", "set", &eth, "up"])?;
            }
        }
        for s in &b.shapes {
            let hosts: Vec<usize> = match s.host {
                Some(h) => vec![h],
                None => (0..self.hosts).collect(),
            };
            for h in hosts {
                shape_link(&self.name, h, s.link, &s.rate)?;
            }
        }
        Ok(())
    }

    fn namespaces(&self) -> Vec<String> {
        let mut v: Vec<String> = (0..self.hosts).map(|h| self.netns(h)).collect();
        v.push(self.switch());
        v
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        for ns in self.namespaces() {
            teardown(&ns);
        }
    }
}

/// A TCP port on 127.0.0.1 that nothing listens on now, for a server a test starts next.
///
/// The port comes from below the kernel's ephemeral range (`ip_local_port_range`): a port from
/// inside it, released and bound again a moment later, is handed out meanwhile to any socket
/// that binds port 0 (a rank's data listener, another test's client), so the later bind fails
/// with "address in use". Below the range only an explicit bind takes it.
pub fn free_port() -> Result<u16, TestbedError> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static CALLS: AtomicU32 = AtomicU32::new(0);
    let io = |doing: &str, e: std::io::Error| TestbedError::Command {
        command: format!("{doing} 127.0.0.1"),
        detail: e.to_string(),
    };
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32768)
        .clamp(2048, 65535);
    // Spread the picks of concurrent test processes and threads over the range below `low`.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mut x = (nanos
        ^ std::process::id().rotate_left(16)
        ^ CALLS
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(0x9e37_79b9))
        | 1;
    let span = low - 1024;
    let mut last = None;
    for _ in 0..64 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let port = 1024 + x % span;
        let Ok(port) = u16::try_from(port) else {
            continue;
        };
        match std::net::TcpListener::bind(("127.0.0.1", port)) {
            Ok(_) => return Ok(port),
            Err(e) => last = Some(e),
        }
    }
    let fallback =
        std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| io("binding", last.unwrap_or(e)))?;
    fallback
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| io("reading the address of", e))
}

/// The address of host `host` on link `link` in every testbed: `10.77.link.(host+1)`, or
/// `None` outside the plan (250 hosts, 200 links).
pub fn addr(host: usize, link: usize) -> Option<Ipv4Addr> {
    (host < 250 && link < 200).then(|| Ipv4Addr::new(10, 77, link as u8, host as u8 + 1))
}

/// Shapes host `host`'s link `link` of the testbed named `name` to `rate` (tc tbf), both ways:
/// the egress of the host's NIC and of the switch port towards it.
pub fn shape_link(name: &str, host: usize, link: usize, rate: &str) -> Result<(), TestbedError> {
    tbf(&format!("{name}-h{host}"), &format!("eth{link}"), rate)?;
    tbf(&format!("{name}-sw"), &format!("h{host}l{link}"), rate)
}

/// The namespaces of every testbed on this machine: names ending in `-h<number>` or `-sw`.
pub fn list() -> Result<Vec<String>, TestbedError> {
    let out = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .map_err(|e| TestbedError::Command {
            command: "ip netns list".into(),
            detail: e.to_string(),
        })?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|ns| testbed_of(ns).is_some())
        .map(str::to_string)
        .collect())
}

/// Kills what runs inside the testbed named `name` and deletes its namespaces, however many
/// hosts it has. Nothing there is not an error.
pub fn down(name: &str) {
    for ns in list().unwrap_or_default() {
        if testbed_of(&ns) == Some(name) {
            teardown(&ns);
        }
    }
}

/// The testbed a namespace belongs to: `NAME` of `NAME-h<number>` or `NAME-sw`.
fn testbed_of(ns: &str) -> Option<&str> {
    if let Some(name) = ns.strip_suffix("-sw") {
        return Some(name);
    }
    let (name, host) = ns.rsplit_once("-h")?;
    (!host.is_empty() && host.bytes().all(|b| b.is_ascii_digit())).then_some(name)
}

/// Kills what still runs in `ns` (processes the tests started there) and deletes it.
fn teardown(ns: &str) {
    if let Ok(out) = Command::new("ip").args(["netns", "pids", ns]).output() {
        for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
            if pid.parse::<u32>().is_ok() {
                let _ = Command::new("kill").args(["-9", pid]).status();
            }
        }
    }
    let _ = Command::new("ip")
        .args(["netns", "del", ns])
        .stderr(Stdio::null())
        .status();
}

/// How old a leftover namespace must be before another process removes it. Test processes in
/// another PID namespace (a sandboxed agent, a container sharing `/run/netns`) cannot see each
/// other's PIDs, so "the owner is gone" alone would delete a live testbed; no test runs this long.
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(30 * 60);

/// Deletes namespaces that a testbed of a process that no longer exists left behind, once they
/// are older than [`STALE_AFTER`]. Only the names are removed; processes are never killed here,
/// only by the testbed that started them.
pub fn cleanup_stale() {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(name) = line.split_whitespace().next() else {
            continue;
        };
        let Some(pid) = owner_pid(name) else {
            continue;
        };
        let owner_alive = std::path::Path::new(&format!("/proc/{pid}")).exists();
        let age = std::fs::metadata(format!("/run/netns/{name}"))
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok());
        if !owner_alive && age.is_some_and(|a| a > STALE_AFTER) {
            let _ = Command::new("ip")
                .args(["netns", "del", name])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// The process id in a testbed namespace name (`fab-<pid>-<n>-h<i>`).
fn owner_pid(name: &str) -> Option<u32> {
    name.strip_prefix(PREFIX)?.split('-').next()?.parse().ok()
}

fn tbf(ns: &str, dev: &str, rate: &str) -> Result<(), TestbedError> {
    let bps = parse_rate(rate)
        .ok_or_else(|| TestbedError::Config(format!("{rate:?} is not a tc rate")))?;
    let burst = rate::burst_bytes(bps).to_string();
    ip_like(
        "tc",
        &[
            "-n", ns, "qdisc", "replace", "dev", dev, "root", "tbf", "rate", rate, "burst", &burst,
            "latency", "100ms",
        ],
    )
}

fn ip(args: &[&str]) -> Result<(), TestbedError> {
    ip_like("ip", args)
}

fn ip_like(program: &str, args: &[&str]) -> Result<(), TestbedError> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| TestbedError::Command {
            command: format!("{program} {}", args.join(" ")),
            detail: e.to_string(),
        })?;
    if out.status.success() {
        return Ok(());
    }
    Err(TestbedError::Command {
        command: format!("{program} {}", args.join(" ")),
        detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_names_carry_the_owner_pid() {
        assert_eq!(owner_pid("fab-1234-0-h3"), Some(1234));
        assert_eq!(owner_pid("fab-1234-7-sw"), Some(1234));
        assert_eq!(owner_pid("other-ns"), None);
        assert_eq!(owner_pid("fab-x-1"), None);
    }

    #[test]
    fn namespaces_belong_to_the_testbed_before_their_suffix() {
        assert_eq!(testbed_of("tb-h0"), Some("tb"));
        assert_eq!(testbed_of("fab-12-0-h17"), Some("fab-12-0"));
        assert_eq!(testbed_of("tb-sw"), Some("tb"));
        assert_eq!(testbed_of("tb-hx"), None);
        assert_eq!(testbed_of("tb-h"), None);
        assert_eq!(testbed_of("other"), None);
    }

    #[test]
    fn addresses_follow_the_plan() {
        assert_eq!(addr(0, 0), Some(Ipv4Addr::new(10, 77, 0, 1)));
        assert_eq!(addr(249, 3), Some(Ipv4Addr::new(10, 77, 3, 250)));
        assert_eq!(addr(250, 0), None);
        assert_eq!(addr(0, 200), None);
    }

    #[test]
    fn bad_names_are_refused_before_touching_the_system() {
        for name in ["", "a/b", "../x", ".hidden", "with space"] {
            let e = Testbed::builder().name(name).build();
            assert!(matches!(e, Err(TestbedError::Config(_))), "{name:?}");
        }
    }

    #[test]
    fn bad_shapes_are_refused_before_touching_the_system() {
        let e = Testbed::builder()
            .hosts(2)
            .links_per_host(1)
            .shape_host(0, 3, "1gbit")
            .build();
        assert!(matches!(e, Err(TestbedError::Config(_))));
        let e = Testbed::builder().shape(0, "fast").build();
        assert!(matches!(e, Err(TestbedError::Config(_))));
        let e = Testbed::builder().hosts(0).build();
        assert!(matches!(e, Err(TestbedError::Config(_))));
    }
}
