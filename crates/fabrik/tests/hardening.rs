//! What a hostile user, file or snapshot cannot make the CLI do: write a name that can never be
//! valid into a launch file, read a file named by an option without bound or wait on a FIFO,
//! or leave a snapshot's staging tree behind when it is interrupted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{fabrik, repo};

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_fabrik"))
}

/// Runs the binary under an address-space limit (`ulimit -v`, KiB) with a deadline; returns
/// the exit code (`None` when killed) and stderr.
fn run_bounded(args: &[&str], limit_kib: u64, deadline: Duration) -> (Option<i32>, String) {
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(format!("ulimit -v {limit_kib}; exec \"$@\""))
        .arg("fabrik")
        .arg(bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
            return (status.code(), err);
        }
        if started.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return (None, "timed out".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn mkfifo(p: &Path) {
    assert!(Command::new("mkfifo").arg(p).status().unwrap().success());
}

const NODE: &str = "fixtures/nodes/ib-ndr-8gpu";

/// Every option that names a file read whole, with the command around it.
fn option_files(file: &str) -> Vec<(&'static str, Vec<String>)> {
    let root = repo().join(NODE).display().to_string();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    vec![
        ("report", s(&["report", file, "-o", "/dev/null"])),
        (
            "doctor --expect",
            s(&["doctor", "--root", &root, "--expect", file]),
        ),
        (
            "check --expect",
            s(&["check", "--root", &root, "--expect", file]),
        ),
        (
            "doctor --env-file",
            s(&["doctor", "--root", &root, "--env-file", file]),
        ),
        ("env --node", s(&["env", "--node", file])),
        (
            "launch --node",
            s(&[
                "launch",
                "torchrun",
                "--node",
                file,
                "--command",
                "x",
                "--hosts",
                "a",
            ]),
        ),
        ("parse ibstat", s(&["parse", "ibstat", file])),
    ]
}

#[test]
fn dev_zero_fifos_and_huge_files_are_refused_with_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    // A 2 GiB sparse file: reading it whole took 8.4 GB and 50 s.
    let huge = dir.path().join("huge.toml");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    for (file, kind) in [
        ("/dev/zero", "a character device"),
        (fifo.to_str().unwrap(), "a FIFO"),
        (huge.to_str().unwrap(), "more than the"),
    ] {
        for (what, args) in option_files(file) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let t = Instant::now();
            // 1 GiB of address space: the reads of the report reached 3.8-7.7 GB.
            let (code, err) = run_bounded(&args, 1 << 20, Duration::from_secs(30));
            let took = t.elapsed();
            eprintln!("{what} {file}: exit {code:?} in {took:?}");
            assert_eq!(code, Some(2), "{what} {file}: {err}");
            // `parse` reads command outputs with its own cap (16 MiB) and says so.
            if what == "parse ibstat" && kind == "more than the" {
                assert!(err.contains("larger than"), "{what}: {err}");
            } else {
                assert!(err.contains(kind), "{what} {file}: {err}");
            }
            assert!(took < Duration::from_secs(20), "{what} {file}: {took:?}");
        }
    }
}

#[test]
fn launch_refuses_names_that_can_never_be_valid() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("job.sbatch");
    let base = [
        "launch",
        "slurm",
        "--profile",
        "socket",
        "--nodes",
        "2",
        "--command",
        "train.py",
    ];
    for (flag, value, says) in [
        (
            "--name",
            "x\ntouch PWNED",
            "is not a job name: it contains a newline",
        ),
        (
            "--name",
            "x;touch PWNED",
            "is not a job name: it contains ';'",
        ),
        (
            "--hosts",
            "a,b$(touch PWNED)",
            "is not a host name: it contains '$'",
        ),
        (
            "--hosts",
            "a,-oProxyCommand",
            "is not a host name: it starts with '-'",
        ),
        (
            "--master-addr",
            "h\u{2028}x",
            "is not a host name: it contains the control character U+2028",
        ),
    ] {
        let o = fabrik()
            .args(base)
            .args([flag, value, "-o", out.to_str().unwrap()])
            .current_dir(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flag} {value:?}: {err}");
        assert!(err.contains(flag) && err.contains(says), "{flag}: {err}");
        assert!(!out.exists() && !dir.path().join("PWNED").exists());
    }
}

