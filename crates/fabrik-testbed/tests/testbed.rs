//! Builds real testbeds (root only; skips with a message otherwise, and fails where
//! `FABRIK_REQUIRE_TESTBEDS=1`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use fabrik_testbed::{skip_reason, Testbed};

fn skip() -> bool {
    if let Some(why) = skip_reason() {
        fabrik_testbed::skip("the testbed test", &why);
        return true;
    }
    false
}

fn netns_exists(name: &str) -> bool {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .any(|l| l.split_whitespace().next() == Some(name))
}

#[test]
fn hosts_reach_each_other_on_every_link_and_vanish_on_drop() {
    if skip() {
        return;
    }
    let tb = Testbed::builder()
        .hosts(8)
        .links_per_host(2)
        .build()
        .unwrap();
    for link in 0..2 {
        let to = tb.addr(7, link).to_string();
        let out = tb.exec(0, &["ping", "-c1", "-W2", &to]).unwrap();
        assert!(out.status.success(), "ping {to} over link {link}: {out:?}");
    }
    let shown = tb
        .exec(1, &["ip", "-4", "-o", "addr", "show", "dev", "eth1"])
        .unwrap();
    assert!(String::from_utf8_lossy(&shown.stdout).contains("10.77.1.2/24"));
    let names: Vec<String> = (0..8).map(|h| tb.netns(h)).collect();
    let missing: Vec<&String> = names.iter().filter(|n| !netns_exists(n)).collect();
    assert!(missing.is_empty(), "missing namespaces: {missing:?}");
    drop(tb);
    assert!(
        names.iter().all(|n| !netns_exists(n)),
        "namespaces left: {names:?}"
    );
}

#[test]
fn a_panicking_test_still_tears_down() {
    if skip() {
        return;
    }
    let mut name = String::new();
    let mut child = None;
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let tb = Testbed::builder().hosts(2).build().unwrap();
        name = tb.netns(0);
        child = Some(tb.spawn(1, &["sleep", "30"]).unwrap());
        panic!("test failure inside the testbed");
    }));
    assert!(caught.is_err());
    assert!(
        !name.is_empty() && !netns_exists(&name),
        "{name} was left behind"
    );
    // The process started inside the testbed was killed with it, not left running.
    let status = child.unwrap().wait().unwrap();
    assert!(!status.success(), "{status:?}");
}

#[test]
fn shaped_links_carry_a_tbf_qdisc_at_the_rate() {
    if skip() {
        return;
    }
    let tb = Testbed::builder()
        .hosts(2)
        .links_per_host(2)
        .shape_host(1, 1, "50mbit")
        .build()
        .unwrap();
    let q = tb.exec(1, &["tc", "qdisc", "show", "dev", "eth1"]).unwrap();
    let text = String::from_utf8_lossy(&q.stdout);
    assert!(text.contains("tbf") && text.contains("50Mbit"), "{text}");
    let q0 = tb.exec(0, &["tc", "qdisc", "show", "dev", "eth1"]).unwrap();
    assert!(!String::from_utf8_lossy(&q0.stdout).contains("tbf"));
}
