//! Results the renderers' tests share.

use fabrik_model::{
    CollTiming, CollectiveReport, CollectiveRow, LinkMeasurement, PairMatrix, ResultSource,
};

/// A pair matrix over `hosts` (one rank each) with every link at 10 Gb/s except those in
/// `slow` (`(src, dst)` and its Gb/s), analysed as `cluster matrix` analyses it.
pub(crate) fn pair_matrix(
    hosts: Vec<String>,
    latency_us: Option<f64>,
    slow: &[((u32, u32), f64)],
) -> PairMatrix {
    let ranks = u32::try_from(hosts.len()).unwrap_or(u32::MAX);
    let mut links = Vec::new();
    for src in 0..ranks {
        for dst in (0..ranks).filter(|&d| d != src) {
            let gbps = slow
                .iter()
                .find(|(pair, _)| *pair == (src, dst))
                .map_or(10.0, |(_, g)| *g);
            links.push(LinkMeasurement {
                src,
                dst,
                gbps,
                latency_us,
                round: 0,
            });
        }
    }
    let analysis = fabrik_cluster::pairs::analyze(&links, &hosts, ranks);
    PairMatrix {
        schema_version: 1,
        transport: "tcp".into(),
        size: 1 << 20,
        iterations: 3,
        ranks,
        hosts,
        rounds: 3,
        links,
        analysis,
        rail: None,
        isolation: None,
        evidence: vec![],
        path_mtu: vec![],
        settings: vec![],
        failures: vec![],
        culprits: vec![],
        elapsed_s: None,
    }
}

/// An nccl-tests-shaped run of `op` from 8 B to 512 KiB (bus bandwidth rising with the size).
pub(crate) fn collective(op: &str, source: ResultSource) -> CollectiveReport {
    CollectiveReport {
        schema_version: 1,
        source,
        op: op.into(),
        backend: Some("tcp".into()),
        ranks: Some(4),
        hosts: vec!["a".into(), "b".into()],
        devices: vec![],
        rows: (3..20)
            .map(|k| CollectiveRow {
                size: 1 << k,
                count: 1 << (k - 2),
                dtype: "float".into(),
                redop: Some("sum".into()),
                root: Some(-1),
                out_of_place: Some(CollTiming {
                    time_us: 10.0,
                    algbw: k as f64,
                    busbw: k as f64 * 1.5,
                    wrong: Some(0),
                }),
                in_place: Some(CollTiming {
                    time_us: 10.0,
                    algbw: k as f64,
                    busbw: k as f64 * 1.4,
                    wrong: Some(0),
                }),
            })
            .collect(),
        avg_busbw: Some(12.5),
        notes: vec![],
    }
}
