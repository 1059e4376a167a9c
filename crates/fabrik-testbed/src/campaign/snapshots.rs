//! Fault cases on copies of the project's node trees (`fixtures/nodes/`: real snapshots and the
//! hand-built trees in the kernel's formats): four copies of one tree make a job of four nodes,
//! and one copy gets one fact changed the way the fault changes it in sysfs or procfs. `fabrik
//! doctor --root ...` over the four then judges the job.
//!
//! What fabrik names is what its warnings and errors add to those of the same four copies
//! unchanged (a tree's own findings, the same on every copy, name nobody).
//!
//! Classes: a port's state, a port's rate or width, the verbs and IB modules gone, a memlock
//! limit, the RoCE v2 GIDs gone, the peer-memory module gone, and across nodes kernel (from the
//! release file or from `/proc/version` alone), NVIDIA driver, HCA firmware, MTU and rate drift.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::Value;

use super::{node_name, Entity, Rng, Run};
use crate::TestbedError;

/// Copies per job.
pub const NODES: usize = 4;

fn io(what: &str, e: impl std::fmt::Display) -> TestbedError {
    TestbedError::Command {
        command: what.to_string(),
        detail: e.to_string(),
    }
}

/// `fixtures/nodes` of this workspace.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/nodes")
}

/// A tree as the kernel lays it out under `root`.
struct Tree {
    root: PathBuf,
}

impl Tree {
    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel.trim_start_matches('/'))
    }

    fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.path(rel)).ok()
    }

    fn write(&self, rel: &str, text: &str) -> Result<(), TestbedError> {
        let p = self.path(rel);
        if let Some(dir) = p.parent() {
            std::fs::create_dir_all(dir).map_err(|e| io(&format!("mkdir {}", dir.display()), e))?;
        }
        std::fs::write(&p, text).map_err(|e| io(&format!("writing {}", p.display()), e))
    }

    fn list(&self, rel: &str) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.path(rel))
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    /// RDMA devices that are hardware (not `rxe`/`siw`).
    fn hardware(&self) -> Vec<String> {
        self.list("sys/class/infiniband")
            .into_iter()
            .filter(|d| !d.starts_with("rxe") && !d.starts_with("siw"))
            .collect()
    }

    /// Hardware devices whose rate and firmware are the operator's: EFA's driver reports one
    /// fixed rate and firmware the cloud manages.
    fn managed(&self) -> Vec<String> {
        self.hardware()
            .into_iter()
            .filter(|d| !d.starts_with("efa"))
            .collect()
    }

    /// `(device, port)` of every ACTIVE hardware port.
    fn active_ports(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for d in self.hardware() {
            for p in self.list(&format!("sys/class/infiniband/{d}/ports")) {
                let state = self.read(&format!("sys/class/infiniband/{d}/ports/{p}/state"));
                if state.is_some_and(|s| s.trim() == "4: ACTIVE") {
                    out.push((d.clone(), p));
                }
            }
        }
        out
    }

    /// The ACTIVE hardware ports whose rate a degraded link changes: InfiniBand and RoCE
    /// (`N Gb/sec (WX SPEED)`), not iWARP, whose rate fabrik leaves to the Ethernet side.
    fn rated_ports(&self) -> Vec<(String, String)> {
        self.active_ports()
            .into_iter()
            .filter(|(d, p)| {
                let rate = self.read(&format!("sys/class/infiniband/{d}/ports/{p}/rate"));
                let node_type = self.read(&format!("sys/class/infiniband/{d}/node_type"));
                self.managed().contains(d)
                    && !node_type.is_some_and(|n| n.contains("RNIC"))
                    && rate.is_some_and(|r| degraded(r.trim(), false).is_some())
            })
            .collect()
    }

    /// Removes a file or a directory tree (nothing there is fine).
    fn remove(&self, rel: &str) -> Result<(), TestbedError> {
        let p = self.path(rel);
        let r = match std::fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(&p),
            Ok(_) => std::fs::remove_file(&p),
            Err(_) => Ok(()),
        };
        r.map_err(|e| io(&format!("rm -r {}", p.display()), e))
    }

    /// Removes a class device (`sys/class/net/ib0`): its directory under `/sys/devices`, which
    /// the class link points at, and the link, as the kernel does when the driver goes.
    fn remove_class_device(&self, class: &str, name: &str) -> Result<(), TestbedError> {
        let link = self.path(&format!("{class}/{name}"));
        if let Ok(target) = std::fs::read_link(&link) {
            if let Some(dir) = link.parent() {
                let real = dir.join(target);
                if real.starts_with(&self.root) && real.is_dir() {
                    std::fs::remove_dir_all(&real)
                        .map_err(|e| io(&format!("rm -r {}", real.display()), e))?;
                }
            }
        }
        self.remove(&format!("{class}/{name}"))
    }

    /// `/proc/modules` without the modules `drop` names.
    fn drop_modules(&self, drop: &[&str]) -> Result<Vec<String>, TestbedError> {
        let text = self.read("proc/modules").unwrap_or_default();
        let mut gone = Vec::new();
        let kept: String = text
            .lines()
            .filter(|l| {
                let name = l.split_whitespace().next().unwrap_or("");
                let d = drop.contains(&name);
                if d {
                    gone.push(name.to_string());
                }
                !d
            })
            .map(|l| format!("{l}\n"))
            .collect();
        self.write("proc/modules", &kept)?;
        Ok(gone)
    }
}

