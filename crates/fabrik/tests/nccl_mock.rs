//! `fabrik bench collective --backend nccl` against MOCK libraries: `tests/nccl_mock/*.c` are
//! compiled here into a MOCK `libcuda.so.1` and `libnccl.so.2` whose "GPU memory" is host
//! memory and whose collectives are computed on the CPU (ranks meet in shared memory named by
//! the NCCL unique id). They exercise the real binary's run-time loading, typed entry points,
//! unique-id exchange, buffer layout, verification and error paths; they prove nothing about
//! real GPUs or real NCCL. Skipped (with a message) when no C compiler is available.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

/// (dir with both mocks, dir with only the mock libcuda), or None without a C compiler.
fn mocks() -> Option<&'static (PathBuf, PathBuf)> {
    static DIRS: OnceLock<Option<(PathBuf, PathBuf)>> = OnceLock::new();
    DIRS.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/nccl_mock");
        let root = tempfile::Builder::new()
            .prefix("fabrik-nccl-mock")
            .tempdir()
            .unwrap()
            .keep();
        let (both, cuda_only) = (root.join("both"), root.join("cuda-only"));
        std::fs::create_dir_all(&both).unwrap();
        std::fs::create_dir_all(&cuda_only).unwrap();
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let build = |src_file: &str, out: &Path, libs: &[&str]| -> bool {
            match Command::new(&cc)
                .args(["-shared", "-fPIC", "-O1", "-o"])
                .arg(out)
                .arg(src.join(src_file))
                .args(libs)
                .output()
            {
                Ok(o) if o.status.success() => true,
                Ok(o) => panic!(
                    "the mock {src_file} does not compile:\n{}",
                    String::from_utf8_lossy(&o.stderr)
                ),
                Err(e) => {
                    fabrik_testbed::skip(
                        "the nccl mock tests",
                        &format!("no C compiler ({cc}: {e})"),
                    );
                    false
                }
            }
        };
        // The one mock driver, shared with the Soft-RoCE VM and bench_rdma_mem.rs.
        let ok = build(
            "../../../../testbed/mocks/mock-libcuda.c",
            &both.join("libcuda.so.1"),
            &[],
        ) && build(
            "mock_nccl.c",
            &both.join("libnccl.so.2"),
            &["-lm", "-lpthread", "-lrt"],
        );
        if !ok {
            return None;
        }
        std::fs::copy(both.join("libcuda.so.1"), cuda_only.join("libcuda.so.1")).unwrap();
        Some((both, cuda_only))
    })
    .as_ref()
}

fn fabrik(lib_dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_fabrik"));
    c.args(["bench", "collective"])
        .args(args)
        .env("LD_LIBRARY_PATH", lib_dir)
        .env_remove("MOCK_NCCL_INIT_FAIL")
        .env_remove("MOCK_NCCL_CORRUPT_INDEX")
        .env_remove("MOCK_NCCL_CORRUPT_RANK")
        .env_remove("RANK")
        .env_remove("WORLD_SIZE")
        .env_remove("LOCAL_RANK");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn wrongs(report: &Value) -> Vec<u64> {
    report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| [&r["out_of_place"]["wrong"], &r["in_place"]["wrong"]])
        .map(|w| w.as_u64().unwrap())
        .collect()
}

