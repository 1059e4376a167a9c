//! Property tests: no parser panics on any input, and work stays linear in the input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use fabrik_parse::nccl_log::{LogAnalyzer, Splitter};
use proptest::prelude::*;

fn run_all(bytes: &[u8]) {
    let mut a = LogAnalyzer::new();
    let mut r = bytes;
    a.read("prop", &mut r).unwrap();
    let report = a.finish();
    // The report always serializes.
    serde_json::to_string(&report).unwrap();
    let mut r = bytes;
    let _ = fabrik_parse::nccl_tests::parse_reader(&mut r);
    let mut r = bytes;
    let _ = fabrik_parse::perftest::parse_reader(&mut r).unwrap();
}

/// Fragments of real lines, so that random inputs reach deep into the parsers.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("node1:123:456 [0] NCCL INFO ".to_string()),
        Just("[1,7]<stdout>:h:1:2 [3] NCCL WARN ".to_string()),
        Just("x.cc:12 NCCL WARN ".to_string()),
        Just("Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA".to_string()),
        Just("Ring 00 : 7 -> 8 [send] via NET/".to_string()),
        Just("NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB eth0:10.0.0.1<0>".to_string()),
        Just("Bootstrap : Using [".to_string()),
        Just("GPU Direct RDMA Enabled for HCA 0 '".to_string()),
        Just("comm 0x1 rank 3 nranks ".to_string()),
        Just("NCCL version 2.".to_string()),
        Just(" set by environment to ".to_string()),
        Just(" coll channels, 3 nvls channels".to_string()),
        Just("Got completion from peer with status=12".to_string()),
        Just("#  Rank  0 Group  0 Pid  1 on h device  0 [0x07] GPU".to_string()),
        Just("#       size         count      type   redop    root     time   algbw   busbw #wrong     time".to_string()),
        Just("   1048576  262144  float  sum  -1  27.76  37.78  66.11  N/A".to_string()),
        Just(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]".to_string()),
        Just(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]".to_string()),
        Just(" Dual-port       : OFF\t\tDevice         : mlx5_0".to_string()),
        Just("                    RDMA_Write BW Test".to_string()),
        Just("Last error:".to_string()),
        Just("NET/IB : Using [0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE} [1]={".to_string()),
        Just("RCCL version : 2.26.6-HEAD:f224e2c".to_string()),
        Just("[0]     1048576   262144   float   sum   -1[0]   1626.5   0.64   1.24   0[0]".to_string()),
        Just("                    RDMA_Write Bidirectional BW Test".to_string()),
        Just(" CQE Poll Batch  : 16".to_string()),
        Just("16 coll channels, 16 collnet channels".to_string()),
        Just("Loaded net plugin Libfabric (v10)".to_string()),
        Just("ncclInternalError".to_string()),
        // RAS report shapes (src/ras/client_support.cc) and NCCL's `-> N` traces.
        Just("Job summary\n===========\n".to_string()),
        Just("Errors\n======\n".to_string()),
        Just("Warnings\n========\n".to_string()),
        Just("Communicators... (0.00s)\n=============\n".to_string()),
        Just("    0         1         4         8        32        32   RUNNING  MISMATCH".to_string()),
        Just("#0-0 (fa93daea854b060b) MISMATCH".to_string()),
        Just("  30 ranks have launched up to operation 640".to_string()),
        Just("  Rank 12 -- GPU 4 managed by process 323032 on node 10.1.1.1".to_string()),
        Just("  Rank 7 has launched up to operation 1187 -- GPU".to_string()),
        Just("INCOMPLETE\n  Missing communicator data from ".to_string()),
        Just("  Process 60004 on node ".to_string()),
        Just("{\n  \"nccl_version\": \"2.28.9\",\n  \"communicators\": [".to_string()),
        Just("transport/net_ib.cc:1105 -> ".to_string()),
        Just("group.cc:75 -> 2 [Async thread]".to_string()),
        Just("[Proxy Service 1] Failed to execute operation Connect from rank 1, retcode 3".to_string()),
        "[ -~]{0,40}",
        Just("\n".to_string()),
        Just("\r\n".to_string()),
        Just("\x1b[31m".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just(":".to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        run_all(&bytes);
    }

    #[test]
    fn line_like_inputs_never_panic(parts in proptest::collection::vec(fragment(), 0..64)) {
        let text = parts.concat();
        run_all(text.as_bytes());
    }

    /// The analyzer splits a line with one marker at the marker the forward search found; that
    /// must be the line `Splitter::split` (last marker wins) returns.
    #[test]
    fn one_marker_shortcut_is_the_full_split(parts in proptest::collection::vec(fragment(), 0..12)) {
        let s = Splitter::default();
        for line in parts.concat().as_bytes().split(|b| *b == b'\n') {
            let Some(first) = s.first_marker(line) else { continue };
            if s.record_after(line, first).is_none() {
                prop_assert_eq!(s.at_marker(line, first), s.split(line));
            }
        }
    }
}