/// A port's rate one step down: fewer lanes (to 1X) or a slower lane speed, as a degraded link
/// trains. `None` for a text that is not `N Gb/sec (WX SPEED)`.
pub fn degraded(rate: &str, fewer_lanes: bool) -> Option<String> {
    const LANES: [(&str, f64); 9] = [
        ("SDR", 2.5),
        ("DDR", 5.0),
        ("QDR", 10.0),
        ("FDR10", 10.0),
        ("FDR", 14.0),
        ("EDR", 25.0),
        ("HDR", 50.0),
        ("NDR", 100.0),
        ("XDR", 200.0),
    ];
    let inner = rate.split_once('(')?.1.trim_end().trim_end_matches(')');
    let (w, speed) = inner.split_once(' ')?;
    let width: u32 = w.trim_end_matches('X').parse().ok()?;
    let at = LANES.iter().position(|(s, _)| *s == speed.trim())?;
    if fewer_lanes && width > 1 {
        let per = LANES[at].1;
        Some(format!("{} Gb/sec (1X {})", fmt_gbps(per), LANES[at].0))
    } else {
        // FDR10 and QDR both print 10 Gb/s a lane: a step down from either, or from FDR onto
        // FDR10, must land below 10.
        let lower = match at {
            0 => return None,
            2 | 3 => 1,
            4 => 2,
            i => i - 1,
        };
        let (s, per) = LANES[lower];
        Some(format!(
            "{} Gb/sec ({width}X {s})",
            fmt_gbps(per * f64::from(width))
        ))
    }
}

fn fmt_gbps(g: f64) -> String {
    if g.fract() == 0.0 {
        format!("{g:.0}")
    } else {
        format!("{g}")
    }
}

/// One snapshot fault: how to change a tree, and what to expect named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// A port taken down (DOWN, with Disabled or Polling).
    PortState,
    /// A port trained at fewer lanes or a slower lane speed.
    PortRate,
    /// The verbs and IB modules gone, the NIC's core driver still loaded.
    MissingModules,
    /// A memlock limit where there was none.
    Memlock,
    /// A RoCE port's RoCE v2 IP GIDs gone (its netdev lost its address).
    Gids,
    /// The peer-memory module gone on a GPU node.
    PeerMemory,
    /// Another kernel on one node (in the release file, or in `/proc/version` alone).
    KernelDrift,
    /// Another NVIDIA driver on one node.
    DriverDrift,
    /// Other HCA firmware on one node.
    FirmwareDrift,
    /// Another MTU on one node's interfaces.
    MtuDrift,
    /// Every port of one node a step slower.
    RateDrift,
}

impl Class {
    /// Every class.
    pub const ALL: [Class; 11] = [
        Class::PortState,
        Class::PortRate,
        Class::MissingModules,
        Class::Memlock,
        Class::Gids,
        Class::PeerMemory,
        Class::KernelDrift,
        Class::DriverDrift,
        Class::FirmwareDrift,
        Class::MtuDrift,
        Class::RateDrift,
    ];