#[test]
fn a_node_document_or_snapshot_with_a_hostile_device_name_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    // A node document (`--node`) whose RDMA device is named with a newline and YAML.
    let node = fabrik()
        .args([
            "inventory",
            "--root",
            repo()
                .join("fixtures/nodes/roce-dualport")
                .to_str()
                .unwrap(),
        ])
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(node.status.success());
    let evil = String::from_utf8(node.stdout)
        .unwrap()
        .replace("\"mlx5_0\"", "\"mlx5_0\\n---\\nkind: Pod\"");
    let path = dir.path().join("node.json");
    std::fs::write(&path, evil).unwrap();
    for args in [
        vec!["env", "--node", path.to_str().unwrap()],
        vec![
            "launch",
            "k8s",
            "--node",
            path.to_str().unwrap(),
            "--image",
            "img:1",
            "--command",
            "train.py",
        ],
    ] {
        let o = fabrik().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains("RDMA device") && err.contains("a newline"),
            "{err}"
        );
        assert!(o.stdout.is_empty());
    }

    // The same name in a snapshot tarball is refused when it is unpacked.
    let tgz = dir.path().join("evil.tar.gz");
    {
        let gz = flate2_writer(&tgz);
        let mut b = tar::Builder::new(gz);
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_size(5);
        h.set_mode(0o644);
        b.append_data(
            &mut h,
            "snap/sys/class/infiniband/mlx5_0\n---\nkind: Pod/node_type",
            &b"1: CA"[..],
        )
        .unwrap();
        b.into_inner().unwrap().finish().unwrap();
    }
    let o = fabrik()
        .args(["env", "--root", tgz.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("control character U+000A"), "{err}");
}

fn flate2_writer(p: &Path) -> flate2::write::GzEncoder<std::fs::File> {
    flate2::write::GzEncoder::new(
        std::fs::File::create(p).unwrap(),
        flate2::Compression::fast(),
    )
}

/// A root with `n` netdevs (and what a root needs), big enough that a snapshot of it takes a
/// while to write.
fn many_netdevs(root: &Path, n: usize) {
    std::fs::create_dir_all(root.join("proc/sys/kernel")).unwrap();
    std::fs::write(root.join("proc/sys/kernel/hostname"), "many\n").unwrap();
    std::fs::create_dir_all(root.join("sys/class/net")).unwrap();
    for i in 0..n {
        let name = format!("veth{i}");
        let d = root.join("sys/devices/virtual/net").join(&name);
        std::fs::create_dir_all(d.join("statistics")).unwrap();
        for (f, v) in [("type", "1"), ("operstate", "up"), ("mtu", "1500")] {
            std::fs::write(d.join(f), format!("{v}\n")).unwrap();
        }
        std::os::unix::fs::symlink(
            format!("../../devices/virtual/net/{name}"),
            root.join("sys/class/net").join(&name),
        )
        .unwrap();
    }
}