fn time_once(input: &[u8]) -> Duration {
    let t = Instant::now();
    run_all(input);
    t.elapsed()
}

/// Time of `big` over time of `small`, each the minimum of 7 runs taken alternately, so that a
/// burst of load from other jobs (or from the proptest cases running beside this test on a
/// 2-core machine) hits both sides instead of one.
fn cost_ratio(big: &[u8], small: &[u8]) -> (f64, Duration, Duration) {
    let (mut tb, mut ts) = (Duration::MAX, Duration::MAX);
    for _ in 0..7 {
        ts = ts.min(time_once(small));
        tb = tb.min(time_once(big));
    }
    (tb.as_secs_f64() / ts.as_secs_f64().max(1e-6), ts, tb)
}

fn with_lines(shape: &[u8], line_len: usize, total: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(total + total / line_len + 1);
    while out.len() < total {
        out.extend(shape.iter().copied().cycle().take(line_len));
        out.push(b'\n');
    }
    out
}

/// Pathological shapes (many markers, brackets and colons) on long lines. With the total size
/// fixed, lines 16 times longer must cost about the same: a parser quadratic in the line length
/// would take 16 times as long. Lines are capped at 64 KiB, so this covers every length a line
/// can have. (Min of 7 alternating runs, generous bound: the machine is shared.)
#[test]
fn work_is_linear_in_line_length() {
    let shapes: [&[u8]; 6] = [
        b"NCCL NCCL NCCL ",
        b"[[[[]]]] ",
        b"a:b:c:1:2 [x] ",
        b"h:1:2 [0] NCCL INFO Channel 00 : via NET/IB/0/GDRDMA ",
        b" Dual-port : a : b : c : d ",
        b"# Rank 1 on h device 2 [x] ",
    ];
    for shape in shapes {
        let short = with_lines(shape, 4 << 10, 512 << 10);
        let long = with_lines(shape, 64 << 10, 512 << 10);
        let (ratio, ts, tl) = cost_ratio(&long, &short);
        assert!(
            ratio < 5.0,
            "shape {:?}: 4 KiB lines {:?}, 64 KiB lines {:?} (x{ratio:.2})",
            String::from_utf8_lossy(shape),
            ts,
            tl
        );
    }
}

/// Eight times more lines must cost about eight times more, not 64 (state that grows with the
/// input, such as per-process tables, stays bounded).
#[test]
fn work_is_linear_in_line_count() {
    let line =
        b"node7:1234:99 [3] NCCL INFO Channel 02/0 : 3[3] -> 11[3] [send] via NET/IB/3/GDRDMA\n";
    let small: Vec<u8> = line
        .iter()
        .copied()
        .cycle()
        .take(line.len() * 4000)
        .collect();
    let big: Vec<u8> = line
        .iter()
        .copied()
        .cycle()
        .take(line.len() * 32000)
        .collect();
    let (ratio, _, _) = cost_ratio(&big, &small);
    assert!(ratio < 24.0, "x{ratio:.2} for 8x the lines");
}