    /// The class's name in the table.
    pub fn name(self) -> &'static str {
        match self {
            Class::PortState => "port state",
            Class::PortRate => "port rate or width",
            Class::MissingModules => "RDMA modules missing",
            Class::Memlock => "memlock limit",
            Class::Gids => "RoCE GIDs gone",
            Class::PeerMemory => "peer memory module missing",
            Class::KernelDrift => "kernel drift",
            Class::DriverDrift => "driver drift",
            Class::FirmwareDrift => "firmware drift",
            Class::MtuDrift => "MTU drift",
            Class::RateDrift => "rate drift",
        }
    }

    /// The rule that names this fault, when it is not in every build: the run is shown, but
    /// counted only once the rule exists.
    pub fn needs(self) -> Option<&'static str> {
        match self {
            Class::MissingModules => Some("FAB-RDMA-005"),
            _ => None,
        }
    }

    /// Whether the class applies to `tree` (it has what the fault takes away or changes).
    fn applies(self, t: &Tree) -> bool {
        let modules = t.read("proc/modules").unwrap_or_default();
        let has = |m: &str| {
            modules
                .lines()
                .any(|l| l.split_whitespace().next() == Some(m))
        };
        match self {
            Class::PortState => !t.active_ports().is_empty(),
            Class::PortRate | Class::RateDrift => !t.rated_ports().is_empty(),
            // A NIC whose RDMA half is its own module (mlx5_ib beside mlx5_core), with its PCI
            // functions in the tree: EFA's one driver is both, and without it the card has none.
            Class::MissingModules => {
                !t.managed().is_empty()
                    && (has("mlx5_ib") || has("mlx4_ib"))
                    && has("ib_uverbs")
                    && !t.list("sys/bus/pci/devices").is_empty()
            }
            Class::Memlock => {
                !t.list("sys/class/infiniband").is_empty()
                    && t.read("proc/self/limits").is_some_and(|l| {
                        l.lines()
                            .any(|x| x.starts_with("Max locked memory") && x.contains("unlimited"))
                    })
            }
            Class::Gids => !roce_v2_ip_gids(t).is_empty(),
            Class::PeerMemory => has("nvidia_peermem") || has("nv_peer_mem"),
            Class::KernelDrift => t.read("proc/sys/kernel/osrelease").is_some(),
            Class::DriverDrift => t.read("proc/driver/nvidia/version").is_some(),
            Class::FirmwareDrift => t.managed().iter().any(|d| {
                t.read(&format!("sys/class/infiniband/{d}/fw_ver"))
                    .is_some()
            }),
            Class::MtuDrift => !data_interfaces(t).is_empty(),
        }
    }

    /// Changes `t` (host `host`) as the fault would; returns what was done and what to expect.
    fn inject(self, t: &Tree, host: &str, rng: &mut Rng) -> Result<(String, Entity), TestbedError> {
        let whole = Entity::Host(host.to_string());
        match self {
            Class::PortState => {
                let ports = t.active_ports();
                let (d, p) = &ports[rng.usize(0..ports.len())];
                let phys = ["3: Disabled", "2: Polling"][rng.usize(0..2)];
                let dir = format!("sys/class/infiniband/{d}/ports/{p}");
                t.write(&format!("{dir}/state"), "1: DOWN\n")?;
                t.write(&format!("{dir}/phys_state"), &format!("{phys}\n"))?;
                Ok((
                    format!("{host} {d}:{p} DOWN / {phys}"),
                    Entity::Port(host.into(), format!("{d}:{p}")),
                ))
            }
            Class::PortRate => {
                let ports = t.rated_ports();
                let (d, p) = &ports[rng.usize(0..ports.len())];
                let file = format!("sys/class/infiniband/{d}/ports/{p}/rate");
                let was = t.read(&file).unwrap_or_default();
                let lanes = rng.bool();
                let now = degraded(was.trim(), lanes)
                    .or_else(|| degraded(was.trim(), !lanes))
                    .ok_or_else(|| io(&file, format!("cannot degrade rate {was:?}")))?;
                t.write(&file, &format!("{now}\n"))?;
                Ok((
                    format!("{host} {d}:{p} rate `{}` -> `{now}`", was.trim()),
                    Entity::Port(host.into(), format!("{d}:{p}")),
                ))
            }
            Class::MissingModules => {
                if rng.bool() {
                    // `ib_uverbs` not loaded: the devices are there, user space cannot open
                    // them (no /dev/infiniband/uverbsN).
                    let gone = t.drop_modules(&["ib_uverbs", "rdma_ucm"])?;
                    for n in t.list("dev/infiniband") {
                        if n.starts_with("uverbs") || n == "rdma_cm" {
                            t.remove(&format!("dev/infiniband/{n}"))?;
                        }
                    }
                    t.remove("sys/class/infiniband_verbs")?;
                    Ok((
                        format!("{host} {} not loaded: no uverbs devices", gone.join(" ")),
                        whole,
                    ))
                } else {
                    // The NIC's RDMA driver (`mlx5_ib`) not loaded: its PCI functions and
                    // Ethernet netdevs stay, its RDMA devices, IPoIB netdevs and uverbs nodes
                    // are gone.
                    let gone = t.drop_modules(&["mlx5_ib", "mlx4_ib", "ib_ipoib"])?;
                    for d in t.managed() {
                        t.remove_class_device("sys/class/infiniband", &d)?;
                    }
                    for i in t.list("sys/class/net") {
                        if t.read(&format!("sys/class/net/{i}/type"))
                            .is_some_and(|ty| ty.trim() == "32")
                        {
                            t.remove_class_device("sys/class/net", &i)?;
                        }
                    }
                    t.remove("dev/infiniband")?;
                    t.remove("sys/class/infiniband_verbs")?;
                    Ok((
                        format!(
                            "{host} {} not loaded: no RDMA devices on its NICs",
                            gone.join(" ")
                        ),
                        whole,
                    ))
                }
            }
            Class::Memlock => {
                let text = t.read("proc/self/limits").unwrap_or_default();
                let kib = [64u64, 8192, 65536][rng.usize(0..3)];
                let bytes = (kib * 1024).to_string();
                let new: String = text
                    .lines()
                    .map(|l| {
                        if l.starts_with("Max locked memory") {
                            format!(
                                "{:<26}{:<21}{:<21}{:<10}\n",
                                "Max locked memory", bytes, bytes, "bytes"
                            )
                        } else {
                            format!("{l}\n")
                        }
                    })
                    .collect();
                t.write("proc/self/limits", &new)?;
                Ok((format!("{host} memlock {kib} KiB"), whole))
            }
            Class::Gids => {
                let gids = roce_v2_ip_gids(t);
                let port = gids[rng.usize(0..gids.len())].0.clone();
                for (p, file) in gids.iter().filter(|(p, _)| *p == port) {
                    let _ = p;
                    t.write(file, "0000:0000:0000:0000:0000:0000:0000:0000\n")?;
                }
                let subject = port.replace("/ports/", ":");
                Ok((
                    format!("{host} {subject}: RoCE v2 IP GIDs gone"),
                    Entity::Port(host.into(), subject),
                ))
            }
            Class::PeerMemory => {
                let gone = t.drop_modules(&["nvidia_peermem", "nv_peer_mem"])?;
                Ok((format!("{host} {} gone", gone.join(" ")), whole))
            }
            Class::KernelDrift => {
                let release = [
                    "5.15.0-91-generic",
                    "6.1.0-13-amd64",
                    "6.8.0-1015-aws",
                    "5.14.0-362.el9.x86_64",
                ];
                let was = t.read("proc/sys/kernel/osrelease").unwrap_or_default();
                let now = release
                    .iter()
                    .copied()
                    .filter(|r| *r != was.trim())
                    .nth(rng.usize(0..3))
                    .unwrap_or("5.4.0-42-generic");
                if rng.bool() {
                    t.write("proc/sys/kernel/osrelease", &format!("{now}\n"))?;
                    Ok((format!("{host} kernel {now} (osrelease)"), whole))
                } else {
                    let p = t.path("proc/sys/kernel/osrelease");
                    std::fs::remove_file(&p).map_err(|e| io(&format!("rm {}", p.display()), e))?;
                    t.write(
                        "proc/version",
                        &format!("Linux version {now} (buildd@lcy02-amd64-045) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0, GNU ld (GNU Binutils for Ubuntu) 2.38) #101-Ubuntu SMP Tue Nov 14 13:30:08 UTC 2023\n"),
                    )?;
                    Ok((format!("{host} kernel {now} in /proc/version only"), whole))
                }
            }
            Class::DriverDrift => {
                let text = t.read("proc/driver/nvidia/version").unwrap_or_default();
                let was = text
                    .split_whitespace()
                    .find(|w| {
                        w.chars().filter(|c| *c == '.').count() == 2
                            && w.starts_with(|c: char| c.is_ascii_digit())
                    })
                    .unwrap_or("")
                    .to_string();
                let now = ["535.129.03", "550.54.15", "525.147.05"]
                    .into_iter()
                    .find(|v| *v != was)
                    .unwrap_or("470.223.02");
                if was.is_empty() {
                    return Err(io("proc/driver/nvidia/version", "no version number"));
                }
                t.write("proc/driver/nvidia/version", &text.replace(&was, now))?;
                Ok((format!("{host} NVIDIA driver {was} -> {now}"), whole))
            }
            Class::FirmwareDrift => {
                let was: Vec<String> = t
                    .managed()
                    .iter()
                    .filter_map(|d| t.read(&format!("sys/class/infiniband/{d}/fw_ver")))
                    .map(|v| v.trim().to_string())
                    .collect();
                let other: Vec<&str> = ["28.37.1014", "22.36.1010", "16.35.2000", "20.39.1002"]
                    .into_iter()
                    .filter(|v| !was.iter().any(|w| w == v))
                    .collect();
                let now = other[rng.usize(0..other.len())];
                for d in t.managed() {
                    let f = format!("sys/class/infiniband/{d}/fw_ver");
                    if t.read(&f).is_some() {
                        t.write(&f, &format!("{now}\n"))?;
                    }
                }
                Ok((format!("{host} HCA firmware {now}"), whole))
            }
            Class::MtuDrift => {
                let ifs = data_interfaces(t);
                let mut done = Vec::new();
                for i in &ifs {
                    let f = format!("sys/class/net/{i}/mtu");
                    let was: u32 = t
                        .read(&f)
                        .and_then(|m| m.trim().parse().ok())
                        .unwrap_or(1500);
                    let now = if was > 1500 { 1500 } else { 9000 };
                    t.write(&f, &format!("{now}\n"))?;
                    done.push(format!("{i} {was} -> {now}"));
                }
                Ok((format!("{host} MTU {}", done.join(", ")), whole))
            }
            Class::RateDrift => {
                let mut done = 0;
                for (d, p) in t.rated_ports() {
                    let file = format!("sys/class/infiniband/{d}/ports/{p}/rate");
                    if let Some(now) = t.read(&file).and_then(|r| degraded(r.trim(), false)) {
                        t.write(&file, &format!("{now}\n"))?;
                        done += 1;
                    }
                }
                Ok((format!("{host} {done} ports a lane speed slower"), whole))
            }
        }
    }
}

