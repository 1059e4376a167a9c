//! A real single-host Slurm cluster for tests: Debian's `munged`, `slurmctld` and `slurmd`
//! started in the foreground with a private configuration, state directories, munge socket and
//! loopback ports, so that nothing of a Slurm installed on the machine is touched. Everything is
//! stopped on `Drop`, which also runs when a test panics.
//!
//! ```no_run
//! # fn main() -> Result<(), fabrik_testbed::TestbedError> {
//! use std::time::Duration;
//! if let Some(why) = fabrik_testbed::slurm::skip_reason() {
//!     eprintln!("skipping: {why}");
//!     return Ok(());
//! }
//! let slurm = fabrik_testbed::slurm::Slurm::builder()
//!     .health_check("/usr/local/sbin/check", Duration::from_secs(2))
//!     .start()?;
//! let node = slurm.show_node()?;
//! assert!(node.contains("State="));
//! # Ok(())
//! # }
//! ```

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::tools::find;
use crate::{free_port, TestbedError};

/// The programs a cluster needs, all from Debian's `slurmctld`, `slurmd`, `slurm-client` and
/// `munge` packages.
const PROGRAMS: [&str; 4] = ["munged", "slurmctld", "slurmd", "scontrol"];

/// How long the daemons get to come up and register the node.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Why a Slurm cluster cannot be started here, or `None` when it can.
pub fn skip_reason() -> Option<String> {
    let uid = crate::effective_uid();
    if uid != Some(0) {
        return Some(format!(
            "a test Slurm cluster runs its daemons as root; running as uid {}",
            uid.unwrap_or(u32::MAX)
        ));
    }
    let missing: Vec<&str> = PROGRAMS
        .iter()
        .copied()
        .filter(|p| find(p).is_none())
        .collect();
    if missing.is_empty() {
        None
    } else {
        Some(format!(
            "Slurm is not installed ({} missing; Debian packages slurmctld slurmd slurm-client munge)",
            missing.join(", ")
        ))
    }
}

/// Settings of a [`Slurm`] cluster.
#[derive(Debug, Clone, Default)]
pub struct Builder {
    health_check: Option<(PathBuf, Duration)>,
    prolog: Option<PathBuf>,
    epilog: Option<PathBuf>,
}

impl Builder {
    /// Runs `program` as the node's HealthCheckProgram every `interval` (and when slurmd starts).
    pub fn health_check(mut self, program: impl Into<PathBuf>, interval: Duration) -> Self {
        self.health_check = Some((program.into(), interval));
        self
    }

    /// Runs `program` as the node's Prolog before every job (a failure drains the node and
    /// requeues the job).
    pub fn prolog(mut self, program: impl Into<PathBuf>) -> Self {
        self.prolog = Some(program.into());
        self
    }

    /// Runs `program` as the node's Epilog after every job.
    pub fn epilog(mut self, program: impl Into<PathBuf>) -> Self {
        self.epilog = Some(program.into());
        self
    }

    /// Starts munged, slurmctld and slurmd and waits until the node is registered.
    pub fn start(self) -> Result<Slurm, TestbedError> {
        if let Some(why) = skip_reason() {
            return Err(TestbedError::Config(why));
        }
        let dir = std::env::temp_dir().join(format!("fab-slurm-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for sub in ["state", "spool", "log"] {
            std::fs::create_dir_all(dir.join(sub)).map_err(|e| io_error("creating", &dir, e))?;
        }
        let node = short_hostname()?;
        let mut slurm = Slurm {
            dir,
            node,
            children: vec![],
        };
        slurm.start_munge()?;
        let config = slurm.config(&self)?;
        std::fs::write(slurm.conf(), config).map_err(|e| io_error("writing", slurm.conf(), e))?;
        let ctld = slurm.daemon("slurmctld", &["-D", "-i"])?;
        slurm.children.push(ctld);
        slurm.wait_for("slurmctld to answer", |s| s.scontrol(&["ping"]).is_ok())?;
        let slurmd = slurm.daemon("slurmd", &["-D"])?;
        slurm.children.push(slurmd);
        slurm.wait_for("the node to register", |s| {
            s.show_node()
                .map(|n| !n.contains("State=UNKNOWN") && !n.contains("NOT_RESPONDING"))
                .unwrap_or(false)
        })?;
        Ok(slurm)
    }
}

/// A running single-node cluster; its node is this machine under its short host name.
#[derive(Debug)]
pub struct Slurm {
    dir: PathBuf,
    node: String,
    children: Vec<Child>,
}

impl Slurm {
    /// A cluster with the default settings (no health check).
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// The node's name in Slurm.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The path of slurm.conf, for `SLURM_CONF` in programs that call Slurm's commands.
    pub fn conf(&self) -> PathBuf {
        self.dir.join("slurm.conf")
    }

