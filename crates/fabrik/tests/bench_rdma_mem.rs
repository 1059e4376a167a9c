//! `fabrik bench p2p --transport rdma --mem cuda|managed` on a machine without a GPU: with no
//! CUDA driver at all, and with the MOCK libcuda.so.1 of testbed/softroce (host memory behind
//! the driver API, no GPU) to reach the driver's own errors. The data path over real verbs with
//! the mock runs in the Soft-RoCE VM (testbed/softroce/vm-tests.sh).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fabrik() -> Command {
    Command::new(assert_cmd::cargo::cargo_bin("fabrik"))
}

fn ld_cache_has(lib: &str) -> bool {
    Command::new("ldconfig")
        .arg("-p")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains(lib))
        .unwrap_or(false)
        || [
            "/usr/lib/x86_64-linux-gnu",
            "/lib/x86_64-linux-gnu",
            "/usr/lib64",
        ]
        .iter()
        .any(|d| Path::new(d).join(lib).exists())
}

fn bench_cuda(lib_dir: Option<&Path>, env: &[(&str, &str)], extra: &[&str]) -> Output {
    let mut c = fabrik();
    c.args([
        "bench",
        "p2p",
        "--transport",
        "rdma",
        "--local",
        "--mem",
        "cuda",
        "--timeout",
        "5",
    ])
    .args(extra);
    if let Some(d) = lib_dir {
        c.env("LD_LIBRARY_PATH", d);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Whether this test can reach the CUDA step: libibverbs is loaded before it.
fn verbs_here() -> bool {
    if ld_cache_has("libibverbs.so.1") {
        return true;
    }
    fabrik_testbed::skip(
        "the RDMA memory test",
        "no libibverbs.so.1 here (install scripts/apt/test/verbs.txt)",
    );
    false
}

#[test]
fn without_a_cuda_driver_the_error_names_the_library() {
    if !verbs_here() {
        return;
    }
    if ld_cache_has("libcuda.so.1") {
        fabrik_testbed::not_applicable(
            "the missing-driver error",
            "this machine has a CUDA driver",
        );
        return;
    }
    let o = bench_cuda(None, &[], &[]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("libcuda.so.1 not found"), "{e}");
    assert!(e.contains("no NVIDIA driver here"), "{e}");
    assert!(!e.contains("panicked"), "{e}");
}

/// Builds the MOCK driver with the system C compiler, when there is one.
fn mock_driver(dir: &Path) -> Option<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testbed/mocks/mock-libcuda.c");
    let out = dir.join("libcuda.so.1");
    let ok = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        fabrik_testbed::skip(
            "the mock libcuda test",
            "no C compiler to build the mock libcuda.so.1 (scripts/apt/test/base.txt)",
        );
    }
    ok.then_some(out)
}

#[test]
fn mock_driver_errors_reach_the_user() {
    if !verbs_here() {
        return;
    }
    if ld_cache_has("libcuda.so.1") {
        fabrik_testbed::not_applicable(
            "the mock driver's errors",
            "this machine has a CUDA driver",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    if mock_driver(tmp.path()).is_none() {
        return;
    }
    // A driver that finds no GPU.
    let o = bench_cuda(Some(tmp.path()), &[("MOCK_CUDA_INIT_FAIL", "1")], &[]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("GPU memory: cuInit failed"), "{e}");
    assert!(e.contains("no CUDA-capable device"), "{e}");
    assert!(e.contains("CUresult 100"), "{e}");
    // An ordinal beyond the GPUs there are.
    let o = bench_cuda(
        Some(tmp.path()),
        &[("MOCK_CUDA_DEVICES", "2")],
        &["--cuda-device", "3"],
    );
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("cuDeviceGet failed: invalid device ordinal"),
        "{e}"
    );
    // A working (mock) driver gets past the GPU to the RDMA device.
    if std::fs::read_dir("/sys/class/infiniband")
        .map(|mut d| d.next().is_none())
        .unwrap_or(true)
    {
        let o = bench_cuda(Some(tmp.path()), &[], &[]);
        assert!(!o.status.success());
        let e = stderr(&o);
        assert!(e.contains("no RDMA device found"), "{e}");
        assert!(!e.contains("GPU memory"), "{e}");
    }
}