/// `(ports/<n> directory as dev/ports/n, gid file)` of every RoCE v2 GID carrying an IPv4
/// address (`::ffff:a.b.c.d`).
fn roce_v2_ip_gids(t: &Tree) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for d in t.list("sys/class/infiniband") {
        for p in t.list(&format!("sys/class/infiniband/{d}/ports")) {
            let dir = format!("sys/class/infiniband/{d}/ports/{p}");
            if t.read(&format!("{dir}/link_layer"))
                .map(|l| l.trim().to_string())
                != Some("Ethernet".into())
            {
                continue;
            }
            for g in t.list(&format!("{dir}/gids")) {
                let ty = t
                    .read(&format!("{dir}/gid_attrs/types/{g}"))
                    .unwrap_or_default();
                let val = t.read(&format!("{dir}/gids/{g}")).unwrap_or_default();
                if ty.trim() == "RoCE v2" && val.starts_with("0000:0000:0000:0000:0000:ffff:") {
                    out.push((format!("{d}/ports/{p}"), format!("{dir}/gids/{g}")));
                }
            }
        }
    }
    out
}

/// Interfaces that carry traffic: up, not loopback or a container bridge.
fn data_interfaces(t: &Tree) -> Vec<String> {
    t.list("sys/class/net")
        .into_iter()
        .filter(|i| i != "lo" && !i.starts_with("docker") && !i.starts_with("virbr"))
        .filter(|i| {
            t.read(&format!("sys/class/net/{i}/operstate"))
                .is_some_and(|s| s.trim() == "up")
        })
        .filter(|i| t.read(&format!("sys/class/net/{i}/mtu")).is_some())
        .collect()
}

