//! Every nccl-tests fixture against the ground truth in fixtures/nccl-tests/README.md.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use fabrik_model::CollectiveReport;
use fabrik_parse::check::check_collective;
use fabrik_parse::nccl_tests::{parse_path, NcclTestsRun};

fn load(name: &str) -> Vec<NcclTestsRun> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/nccl-tests")
        .join(name);
    parse_path(&p).expect("fixture readable")
}

fn one(name: &str) -> NcclTestsRun {
    let mut runs = load(name);
    assert_eq!(runs.len(), 1, "{name}: one run");
    runs.remove(0)
}

fn max_busbw(r: &CollectiveReport) -> f64 {
    r.rows
        .iter()
        .flat_map(|x| [&x.out_of_place, &x.in_place])
        .filter_map(|t| t.as_ref().map(|t| t.busbw))
        .fold(0.0, f64::max)
}

#[test]
fn t01_old_header_devices_without_group() {
    let run = one("01-v2.0-era-old-header-pid-error-column.txt");
    let r = &run.report;
    assert!(r.rows.is_empty());
    assert_eq!(r.devices.len(), 2);
    assert_eq!(r.hosts, vec!["ip-172-31-20-228", "ip-172-31-22-230"]);
    assert_eq!(r.devices[0].pid, Some(1320));
    assert_eq!(r.devices[0].group, None);
    assert_eq!(r.devices[0].bus_id.as_deref(), Some("0x00"));
    assert_eq!(r.devices[0].name.as_deref(), Some("Tesla V100-SXM2-16GB"));
}

#[test]
fn t02_no_redop_error_float_column() {
    let runs = load("02-nccl-2.6.4-era-no-redop-error-float.txt");
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    let r = &run.report;
    assert_eq!(r.rows.len(), 12);
    let first = &r.rows[0];
    assert_eq!(
        (first.size, first.count, first.dtype.as_str()),
        (65536, 8192, "float")
    );
    assert_eq!(first.redop, None);
    assert_eq!(first.root, None);
    let oop = first.out_of_place.as_ref().unwrap();
    assert_eq!(
        (oop.time_us, oop.algbw, oop.busbw, oop.wrong),
        (16.57, 1.98, 1.98, None)
    );
    assert_eq!(first.in_place.as_ref().unwrap().time_us, 13.83);
    assert_eq!(run.max_error, Some(0.0));
    assert_eq!(r.avg_busbw, Some(6.6972));
    assert_eq!(run.out_of_bounds, Some(0));
    assert!(check_collective(run).is_empty());
}

#[test]
fn t03_na_wrong_and_cut_last_row() {
    let run = one("03-a3-mega-tcpxo-all-reduce-na-wrong.txt");
    let r = &run.report;
    assert_eq!(r.rows.len(), 11);
    assert!(r
        .rows
        .iter()
        .flat_map(|x| [&x.out_of_place, &x.in_place])
        .flatten()
        .all(|t| t.wrong.is_none()));
    let last = r.rows.last().unwrap();
    assert_eq!(last.size, 4294967296);
    assert!(last.in_place.is_none());
    assert_eq!(last.root, Some(-1));
    assert_eq!(last.redop.as_deref(), Some("sum"));
    assert_eq!(max_busbw(r), 89.25);
    // #wrong is N/A (data checks off): nothing to say about the results' values.
    assert!(check_collective(&run).is_empty());
}

#[test]
fn t04_new_header_wrong_column() {
    let run = one("04-reduce-scatter-wrong-column-zero-size.txt");
    let r = &run.report;
    assert_eq!(r.rows.len(), 7);
    assert_eq!(r.rows.iter().filter(|x| x.size == 0).count(), 5);
    let row = &r.rows[5];
    assert_eq!(row.size, 128);
    assert_eq!(row.out_of_place.as_ref().unwrap().wrong, Some(0));
    assert_eq!(row.in_place.as_ref().unwrap().algbw, 0.01);
}

#[test]
fn t05_mpirun_prefixes() {
    let run = one("05-p5-mpirun-prefixed-rows.txt");
    let sizes: Vec<u64> = run.report.rows.iter().map(|x| x.size).collect();
    assert_eq!(sizes, vec![8, 16, 32]);
    assert_eq!(run.report.rows[2].in_place.as_ref().unwrap().time_us, 13.34);
}

#[test]
fn t06_nccl_lines_mixed_in() {
    let run = one("06-two-gpus-destroy-lines-avg.txt");
    assert_eq!(run.report.rows.len(), 1);
    assert_eq!(run.report.avg_busbw, Some(8.62002));
    assert_eq!(run.out_of_bounds, Some(0));
    assert_eq!(run.report.rows[0].in_place.as_ref().unwrap().busbw, 25.88);
}