fn entries(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|it| {
            it.flatten()
                .map(|e| {
                    1 + if e.file_type().is_ok_and(|t| t.is_dir()) {
                        entries(&e.path())
                    } else {
                        0
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

#[test]
fn an_interrupted_snapshot_leaves_nothing_behind() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    many_netdevs(&src, 3000);
    const SIGINT: (&str, i32) = ("SIGINT", 2);
    const SIGTERM: (&str, i32) = ("SIGTERM", 15);
    let mut trials = 0;
    let mut interrupted = 0;
    for (signal, delay_ms, tarball) in [
        (SIGTERM, 0, true),
        (SIGINT, 0, true),
        (SIGTERM, 40, true),
        (SIGINT, 120, true),
        (SIGTERM, 300, true),
        (SIGINT, 600, true),
        (SIGTERM, 0, false),
        (SIGINT, 100, false),
    ] {
        let tmp = tempfile::tempdir_in(work.path()).unwrap();
        let out_dir = tempfile::tempdir_in(work.path()).unwrap();
        let output = out_dir
            .path()
            .join(if tarball { "snap.tar.gz" } else { "snap" });
        let mut child = Command::new(bin())
            .args(["snapshot", "--no-commands", "--root"])
            .arg(&src)
            .arg("-o")
            .arg(&output)
            .env("TMPDIR", tmp.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Wait for the staging tree to appear (in TMPDIR for a tarball, beside the output for
        // a directory), then let it grow for the delay.
        let staging_in = if tarball { tmp.path() } else { out_dir.path() };
        let deadline = Instant::now() + Duration::from_secs(120);
        while entries(staging_in) == 0 && child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "no staging tree appeared");
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(Duration::from_millis(delay_ms));
        let seen = entries(staging_in);
        let _ = Command::new("kill")
            .arg(format!("-{}", signal.1))
            .arg(child.id().to_string())
            .status();
        let status = child.wait().unwrap();
        trials += 1;
        use std::os::unix::process::ExitStatusExt;
        let finished = status.success();
        if !finished {
            interrupted += 1;
            assert_eq!(status.signal(), Some(signal.1), "{status:?}");
        }
        let left_tmp = entries(tmp.path());
        let names: Vec<String> = std::fs::read_dir(out_dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        let signal = signal.0;
        eprintln!(
            "{signal} {delay_ms} ms after staging began ({seen} entries staged, {}): {} in TMPDIR, output dir {names:?}",
            if finished { "it finished first" } else { "interrupted" },
            left_tmp
        );
        assert_eq!(left_tmp, 0, "{signal}: the staging tree was left in TMPDIR");
        if finished {
            assert_eq!(names.len(), 1, "{names:?}");
        } else {
            assert!(names.is_empty(), "{signal}: left {names:?}");
        }
    }
    eprintln!("{interrupted} of {trials} snapshots interrupted, none left anything behind");
    assert!(
        interrupted >= trials / 2,
        "too few trials were really interrupted"
    );
}

#[test]
fn a_p2p_server_whose_stderr_nobody_reads_keeps_serving_through_a_flood() {
    use std::io::{BufRead, BufReader, Read, Write};
    // stderr is a pipe this test does not read until the end: 64 KiB fill it.
    let mut server = KillOnDrop(
        Command::new(bin())
            .args([
                "bench",
                "p2p",
                "--server",
                "--bind",
                "127.0.0.1",
                "--port",
                "0",
            ])
            .args(["--token", "right"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let server = &mut server.0;
    let mut out = BufReader::new(server.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let addr = line.trim().rsplit(' ').next().unwrap().to_string();
    // 3,000 rejected connections, each worth a warning line (about 300 KB of stderr).
    let t0 = Instant::now();
    let to: std::net::SocketAddr = addr.parse().unwrap();
    for i in 0..3000 {
        // Bounded: a server that stopped accepting must fail the test, not hang it.
        if t0.elapsed() > Duration::from_secs(90) {
            break;
        }
        if let Ok(mut s) = std::net::TcpStream::connect_timeout(&to, Duration::from_secs(2)) {
            let _ = s.write_all(format!("garbage {i} that is no frame at all\n").as_bytes());
        }
    }
    let flood = t0.elapsed();
    // A real client is still served.
    let t0 = Instant::now();
    let client = Command::new(bin())
        .args([
            "bench", "p2p", "--client", &addr, "--token", "right", "--iters", "20",
        ])
        .args(["--format", "json", "--timeout", "20"])
        .output()
        .unwrap();
    let served = t0.elapsed();
    assert!(
        client.status.success(),
        "{}",
        String::from_utf8_lossy(&client.stderr)
    );
    server.kill().unwrap();
    let mut err = String::new();
    server
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let lines = err.lines().count();
    eprintln!(
        "3,000 rejected connections in {flood:?}; a client served {served:?} later; {lines} lines of stderr"
    );
    assert!(err.contains("rejected control connection"), "{err}");
    assert!(err.contains("lines about peers left out"), "{err}");
    // 20 at once, then 5 a second, and one count a second.
    let secs = (flood + served).as_secs() as usize + 2;
    assert!(
        lines <= 20 + 6 * secs + 10,
        "{lines} lines in {secs} s:\n{err}"
    );
}

/// A child killed when the test ends, however it ends.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