/// A job of [`NODES`] copies of one tree, named `node0..node3`.
struct Job {
    dir: tempfile::TempDir,
    fixture: String,
}

impl Job {
    fn new(fixtures: &Path, fixture: &str) -> Result<Job, TestbedError> {
        let dir = tempfile::tempdir().map_err(|e| io("mktemp -d", e))?;
        for i in 0..NODES {
            let to = dir.path().join(node_name(i));
            let st = Command::new("cp")
                .arg("-a")
                .arg(fixtures.join(fixture))
                .arg(&to)
                .status()
                .map_err(|e| io("cp -a", e))?;
            if !st.success() {
                return Err(io("cp -a", format!("{fixture}: {st}")));
            }
            Tree { root: to }.write("proc/sys/kernel/hostname", &format!("{}\n", node_name(i)))?;
        }
        Ok(Job {
            dir,
            fixture: fixture.to_string(),
        })
    }

    fn tree(&self, i: usize) -> Tree {
        Tree {
            root: self.dir.path().join(node_name(i)),
        }
    }

    /// `fabrik doctor` over the copies: the (rule, host, rest of subject) of its warnings and
    /// errors, and the seconds it took.
    fn doctor(&self, fabrik: &Path) -> Result<(Vec<super::output::FindingKey>, f64), TestbedError> {
        let mut c = Command::new(fabrik);
        c.args(["doctor", "--format", "json"]);
        for i in 0..NODES {
            c.arg("--root").arg(self.dir.path().join(node_name(i)));
        }
        let t0 = Instant::now();
        let out = c.output().map_err(|e| io("fabrik doctor", e))?;
        let secs = t0.elapsed().as_secs_f64();
        let report: Value = serde_json::from_slice(&out.stdout).map_err(|e| {
            io(
                "fabrik doctor",
                format!("{e}: {}", String::from_utf8_lossy(&out.stderr).trim()),
            )
        })?;
        Ok((super::output::finding_keys(&report), secs))
    }
}