    /// `scontrol show node` of the node.
    pub fn show_node(&self) -> Result<String, TestbedError> {
        self.scontrol(&["show", "node", &self.node])
    }

    /// Runs `scontrol ARGS` against this cluster; its stdout, or an error with its stderr.
    pub fn scontrol(&self, args: &[&str]) -> Result<String, TestbedError> {
        let out = Command::new(find("scontrol").unwrap_or_else(|| "scontrol".into()))
            .args(args)
            .env("SLURM_CONF", self.conf())
            .stdin(Stdio::null())
            .output()
            .map_err(|e| TestbedError::Command {
                command: format!("scontrol {}", args.join(" ")),
                detail: e.to_string(),
            })?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(TestbedError::Command {
                command: format!("scontrol {}", args.join(" ")),
                detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            })
        }
    }

    /// Polls `ok` every 250 ms until it holds or `timeout` passes; the error names `what` and
    /// ends with the daemons' last log lines.
    pub fn wait_until(
        &self,
        what: &str,
        timeout: Duration,
        mut ok: impl FnMut(&Self) -> bool,
    ) -> Result<(), TestbedError> {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if ok(self) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        Err(TestbedError::Command {
            command: format!("waiting {} s for {what}", timeout.as_secs()),
            detail: self.log_tail(),
        })
    }

    fn wait_for(&self, what: &str, ok: impl FnMut(&Self) -> bool) -> Result<(), TestbedError> {
        self.wait_until(what, START_TIMEOUT, ok)
    }

    /// The last lines of every daemon's log, for error messages.
    pub fn log_tail(&self) -> String {
        let mut out = String::new();
        for name in ["munged.log", "slurmctld.log", "slurmd.log"] {
            let text = std::fs::read_to_string(self.dir.join("log").join(name)).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            out.push_str(&format!("\n--- {name}\n"));
            out.push_str(&lines[lines.len().saturating_sub(8)..].join("\n"));
        }
        out
    }

    fn start_munge(&mut self) -> Result<(), TestbedError> {
        let key = self.dir.join("munge.key");
        let mut bytes = vec![0u8; 1024];
        let mut urandom = std::fs::File::open("/dev/urandom")
            .map_err(|e| io_error("opening", "/dev/urandom", e))?;
        std::io::Read::read_exact(&mut urandom, &mut bytes)
            .map_err(|e| io_error("reading", "/dev/urandom", e))?;
        std::fs::write(&key, &bytes).map_err(|e| io_error("writing", &key, e))?;
        set_mode(&key, 0o400)?;
        set_mode(&self.dir, 0o755)?;
        let socket = self.dir.join("munge.sock");
        let munged = self.daemon(
            "munged",
            &[
                "-F",
                "-f",
                &format!("--socket={}", socket.display()),
                &format!("--key-file={}", key.display()),
                &format!("--pid-file={}", self.dir.join("munged.pid").display()),
                &format!("--log-file={}", self.dir.join("log/munged.log").display()),
                &format!("--seed-file={}", self.dir.join("munged.seed").display()),
            ],
        )?;
        self.children.push(munged);
        self.wait_for("munged's socket", |s| s.dir.join("munge.sock").exists())
    }

