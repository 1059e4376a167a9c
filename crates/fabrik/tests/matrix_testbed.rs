//! `fabrik cluster matrix` between network-namespace hosts (root only; skips with a message
//! otherwise, and fails where `FABRIK_REQUIRE_TESTBEDS=1`): the second pass tells a bad node (one host's link shaped with tc tbf) from a
//! bad link (one destination shaped with an htb class and a u32 filter), and the per-rail mode
//! runs one matrix per rail with one rail of one host shaped.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Output;

use fabrik_testbed::{skip_reason, Testbed};
use serde_json::Value;

fn skip() -> bool {
    if let Some(why) = skip_reason() {
        fabrik_testbed::skip("the namespace matrix test", &why);
        return true;
    }
    false
}

/// Runs one matrix rank per host (host h is rank h, rank 0's rendezvous on its link 0) with
/// `args` (plus `extra(h)`), and returns every rank's output.
fn run_ranks(tb: &Testbed, args: &[&str], extra: impl Fn(usize) -> Vec<String>) -> Vec<Output> {
    // One matrix at a time: three at once on a small machine make noise the analysis sees.
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let fabrik = assert_cmd::cargo::cargo_bin("fabrik");
    let n = tb.hosts();
    let children: Vec<_> = (0..n)
        .map(|h| {
            tb.command(h, &fabrik.to_string_lossy())
                .args(["cluster", "matrix"])
                .args(args)
                .args(extra(h))
                .args(["--name", &format!("node{h}"), "--timeout", "60"])
                .env("RANK", h.to_string())
                .env("WORLD_SIZE", n.to_string())
                .env("LOCAL_RANK", "0")
                .env("MASTER_ADDR", tb.addr(0, 0).to_string())
                .env("MASTER_PORT", "29611")
                .env("FABRIK_TOKEN", "tb-token")
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect()
}

/// Rank 0's JSON; rank 0 must have exited `code`, the others 0 (only rank 0 judges).
fn root_json(outs: &[Output], code: i32) -> Value {
    for (r, o) in outs.iter().enumerate() {
        assert_eq!(
            o.status.code(),
            Some(if r == 0 { code } else { 0 }),
            "rank {r}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    serde_json::from_slice(&outs[0].stdout).unwrap()
}

fn verdicts(m: &Value) -> Vec<(String, Vec<u64>)> {
    m["isolation"]["verdicts"]
        .as_array()
        .unwrap_or_else(|| panic!("no second pass: {m}"))
        .iter()
        .map(|v| {
            let ranks = v["ranks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r.as_u64().unwrap())
                .collect();
            (v["kind"].as_str().unwrap().to_string(), ranks)
        })
        .collect()
}

/// The verdicts that blame something: a link or node the busy machine's noise slowed in the
/// matrix comes out of the second pass as `not_reproduced`, which blames nothing.
fn blamed(m: &Value) -> Vec<(String, Vec<u64>)> {
    verdicts(m)
        .into_iter()
        .filter(|(kind, _)| kind != "not_reproduced")
        .collect()
}

// A shaped transfer takes 0.4 s; smaller ones let a busy machine's scheduling noise flag
// unshaped links too. One 1 MiB transfer crosses a veth pair in about 150 µs, where one
// descheduled thread halves its rate: three (the command's default) make each link's rate
// more than one scheduling slice.
const SMALL: [&str; 6] = ["--size", "1M", "--iters", "3", "--format", "json"];

#[test]
fn a_host_shaped_on_its_nic_is_a_bad_node() {
    if skip() {
        return;
    }
    let tb = Testbed::builder()
        .hosts(6)
        .shape_host(3, 0, "20mbit")
        .build()
        .unwrap();
    let m = root_json(&run_ranks(&tb, &SMALL, |_| vec![]), 1);
    assert_eq!(m["analysis"]["slow_nodes"][0]["rank"], 3, "{m}");
    assert_eq!(blamed(&m), vec![("node".to_string(), vec![3])], "{m}");
    let iso = &m["isolation"];
    assert!(
        iso["suspects"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!(3)),
        "{m}"
    );
    // The evidence: rank 3 both ways with three nodes that passed, each below the line.
    let at = verdicts(&m).iter().position(|v| v.0 == "node").unwrap();
    let ev = iso["verdicts"][at]["evidence"].as_array().unwrap();
    assert_eq!(ev.len(), 6, "{ev:?}");
    for e in ev {
        assert!(e["src"] == 3 || e["dst"] == 3, "{e}");
        assert_eq!(e["slow"], true, "{e}");
        assert!(e["gbps"].as_f64().unwrap() < 0.05, "{e}");
    }
}

#[test]
fn one_shaped_destination_is_a_bad_link_not_a_bad_node() {
    if skip() {
        return;
    }
    let tb = Testbed::builder().hosts(6).build().unwrap();
    // Host 2's traffic to host 4 only, through a 20 Mb/s htb class.
    tb.shape_path(2, 0, 4, "20mbit").unwrap();
    let m = root_json(&run_ranks(&tb, &SMALL, |_| vec![]), 1);
    // The one lasting fault is the link; anything else the busy machine's noise flagged in the
    // matrix must come out of the second pass as not reproduced, not as a bad node or link.
    let all = verdicts(&m);
    let at = all
        .iter()
        .position(|v| *v == ("link".to_string(), vec![2, 4]))
        .unwrap_or_else(|| panic!("no bad-link verdict for 2-4: {m}"));
    for (k, v) in all.iter().enumerate() {
        assert!(k == at || v.0 == "not_reproduced", "{v:?}: {m}");
    }
    let v = &m["isolation"]["verdicts"][at];
    // 2 -> 4 shaped in the matrix and again; every measurement of 2 and 4 with the good nodes
    // at veth pace, far above the 20 Mb/s class (the line itself moves with the machine's load).
    for e in v["evidence"].as_array().unwrap() {
        let (src, dst, gbps) = (&e["src"], &e["dst"], e["gbps"].as_f64().unwrap());
        if src == 2 && dst == 4 {
            assert_eq!(e["slow"], true, "{e}");
            assert!(gbps < 0.05, "{e}");
        } else {
            assert!(gbps > 0.1, "{e}");
        }
    }
    let passes: Vec<&str> = v["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["src"] == 2 && e["dst"] == 4)
        .map(|e| e["pass"].as_str().unwrap())
        .collect();
    assert_eq!(passes, ["matrix", "second"], "{v}");
    // The matrix's two directions, the retest's two, and each end both ways with up to 3 good
    // nodes (fewer when noise made more suspects).
    let good = m["isolation"]["good"].as_array().unwrap().len().min(3);
    assert_eq!(v["evidence"].as_array().unwrap().len(), 4 + 4 * good, "{v}");
}

#[test]
fn per_rail_runs_a_matrix_on_each_rail_and_finds_the_shaped_one() {
    if skip() {
        return;
    }
    let tb = Testbed::builder()
        .hosts(6)
        .links_per_host(2)
        .shape_host(1, 1, "20mbit")
        .build()
        .unwrap();
    let outs = run_ranks(&tb, &SMALL, |h| {
        vec![
            "--per-rail".into(),
            "--data-ip".into(),
            format!("{},{}", tb.addr(h, 0), tb.addr(h, 1)),
        ]
    });
    let v = root_json(&outs, 1);
    let rails = v["rails"].as_array().unwrap();
    assert_eq!(rails.len(), 2, "{v}");
    assert_eq!(rails[0]["rail"], 0);
    assert_eq!(rails[1]["rail"], 1);
    // Rail 0 carries host 1's traffic at veth pace (its shaped NIC is rail 1's); whatever the
    // shared machine's noise flags there, host 1 is not a bad node on it.
    let at = |rail: &Value, slow: bool| -> usize {
        rail["links"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| {
                (l["src"] == 1 || l["dst"] == 1) && (l["gbps"].as_f64().unwrap() < 0.05) == slow
            })
            .count()
    };
    assert_eq!(at(&rails[0], false), 10, "{}", rails[0]);
    if rails[0].get("isolation").is_some() {
        assert!(!verdicts(&rails[0]).contains(&("node".to_string(), vec![1])));
    }
    assert_eq!(
        blamed(&rails[1]),
        vec![("node".to_string(), vec![1])],
        "{}",
        rails[1]
    );
    assert_eq!(
        at(&rails[1], true),
        10,
        "host 1's 10 directed links on rail 1"
    );
}