#[test]
fn mock_nccl_single_rank_all_reduce_sweep_is_verified_and_reported_as_json() {
    let Some((both, _)) = mocks() else { return };
    let o = fabrik(
        both,
        &[
            "all_reduce",
            "--backend",
            "nccl",
            "-b",
            "8",
            "-e",
            "1M",
            "-n",
            "2",
            "-w",
            "1",
            "--format",
            "json",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["backend"], "nccl");
    assert_eq!(r["op"], "all_reduce");
    assert_eq!(r["ranks"], 1);
    let sizes: Vec<u64> = r["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["size"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes.len(), 18, "8 B to 1 MiB by 2: {sizes:?}");
    assert_eq!((sizes[0], sizes[17]), (8, 1 << 20));
    let w = wrongs(&r);
    assert_eq!(w.len(), 36);
    assert!(w.iter().all(|&x| x == 0), "{w:?}");
    let dev = &r["devices"][0];
    assert_eq!(dev["name"], "Mock GPU 0 (host memory)");
    assert_eq!(dev["bus_id"], "0000:18:00.0");
    let notes = r["notes"].to_string();
    assert!(notes.contains("nccl 2.21.5"), "{notes}");
}

#[test]
fn mock_nccl_text_output_has_the_nccl_tests_table_and_versions() {
    let Some((both, _)) = mocks() else { return };
    let o = fabrik(
        both,
        &[
            "all_reduce",
            "--backend",
            "nccl",
            "-b",
            "1K",
            "-e",
            "4K",
            "-n",
            "1",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("# fabrik nccl backend: NCCL 2.21.5 (libnccl.so.2), CUDA driver 12.4"));
    assert!(
        out.contains("device  0 [0000:18:00.0] Mock GPU 0 (host memory)"),
        "{out}"
    );
    assert!(out.contains("# Out of bounds values : 0 OK"), "{out}");
    // 1K, 2K, 4K rows with 0 wrong in both placements.
    let rows: Vec<&str> = out.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(rows.len(), 3, "{out}");
    assert!(rows[0].trim_start().starts_with("1024  "), "{out}");
}

#[test]
fn mock_nccl_every_op_on_four_ranks_in_bfloat16_is_verified() {
    let Some((both, _)) = mocks() else { return };
    for op in [
        "all_reduce",
        "all_gather",
        "reduce_scatter",
        "broadcast",
        "reduce",
        "alltoall",
    ] {
        let o = fabrik(
            both,
            &[
                op,
                "--backend",
                "nccl",
                "--local",
                "4",
                "-d",
                "bfloat16",
                "-r",
                "2",
                "-b",
                "64",
                "-e",
                "16K",
                "-f",
                "16",
                "-n",
                "1",
                "-w",
                "0",
                "--format",
                "json",
            ],
            &[],
        );
        assert!(o.status.success(), "{op}: {}", text(&o));
        let r: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(r["ranks"], 4, "{op}");
        assert_eq!(r["devices"].as_array().unwrap().len(), 4, "{op}");
        assert_eq!(r["rows"].as_array().unwrap().len(), 3, "{op}");
        assert!(wrongs(&r).iter().all(|&x| x == 0), "{op}: {r}");
        assert_eq!(r["rows"][0]["type"], "bfloat16");
    }
}

#[test]
fn mock_nccl_corrupted_element_is_reported_with_rank_and_index() {
    let Some((both, _)) = mocks() else { return };
    let o = fabrik(
        both,
        &[
            "all_reduce",
            "--backend",
            "nccl",
            "--local",
            "2",
            "-b",
            "64",
            "-e",
            "64",
            "-n",
            "1",
            "-w",
            "0",
            "--format",
            "json",
        ],
        &[
            ("MOCK_NCCL_CORRUPT_INDEX", "5"),
            ("MOCK_NCCL_CORRUPT_RANK", "1"),
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    // One element wrong on one rank, in each placement.
    assert_eq!(wrongs(&r), [1, 1]);
    let notes = r["notes"].to_string();
    assert!(
        notes.contains("first wrong element: rank 1 element 5 (out-of-place, 64 B)"),
        "{notes}"
    );
}

#[test]
fn mock_nccl_init_failure_names_the_nccl_result_and_its_text() {
    let Some((both, _)) = mocks() else { return };
    let o = fabrik(
        both,
        &["all_reduce", "--backend", "nccl", "-e", "64"],
        &[("MOCK_NCCL_INIT_FAIL", "1")],
    );
    assert!(!o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("ncclCommInitRank failed: ncclSystemError (2): mock: unhandled system error"),
        "{err}"
    );
    assert!(
        err.contains("mock: bootstrap refused by MOCK_NCCL_INIT_FAIL"),
        "ncclGetLastError's detail: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn missing_libnccl_is_a_clear_error() {
    let Some((_, cuda_only)) = mocks() else {
        return;
    };
    if fabrik_gpu::Nccl::load().is_ok() {
        fabrik_testbed::not_applicable(
            "the missing-libnccl error",
            "a real libnccl.so.2 is installed here",
        );
        return;
    }
    let o = fabrik(cuda_only, &["all_reduce", "--backend", "nccl"], &[]);
    assert!(!o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("libnccl.so.2 not found"), "{err}");
    assert!(err.contains("install NCCL"), "{err}");
    assert!(err.contains("LD_LIBRARY_PATH"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn missing_libcuda_is_a_clear_error() {
    if fabrik_gpu::Cuda::load_from(fabrik_gpu::LIBCUDA).is_ok() {
        fabrik_testbed::not_applicable(
            "the missing-libcuda error",
            "a real libcuda.so.1 is installed here",
        );
        return;
    }
    let empty = tempfile::tempdir().unwrap();
    let o = fabrik(empty.path(), &["all_reduce", "--backend", "nccl"], &[]);
    assert!(!o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("libcuda.so.1 not found"), "{err}");
    assert!(err.contains("no NVIDIA driver"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn mock_stream_that_never_finishes_fails_within_the_timeout() {
    let Some((both, _)) = mocks() else { return };
    let t0 = std::time::Instant::now();
    let o = fabrik(
        both,
        &[
            "all_reduce",
            "--backend",
            "nccl",
            "-e",
            "64",
            "--timeout",
            "1",
        ],
        &[("MOCK_CUDA_STREAM_HANG", "1")],
    );
    assert!(!o.status.success(), "{}", text(&o));
    assert!(t0.elapsed() < std::time::Duration::from_secs(20));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("the warm-up iterations at 8 B did not finish within 1.0 s"),
        "{err}"
    );
}

#[test]
fn mock_rank_dying_inside_a_collective_does_not_hang_the_others() {
    let Some((both, _)) = mocks() else { return };
    let t0 = std::time::Instant::now();
    let o = fabrik(
        both,
        &[
            "all_reduce",
            "--backend",
            "nccl",
            "--local",
            "3",
            "-e",
            "64",
            // Long enough for three ranks to join on a loaded machine.
            "--timeout",
            "5",
        ],
        &[("MOCK_NCCL_EXIT_RANK", "1")],
    );
    assert!(!o.status.success(), "{}", text(&o));
    // The survivors are blocked inside the (mock) NCCL call; the watchdog ends them after
    // --timeout + 5 s.
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        t0.elapsed()
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("enqueueing all_reduce on rank 0 did not return in time"),
        "{err}"
    );
    assert!(err.contains("rank 1 (exit status: 9)"), "{err}");
}

#[test]
fn mock_nccl_integer_and_half_reductions_on_three_ranks_are_verified() {
    let Some((both, _)) = mocks() else { return };
    for (op, dtype, redop) in [
        ("all_reduce", "uint64", "min"),
        ("all_reduce", "int8", "prod"),
        ("reduce_scatter", "int32", "avg"),
        ("reduce", "half", "max"),
        ("all_reduce", "double", "avg"),
    ] {
        let o = fabrik(
            both,
            &[
                op,
                "--backend",
                "nccl",
                "--local",
                "3",
                "-d",
                dtype,
                "-o",
                redop,
                "-b",
                "96",
                "-e",
                "6K",
                "-f",
                "64",
                "-n",
                "1",
                "-w",
                "0",
                "--format",
                "json",
            ],
            &[],
        );
        assert!(o.status.success(), "{op} {dtype} {redop}: {}", text(&o));
        let r: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(r["rows"].as_array().unwrap().len(), 2);
        assert_eq!(r["rows"][0]["redop"], redop);
        assert!(wrongs(&r).iter().all(|&x| x == 0), "{op} {dtype}: {r}");
    }
}