    fn config(&self, b: &Builder) -> Result<String, TestbedError> {
        let (ctld_port, slurmd_port) = (free_port()?, free_port()?);
        let d = self.dir.display();
        let node = &self.node;
        let mut c = format!(
            "ClusterName=fabriktest\n\
             SlurmctldHost={node}(127.0.0.1)\n\
             SlurmctldPort={ctld_port}\n\
             SlurmdPort={slurmd_port}\n\
             AuthType=auth/munge\n\
             CredType=cred/munge\n\
             AuthInfo=socket={d}/munge.sock\n\
             SlurmUser=root\n\
             SlurmdUser=root\n\
             StateSaveLocation={d}/state\n\
             SlurmdSpoolDir={d}/spool\n\
             SlurmctldPidFile={d}/slurmctld.pid\n\
             SlurmdPidFile={d}/slurmd.pid\n\
             SlurmctldLogFile={d}/log/slurmctld.log\n\
             SlurmdLogFile={d}/log/slurmd.log\n\
             ProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\n\
             JobAcctGatherType=jobacct_gather/none\n\
             AccountingStorageType=accounting_storage/none\n\
             SchedulerType=sched/builtin\n\
             SelectType=select/linear\n\
             ReturnToService=2\n\
             NodeName={node} NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN\n\
             PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP\n"
        );
        if let Some((program, interval)) = &b.health_check {
            c.push_str(&format!(
                "HealthCheckProgram={}\nHealthCheckInterval={}\nHealthCheckNodeState=ANY\n",
                program.display(),
                interval.as_secs().max(1)
            ));
        }
        if let Some(p) = &b.prolog {
            c.push_str(&format!("Prolog={}\n", p.display()));
        }
        if let Some(p) = &b.epilog {
            c.push_str(&format!("Epilog={}\n", p.display()));
        }
        Ok(c)
    }

    /// Runs a Slurm client command (`sbatch`, `squeue`...) against this cluster; its stdout.
    pub fn client(&self, program: &str, args: &[&str]) -> Result<String, TestbedError> {
        let out = Command::new(find(program).unwrap_or_else(|| program.into()))
            .args(args)
            .env("SLURM_CONF", self.conf())
            .stdin(Stdio::null())
            .output()
            .map_err(|e| TestbedError::Command {
                command: format!("{program} {}", args.join(" ")),
                detail: e.to_string(),
            })?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(TestbedError::Command {
                command: format!("{program} {}", args.join(" ")),
                detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            })
        }
    }

    fn daemon(&self, program: &str, args: &[&str]) -> Result<Child, TestbedError> {
        let exe = find(program).ok_or_else(|| TestbedError::Command {
            command: program.to_string(),
            detail: "not installed".to_string(),
        })?;
        let log = std::fs::File::create(self.dir.join("log").join(format!("{program}.out")))
            .map_err(|e| io_error("creating a log in", &self.dir, e))?;
        let err = log
            .try_clone()
            .map_err(|e| io_error("creating a log in", &self.dir, e))?;
        Command::new(exe)
            .args(args)
            .env("SLURM_CONF", self.conf())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .map_err(|e| TestbedError::Command {
                command: program.to_string(),
                detail: e.to_string(),
            })
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        // slurmd first, so that slurmctld does not see its node vanish mid-test; munged last.
        // SIGTERM lets slurmctld stop its slurmscriptd helper too; SIGKILL after 5 s.
        for child in self.children.iter_mut().rev() {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn short_hostname() -> Result<String, TestbedError> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map_err(|e| io_error("reading", "/proc/sys/kernel/hostname", e))?;
    let short = name
        .trim()
        .split('.')
        .next()
        .unwrap_or_default()
        .to_string();
    if short.is_empty() {
        return Err(TestbedError::Config("this machine has no host name".into()));
    }
    Ok(short)
}

fn set_mode(path: &Path, mode: u32) -> Result<(), TestbedError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| io_error("setting the mode of", path, e))
}

fn io_error(doing: &str, what: impl AsRef<Path>, e: std::io::Error) -> TestbedError {
    TestbedError::Command {
        command: format!("{doing} {}", what.as_ref().display()),
        detail: e.to_string(),
    }
}
