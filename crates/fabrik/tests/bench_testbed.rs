//! `fabrik bench p2p` between network-namespace hosts (root only; skips with a message
//! otherwise, and fails where `FABRIK_REQUIRE_TESTBEDS=1`): striping over several shaped links, proved by the links' own byte counters.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::Child;

use fabrik_testbed::{skip_reason, Testbed};

fn bin() -> String {
    assert_cmd::cargo::cargo_bin("fabrik")
        .to_string_lossy()
        .into_owned()
}

fn skip() -> bool {
    if let Some(why) = skip_reason() {
        fabrik_testbed::skip("the namespace bench test", &why);
        return true;
    }
    false
}

fn start_server(tb: &Testbed, host: usize) -> (Child, String) {
    let fabrik = bin();
    let mut child = tb
        .spawn(
            host,
            &[
                &fabrik, "bench", "p2p", "--server", "--port", "0", "--token", "tb-token", "--once",
            ],
        )
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line.trim().rsplit(':').next().unwrap().to_string();
    (child, port)
}

fn tx_bytes(tb: &Testbed, host: usize, link: usize) -> u64 {
    let path = format!("/sys/class/net/{}/statistics/tx_bytes", tb.iface(link));
    let out = tb.exec(host, &["cat", &path]).unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

fn run_client(tb: &Testbed, args: &[&str]) -> serde_json::Value {
    let fabrik = bin();
    let mut argv = vec![fabrik.as_str(), "bench", "p2p", "--token", "tb-token"];
    argv.extend_from_slice(args);
    argv.extend_from_slice(&["--format", "json"]);
    let out = tb.exec(0, &argv).unwrap();
    assert!(
        out.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn streams_stripe_over_four_shaped_interfaces() {
    if skip() {
        return;
    }
    let tb = Testbed::builder()
        .hosts(2)
        .links_per_host(4)
        .shape(0, "40mbit")
        .shape(1, "40mbit")
        .shape(2, "40mbit")
        .shape(3, "40mbit")
        .build()
        .unwrap();
    let (mut server, port) = start_server(&tb, 1);
    let before: Vec<u64> = (0..4).map(|k| tx_bytes(&tb, 0, k)).collect();
    let target = format!("{}:{port}", tb.addr(1, 0));
    let v = run_client(
        &tb,
        &[
            "--client",
            &target,
            "--ifaces",
            "eth0,eth1,eth2,eth3",
            "--streams",
            "4",
            "--duration",
            "2",
            "--verify",
        ],
    );
    let _ = server.wait();
    let streams = v["per_stream"].as_array().unwrap();
    assert_eq!(streams.len(), 4);
    for (k, s) in streams.iter().enumerate() {
        assert_eq!(s["interface"], format!("eth{k}"));
        // The server saw the stream arrive from this host's address on link k.
        assert_eq!(s["local_addr"], tb.addr(0, k).to_string());
        // And link k's own counter carried it.
        let sent = tx_bytes(&tb, 0, k) - before[k];
        let bytes = s["bytes"].as_u64().unwrap();
        assert!(
            bytes > 0 && sent >= bytes,
            "link {k}: {sent} on the wire, {bytes} reported"
        );
    }
    // Four links of 40 Mb/s: the aggregate is their sum, give or take the bucket and headers.
    let avg = v["results"][0]["bw_avg_gbps"].as_f64().unwrap();
    assert!(
        (0.125..=0.168).contains(&avg),
        "aggregate {avg} Gb/s for 4 x 40 Mb/s"
    );
}

#[test]
fn local_addresses_pair_with_the_server_address_on_their_subnet() {
    if skip() {
        return;
    }
    let tb = Testbed::builder()
        .hosts(2)
        .links_per_host(2)
        .build()
        .unwrap();
    let (mut server, port) = start_server(&tb, 1);
    let before = tx_bytes(&tb, 0, 1);
    let target = format!("{}:{port}", tb.addr(1, 0));
    let locals = format!("{},{}", tb.addr(0, 0), tb.addr(0, 1));
    let v = run_client(
        &tb,
        &[
            "--client",
            &target,
            "--local-addrs",
            &locals,
            "--streams",
            "2",
            "--iters",
            "200",
        ],
    );
    let _ = server.wait();
    assert_eq!(v["per_stream"][1]["local_addr"], tb.addr(0, 1).to_string());
    // Stream 1 left on link 1 (to the server's 10.77.1.2), not routed through link 0.
    assert!(tx_bytes(&tb, 0, 1) - before >= 200 * 65536);
}

#[test]
fn a_slow_link_shows_in_the_per_stream_breakdown() {
    if skip() {
        return;
    }
    let tb = Testbed::builder()
        .hosts(2)
        .links_per_host(2)
        .shape(0, "80mbit")
        .shape_host(0, 1, "10mbit")
        .build()
        .unwrap();
    let (mut server, port) = start_server(&tb, 1);
    let target = format!("{}:{port}", tb.addr(1, 0));
    let v = run_client(
        &tb,
        &[
            "--client",
            &target,
            "--ifaces",
            "eth0,eth1",
            "--streams",
            "2",
            "--duration",
            "2",
        ],
    );
    let _ = server.wait();
    let gbps = |k: usize| v["per_stream"][k]["bw_avg_gbps"].as_f64().unwrap();
    assert!(gbps(0) > 0.06 && gbps(0) <= 0.082, "eth0: {} Gb/s", gbps(0));
    assert!(
        gbps(1) > 0.007 && gbps(1) <= 0.0105,
        "eth1: {} Gb/s",
        gbps(1)
    );
}