#[test]
fn t07_group_header_and_op_from_command() {
    let run = one("07-rtx4090-group-header-tree.txt");
    let r = &run.report;
    assert_eq!(r.op, "all_reduce");
    assert_eq!(r.ranks, Some(8));
    assert_eq!(r.hosts, vec!["gpu59"]);
    assert!(r
        .devices
        .iter()
        .all(|d| d.pid == Some(28307) && d.group == Some(0)));
    assert_eq!(r.devices[3].bus_id.as_deref(), Some("0x5a"));
    assert_eq!(r.rows.len(), 1);
    assert!(r.rows[0].in_place.is_none());
}

#[test]
fn t08_domain_bus_ids_two_hosts() {
    let run = one("08-h100-two-hosts-domain-busid.txt");
    let r = &run.report;
    assert_eq!(r.hosts, vec!["h100-2", "h100-4"]);
    assert_eq!(r.devices.len(), 13);
    assert_eq!(r.devices[8].bus_id.as_deref(), Some("0002:00:01"));
    assert_eq!(r.devices[8].rank, 8);
    assert_eq!(r.devices[8].device, Some(0));
}

#[test]
fn t09_rows_without_header() {
    let run = one("09-mooncake-all-reduce-rows.txt");
    let r = &run.report;
    assert_eq!(r.rows.len(), 11);
    assert_eq!(max_busbw(r), 300.52);
    assert!(r.rows.iter().all(|x| x.root == Some(-1)));
}

#[test]
fn json_round_trips_into_the_model() {
    let run = one("03-a3-mega-tcpxo-all-reduce-na-wrong.txt");
    let text = serde_json::to_string(&run.report).unwrap();
    let back: CollectiveReport = serde_json::from_str(&text).unwrap();
    assert_eq!(back, run.report);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(v["rows"][0]["out_of_place"]["time_us"].is_number());
    assert!(v["rows"][0].get("type").is_some());
}

#[test]
fn wrong_results_are_flagged() {
    let text = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n  1048576  262144  float  sum  -1  27.76  37.78  66.11  3  27.49  38.15  66.76  0\n# Out of bounds values : 3 FAILED\n";
    let runs = fabrik_parse::nccl_tests::parse_str(text);
    let f = check_collective(&runs[0]);
    assert_eq!(f.len(), 2);
    assert!(f.iter().all(|f| f.rule == "FAB-BENCH-WRONG"));
}

#[test]
fn t10_rank_tag_repeated_inside_rows() {
    let run = one("10-prepend-rank-tag-inside-rows.txt");
    let r = &run.report;
    assert_eq!(r.rows.len(), 10);
    let first = &r.rows[0];
    assert_eq!((first.size, first.count), (1_048_576, 262_144));
    assert_eq!(
        (first.redop.as_deref(), first.root),
        (Some("sum"), Some(-1))
    );
    let oop = first.out_of_place.as_ref().unwrap();
    assert_eq!((oop.time_us, oop.busbw, oop.wrong), (1626.5, 1.24, Some(0)));
    assert_eq!(first.in_place.as_ref().unwrap().time_us, 2302.3);
    assert_eq!(r.rows[9].size, 536_870_912);
    assert!(check_collective(&run).is_empty());
}

#[test]
fn t11_device_lines_and_header_without_hash() {
    let run = one("11-old-header-hash-lost-in-markdown.txt");
    let r = &run.report;
    assert_eq!(r.devices.len(), 8);
    assert_eq!(r.hosts, vec!["AI-A100-Beethoven01"]);
    assert_eq!(r.devices[7].pid, Some(1_821_223));
    assert_eq!(r.devices[7].device, Some(7));
    assert!(r.rows.is_empty());
    assert_eq!(r.op, "all_reduce");
}

#[test]
fn t12_rccl_tests_two_runs_with_the_library_block() {
    let runs = load("12-rccl-tests-mi300x-two-runs-rccl-version-block.txt");
    assert_eq!(runs.len(), 2);
    for (run, avg) in runs.iter().zip([116.669, 120.69]) {
        let r = &run.report;
        assert_eq!(r.op, "all_reduce");
        assert_eq!(r.rows.len(), 32);
        assert_eq!(r.avg_busbw, Some(avg));
        assert_eq!(r.devices.len(), 8);
        assert_eq!(r.devices[0].bus_id.as_deref(), Some("0000:0c:00.0"));
        assert_eq!(r.devices[0].name.as_deref(), Some("AMD Instinct MI300X"));
        assert_eq!(r.rows[31].size, 17_179_869_184);
        assert_eq!(run.out_of_bounds, Some(0));
        assert!(r
            .notes
            .iter()
            .any(|n| n == "RCCL version : 2.22.3-develop:f5b15f2"));
        assert!(r
            .notes
            .iter()
            .any(|n| n == "rccl-tests: Version develop:448c4c7"));
    }
    assert_eq!(
        runs[1].report.rows[2]
            .out_of_place
            .as_ref()
            .unwrap()
            .time_us,
        6.32
    );
    assert!(check_collective(&runs[0]).is_empty());
}

