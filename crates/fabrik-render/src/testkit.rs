//! Results the renderers' tests share.

use fabrik_model::{LinkMeasurement, PairMatrix};

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
    }
}