/// A subject's rest (`mlx5_3:1`) names a port; anything else names the host.
fn entity(host: &str, rest: &str) -> Entity {
    let port = rest
        .rsplit_once(':')
        .is_some_and(|(d, p)| !d.is_empty() && !d.contains('/') && p.parse::<u32>().is_ok());
    if port {
        Entity::Port(host.to_string(), rest.to_string())
    } else {
        Entity::Host(host.to_string())
    }
}

/// The snapshot part of the campaign: every class `rounds` times on a tree it applies to, drawn
/// from `rng`, and every tree once healthy. `rules` are the rule ids the fabrik under test
/// knows (a class whose rule is missing is pending).
pub fn campaign(
    fabrik: &Path,
    fixtures: &Path,
    rules: &BTreeSet<String>,
    rng: &mut Rng,
    rounds: u32,
    progress: &mut dyn FnMut(&Run),
) -> Result<Vec<Run>, TestbedError> {
    let trees: Vec<String> = Tree {
        root: fixtures.to_path_buf(),
    }
    .list("")
    .into_iter()
    .filter(|d| fixtures.join(d).join("sys").is_dir())
    .collect();
    let mut runs = Vec::new();
    let mut baselines: std::collections::BTreeMap<String, BTreeSet<(String, String)>> =
        Default::default();
    let mut keep = |r: Run, runs: &mut Vec<Run>| {
        progress(&r);
        runs.push(r);
    };
    for tree in &trees {
        let job = Job::new(fixtures, tree)?;
        let (keys, secs) = job.doctor(fabrik)?;
        // The tree's own findings, the same on every copy, name nobody: they are the baseline.
        // A healthy job is quiet when it adds none across nodes.
        let base: BTreeSet<(String, String)> = keys
            .iter()
            .map(|(r, _, rest)| (r.clone(), rest.clone()))
            .collect();
        let per_host: BTreeSet<(String, String)> = keys
            .iter()
            .filter(|(r, _, rest)| {
                (0..NODES).all(|i| {
                    keys.iter()
                        .any(|(r2, h2, rest2)| r2 == r && rest2 == rest && *h2 == node_name(i))
                })
            })
            .map(|(r, _, rest)| (r.clone(), rest.clone()))
            .collect();
        let mut named: Vec<Entity> = keys
            .iter()
            .filter(|(r, _, rest)| !per_host.contains(&(r.clone(), rest.clone())))
            .map(|(_, h, rest)| entity(h, rest))
            .collect();
        named.sort();
        named.dedup();
        keep(
            Run {
                target: "snapshot",
                class: "healthy".into(),
                detail: format!("{NODES} copies of {tree}"),
                expected: Vec::new(),
                named,
                seconds: secs,
                note: None,
                pending: false,
            },
            &mut runs,
        );
        baselines.insert(tree.clone(), base);
    }
    for _ in 0..rounds.max(1) {
        for class in Class::ALL {
            let fits: Vec<&String> = trees
                .iter()
                .filter(|t| {
                    class.applies(&Tree {
                        root: fixtures.join(t),
                    })
                })
                .collect();
            if fits.is_empty() {
                continue;
            }
            let tree = fits[rng.usize(0..fits.len())];
            let job = Job::new(fixtures, tree)?;
            let victim = rng.usize(0..NODES);
            let (what, expected) = class.inject(&job.tree(victim), &node_name(victim), rng)?;
            let (keys, secs) = job.doctor(fabrik)?;
            let base = &baselines[tree];
            let mut named: Vec<Entity> = keys
                .iter()
                .filter(|(r, _, rest)| !base.contains(&(r.clone(), rest.clone())))
                .map(|(_, h, rest)| entity(h, rest))
                .collect();
            named.sort();
            named.dedup();
            let pending = class.needs().is_some_and(|id| !rules.contains(id));
            keep(
                Run {
                    target: "snapshot",
                    class: class.name().into(),
                    detail: format!("{} ({NODES} copies of {})", what, job.fixture),
                    expected: vec![expected],
                    named,
                    seconds: secs,
                    note: class
                        .needs()
                        .filter(|_| pending)
                        .map(|id| format!("{id} is not in this build (issue #28)")),
                    pending,
                },
                &mut runs,
            );
        }
    }
    Ok(runs)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn rates_degrade_as_links_train_down() {
        assert_eq!(
            degraded("400 Gb/sec (4X NDR)", true).as_deref(),
            Some("100 Gb/sec (1X NDR)")
        );
        assert_eq!(
            degraded("400 Gb/sec (4X NDR)", false).as_deref(),
            Some("200 Gb/sec (4X HDR)")
        );
        assert_eq!(
            degraded("100 Gb/sec (4X EDR)", false).as_deref(),
            Some("56 Gb/sec (4X FDR)")
        );
        assert_eq!(
            degraded("56 Gb/sec (4X FDR)", false).as_deref(),
            Some("40 Gb/sec (4X QDR)")
        );
        assert_eq!(
            degraded("10 Gb/sec (1X FDR10)", true).as_deref(),
            Some("5 Gb/sec (1X DDR)")
        );
        assert_eq!(degraded("2.5 Gb/sec (1X SDR)", false), None);
        assert_eq!(degraded("10 Gb/sec (4X)", false), None);
    }

    #[test]
    fn subjects_name_ports_or_hosts() {
        assert_eq!(
            entity("node1", "mlx5_3:1"),
            Entity::Port("node1".into(), "mlx5_3:1".into())
        );
        assert_eq!(entity("node1", "node"), Entity::Host("node1".into()));
        assert_eq!(entity("node1", ""), Entity::Host("node1".into()));
        assert_eq!(entity("node1", "eth0"), Entity::Host("node1".into()));
    }
}
