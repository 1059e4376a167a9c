use super::*;

#[test]
fn per_iteration_layout_from_the_writer() {
    // Header as nccl-tests src/util.cu writes it with per-iteration timing (-I).
    let text = "#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%\n\
                    1048576  262144  float  sum  -1  27.76  37.78  66.11  0  20.1  30.2  29.9  1.5  27.49  38.15  66.76  0  20.0  30.0  29.0  1.2\n";
    let runs = parse_str(text);
    let row = &runs[0].report.rows[0];
    assert_eq!(row.in_place.as_ref().unwrap().busbw, 66.76);
    assert_eq!(row.out_of_place.as_ref().unwrap().time_us, 27.76);
}

#[test]
fn json_document_from_the_writer() {
    let doc = r#"{"version":3,"start_time":"2025-01-01 00:00:00","args":["./build/all_reduce_perf","-b","8"],"env":[],"nccl_version":22703,
        "config":{"nthreads":1,"ngpus":1,"devices":[{"rank":0,"group":0,"pid":12,"hostname":"node-a","device":0,"device_hex":"0000:07:00","device_info":"NVIDIA H100 80GB HBM3"},{"rank":1,"group":0,"pid":13,"hostname":"node-b","device":0,"device_hex":"0000:07:00","device_info":"NVIDIA H100 80GB HBM3"}]},
        "results":[{"size":1048576,"count":262144,"type":"float","redop":"sum","root":"    -1","out_of_place":{"time":27.5,"alg_bw":38.1,"bus_bw":38.1,"nwrong":0.000000},"in_place":{"time":27.1,"alg_bw":38.6,"bus_bw":38.6,"nwrong":null},"actual_iterations":20,"experiment_name":"x"}],
        "out_of_bounds":{"count":0,"okay":"true"},"average_bus_bandwidth":{"bandwidth":38.3,"okay":"unchecked"}}"#;
    let mut r = doc.as_bytes();
    let runs = parse_reader(&mut r).unwrap();
    let rep = &runs[0].report;
    assert_eq!(rep.op, "all_reduce");
    assert_eq!(rep.ranks, Some(2));
    assert_eq!(rep.hosts, vec!["node-a", "node-b"]);
    assert_eq!(rep.rows[0].root, Some(-1));
    assert_eq!(rep.rows[0].out_of_place.as_ref().unwrap().wrong, Some(0));
    assert_eq!(rep.rows[0].in_place.as_ref().unwrap().wrong, None);
    assert_eq!(rep.avg_busbw, Some(38.3));
    assert_eq!(runs[0].out_of_bounds, Some(0));
}

#[test]
fn consecutive_runs_of_the_newest_format_split_at_their_banner() {
    // Banner lines as nccl-tests 2.19 (src/util.cu) prints them.
    let text = "# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803\n\
# Collective test starting: all_reduce_perf\n\
# nThread 1 nGpus 8 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 1 iters: 1 agg iters: 1 validation: 1 graph: 0 unalign: 0\n\
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n\
           8             2     float     sum      -1    20.10    0.00    0.00       0    19.90    0.00    0.00       0\n\
# Out of bounds values : 0 OK\n\
# Avg bus bandwidth    : 0.001 \n\
#\n\
# Collective test concluded: all_reduce_perf\n\
# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803\n\
# Collective test starting: all_gather_perf\n\
# nThread 1 nGpus 8 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 1 iters: 1 agg iters: 1 validation: 1 graph: 0 unalign: 0\n\
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n\
          64             2     float    none      -1    15.00    0.00    0.00       0    14.00    0.00    0.00       0\n";
    let runs = parse_str(text);
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].report.op, "all_reduce");
    assert_eq!(runs[0].report.avg_busbw, Some(0.001));
    assert_eq!(runs[1].report.op, "all_gather");
    assert_eq!(runs[1].report.rows[0].size, 64);
    assert_eq!(runs[1].report.rows[0].redop.as_deref(), Some("none"));
}

#[test]
fn op_names() {
    assert_eq!(
        op_from_program("./build/all_reduce_perf").as_deref(),
        Some("all_reduce")
    );
    assert_eq!(
        op_from_program("all_gather_perf_mpi").as_deref(),
        Some("all_gather")
    );
    assert_eq!(op_from_program("mpirun"), None);
}