/// The fixture 06 table pasted quoted, with srun `--label` and with mpirun `--tag-output` reads
/// the same rows.
#[test]
fn the_op_named_only_below_the_footer_is_found() {
    // 14: rccl-tests rows with root 0 and no header; only `# Collective test concluded:
    // broadcast_perf` names the op. 15: the tail of an all_reduce run. 17: the footer twice.
    for (file, op) in [
        (
            "14-rccl-tests-strix-halo-broadcast-root0-concluded-next-test-cut.txt",
            "broadcast",
        ),
        (
            "15-rccl-tests-ainic-all-reduce-16gib-rows-concluded.txt",
            "all_reduce",
        ),
        (
            "17-nccl-2.29.7-one-gpu-last-rows-1e06-algbw-concluded-destroy.txt",
            "all_reduce",
        ),
    ] {
        let runs = load(file);
        assert_eq!(runs.len(), 1, "{file}");
        assert_eq!(runs[0].report.op, op, "{file}");
    }
    // A banner's op is not overridden by a later footer of the same run.
    let text = "# Collective test starting: all_gather_perf\n#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n 1048576 262144 float none -1 10.0 100.0 90.0 0 10.0 100.0 90.0 0\n# Avg bus bandwidth : 90\n# Collective test concluded: all_reduce_perf\n";
    assert_eq!(
        fabrik_parse::nccl_tests::parse_str(text)[0].report.op,
        "all_gather"
    );
}

#[test]
fn quoted_and_launcher_prefixed_tables_read_the_same() {
    let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/nccl-tests/09-mooncake-all-reduce-rows.txt");
    let text = std::fs::read_to_string(p).unwrap();
    let plain = fabrik_parse::nccl_tests::parse_str(&text);
    assert_eq!(plain[0].report.rows.len(), 11);
    for prefix in ["> ", "0: ", "  3: ", "[1,0]<stdout>:", "> > "] {
        let prefixed: String = text.lines().map(|l| format!("{prefix}{l}\n")).collect();
        let got = fabrik_parse::nccl_tests::parse_str(&prefixed);
        assert_eq!(
            got[0].report.rows, plain[0].report.rows,
            "prefix {prefix:?}"
        );
    }
}

/// nccl-tests 1.x headers (src/<op>.cu `print_header` at v1.0.0) name their columns per op,
/// and three of them say which op printed them.
#[test]
fn op_from_nccl_tests_1_headers() {
    let header = |cols: &str| {
        format!("# {cols} time algbw busbw res time algbw busbw res\n      1000  250  float  sum  0  0.010  0.10  0.10  0e+00  0.010  0.10  0.10  0e+00\n")
    };
    let op = |cols: &str| {
        fabrik_parse::nccl_tests::parse_str(&header(cols))
            .first()
            .map(|r| r.report.op.clone())
    };
    assert_eq!(op("bytes N type op root").as_deref(), Some("reduce"));
    // nccl-tests 2.0-2.11 reduce: `redop root` with the `error` column.
    let old_reduce = "#       size         count    type   redop    root     time   algbw   busbw  error     time   algbw   busbw  error\n     1000  250  float  sum  0  0.010  0.10  0.10  0e+00  0.010  0.10  0.10  0e+00\n";
    assert_eq!(
        fabrik_parse::nccl_tests::parse_str(old_reduce)[0].report.op,
        "reduce"
    );
    // From 2.13 every op prints the same header: it names none.
    let new = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n     1000  250  float  sum  -1  0.010  0.10  0.10  0  0.010  0.10  0.10  0\n";
    assert_eq!(
        fabrik_parse::nccl_tests::parse_str(new)[0].report.op,
        "unknown"
    );
    // A command line still wins over the header's guess.
    let named = format!("mpirun -np 2 ./build/all_reduce_perf -b 8\n{old_reduce}");
    assert_eq!(
        fabrik_parse::nccl_tests::parse_str(&named)[0].report.op,
        "all_reduce"
    );
}

#[test]
fn rows_beyond_the_cap_are_counted_not_kept() {
    use fabrik_parse::nccl_tests::MAX_ROWS;
    let mut text = String::from("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n");
    let n = 100_000usize;
    for _ in 0..n {
        text.push_str("     1048576        262144     float     sum      -1    27.76   37.78   66.11      0    27.49   38.15   66.76      0\n");
    }
    let start = std::time::Instant::now();
    let runs = fabrik_parse::nccl_tests::parse_str(&text);
    assert!(start.elapsed() < std::time::Duration::from_secs(30));
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].report.rows.len(), MAX_ROWS);
    assert_eq!(runs[0].rows_dropped, (n - MAX_ROWS) as u64);
}
