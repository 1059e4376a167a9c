#![allow(clippy::unwrap_used)]

use super::*;
use fabrik_model::{LinkMeasurement, RankSettings, TcpBuffers, SCHEMA_VERSION};

/// Every link of `ranks` ranks at 10 Gb/s, each rank with the TCP buffer limits `max`
/// gives it (`(rmem max, wmem max)`, `None` where it could not read them).
fn matrix(max: &[Option<(u64, u64)>]) -> PairMatrix {
    let ranks = max.len() as u32;
    let hosts: Vec<String> = (0..ranks).map(|r| format!("node{r}")).collect();
    let links: Vec<LinkMeasurement> = (0..ranks)
        .flat_map(|src| {
            (0..ranks)
                .filter(move |&d| d != src)
                .map(move |dst| LinkMeasurement {
                    src,
                    dst,
                    gbps: 10.0,
                    latency_us: Some(20.0),
                    round: 0,
                })
        })
        .collect();
    PairMatrix {
        schema_version: SCHEMA_VERSION,
        transport: "tcp".into(),
        size: 4 << 20,
        iterations: 3,
        ranks,
        analysis: crate::pairs::analyze(&links, &hosts, ranks),
        hosts,
        rounds: ranks,
        links,
        rail: None,
        isolation: None,
        evidence: vec![],
        path_mtu: vec![],
        settings: (0..)
            .zip(max)
            .map(|(rank, l)| RankSettings {
                rank,
                tcp_buffers: l.map(|(r, w)| TcpBuffers {
                    rmem: Some([4096, 131072, r]),
                    wmem: Some([4096, 16384, w]),
                }),
            })
            .collect(),
        failures: vec![],
        culprits: vec![],
        elapsed_s: None,
    }
}

const DEFAULT: Option<(u64, u64)> = Some((6291456, 4194304));

#[test]
fn a_rank_whose_tcp_buffers_are_below_the_others_is_named_for_them() {
    let mut max = vec![DEFAULT; 8];
    max[3] = Some((8192, 8192));
    let c = culprits(&matrix(&max));
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(
        (c[0].kind, c[0].ranks.as_slice()),
        (CulpritKind::Node, &[3][..])
    );
    assert_eq!(c[0].causes, vec![Cause::TcpBuffers]);
    assert!(
        c[0].why
            .starts_with("node3: its largest TCP receive / send buffers are 8192 / 8192 bytes")
            && c[0]
                .why
                .contains("where 7 of 8 ranks have 6291456 / 4194304"),
        "{}",
        c[0].why
    );
    // Only the send side capped is as much a cap.
    max[3] = Some((6291456, 65536));
    assert_eq!(culprits(&matrix(&max))[0].ranks, vec![3]);
}

#[test]
fn alike_larger_unknown_or_too_few_buffers_name_nobody() {
    assert!(culprits(&matrix(&[DEFAULT; 8])).is_empty());
    // Larger than the others is no cap.
    let mut max = vec![DEFAULT; 4];
    max[1] = Some((1 << 26, 1 << 26));
    assert!(culprits(&matrix(&max)).is_empty());
    // A rank that could not read its limits is not judged, nor are the others by it.
    max[1] = None;
    assert!(culprits(&matrix(&max)).is_empty());
    // Two ranks, or no majority: nobody to compare with.
    assert!(culprits(&matrix(&[DEFAULT, Some((8192, 8192))])).is_empty());
    let split = [DEFAULT, DEFAULT, Some((8192, 8192)), Some((8192, 8192))];
    assert!(culprits(&matrix(&split)).is_empty());
}
