use super::format::{render_sample, Pattern};
use super::*;

#[test]
fn the_data_files_parse_completely() {
    let c = catalog();
    assert!(
        c.malformed.is_empty(),
        "malformed data lines: {:?}",
        c.malformed
    );
    let rows = [MESSAGES, RCCL_MESSAGES]
        .iter()
        .flat_map(|f| f.lines())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .count();
    assert_eq!(c.messages.len(), rows);
    assert!(c.messages.len() > 2000, "{} messages", c.messages.len());
    for src in ["nccl", "ofi", "sharp", "tcpx", "fastrak", "rccl", "anp"] {
        assert!(
            c.messages
                .iter()
                .any(|m| m.source == src && m.kind == Kind::Warn),
            "no WARN of {src}"
        );
    }
    for cl in c.classes {
        assert!(cl.rule.starts_with("FAB-"), "{}", cl.rule);
        for (what, text) in [("title", cl.title), ("means", cl.means), ("fix", cl.fix)] {
            assert!(text.len() > 10, "{} has no {what}", cl.rule);
        }
        assert!(!cl.sources.is_empty(), "{} cites no source", cl.rule);
        for s in &cl.sources {
            assert!(s.url.starts_with("https://"), "{}: {}", cl.rule, s.url);
        }
    }
}

/// A `match` line that claims no extracted WARN format is stale (the message changed or never
/// existed): it would classify nothing.
#[test]
fn every_claim_names_real_messages() {
    let c = catalog();
    let mut stale = Vec::new();
    for cl in c.classes {
        for claim in &cl.claims {
            let (src, prefix) = split_claim(claim);
            if !c.messages.iter().any(|m| {
                m.kind == Kind::Warn
                    && m.format.starts_with(prefix)
                    && src.is_none_or(|s| claim_covers(s, m.source))
            }) {
                stale.push(format!("{}: `{claim}`", cl.rule));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "claims matching no message of the sources:\n{}",
        stale.join("\n")
    );
}

/// Every catalogued format, rendered with sample arguments, is recognised as itself (or as a
/// format at least as specific that prints the same text).
#[test]
fn every_entry_matches_a_line_rendered_from_its_format() {
    let c = catalog();
    let mut failures = Vec::new();
    for (i, m) in c.messages.iter().enumerate() {
        let line = render_sample(&m.format);
        if !Pattern::compile(&m.format).matches(line.as_bytes()) {
            failures.push(format!("pattern of {:?} rejects {line:?}", m.format));
            continue;
        }
        if m.kind != Kind::Warn || Pattern::compile(&m.format).literal_len < MIN_LITERAL {
            continue;
        }
        match c.lookup(line.as_bytes()) {
            Some(found) if std::ptr::eq(found, &c.messages[i]) => {}
            Some(found) => {
                let a = Pattern::compile(&m.format).literal_len;
                let b = Pattern::compile(&found.format).literal_len;
                // Another format printed the same text and says at least as much.
                if b < a || !Pattern::compile(&found.format).matches(line.as_bytes()) {
                    failures.push(format!("{:?} resolved to {:?}", m.format, found.format));
                }
            }
            None => failures.push(format!("{:?}: lookup found nothing for {line:?}", m.format)),
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn real_messages_get_their_class() {
    // Each line is a WARN message as printed in a public report.
    let cases: &[(&str, &str)] = &[
        // NVIDIA-NeMo/RL#3155 (NCCL 2.2x): `init.cc:904 NCCL WARN Duplicate GPU detected : ...`
        (
            "Duplicate GPU detected : rank 15 and rank 7 both on CUDA device e4000",
            "FAB-NCCL-DUP-GPU",
        ),
        // issue text of the catalog task (NCCL 2.19)
        (
            "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1b000",
            "FAB-NCCL-DUP-GPU",
        ),
        (
            "Mismatched NCCL version detected : rank 8 version 22105 rank 0 version 21903",
            "FAB-NCCL-VERSION-MISMATCH",
        ),
        (
            "NET/IB : mlx5_2:1 async fatal event: local catastrophic error",
            "FAB-NCCL-IB-ASYNC",
        ),
        (
            "Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 1 'invalid argument'.",
            "FAB-NCCL-NVLS",
        ),
        (
            "NET/IB : Unable to open device mlx5_3",
            "FAB-NCCL-IB-DEVICE",
        ),
        (
            "Bootstrap Root : rank 3 of 8 ranks has already checked in",
            "FAB-NCCL-BOOTSTRAP-MISMATCH",
        ),
        (
            "Invalid NCCL_COMM_ID, please use format: <ipv4>:<port> or [<ipv6>]:<port> or <hostname>:<port>",
            "FAB-NCCL-COMM-ID",
        ),
        (
            "NET/OFI Couldn't open a fabric provider. RC: -61, ERROR: No data available",
            "FAB-NCCL-OFI-PROVIDER",
        ),
        // fixtures/nccl-logs/116 (aws-ofi-nccl 1.17.1 on a p4d.24xlarge, nccl_net_ofi_create_plugin)
        (
            "NET/OFI Failed to initialize sendrecv protocol",
            "FAB-NCCL-OFI-INIT",
        ),
        (
            "NET/OFI aws-ofi-nccl initialization failed",
            "FAB-NCCL-OFI-INIT",
        ),
        ("NET/OFI Initializing plugin failed", "FAB-NCCL-OFI-INIT"),
    ];
    for (msg, rule) in cases {
        let got = classify(msg.as_bytes()).map(|c| c.rule);
        assert_eq!(got, Some(*rule), "{msg}");
    }
}

#[test]
fn lookup_is_anchored_and_picks_the_most_specific() {
    let c = catalog();
    // Text before the message is not a catalogued message.
    assert!(c
        .lookup(b"xx Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1b000")
        .is_none());
    // `NET/IB : Got completion from peer %s with error ...` of 2.18 over shorter forms.
    let m = c
        .lookup(b"NET/IB : Got completion from peer 10.1.1.2<51247> with error 12, opcode 0, len 0, vendor err 129 (Send)")
        .map(|m| m.first);
    assert_eq!(m, Some("v2.18.1-1"));
}

#[test]
fn every_log_rule_has_a_page() {
    let rules = rules();
    assert_eq!(rules.len(), catalog().classes.len());
    let mut seen = std::collections::BTreeSet::new();
    for r in rules {
        assert!(seen.insert(r.id), "duplicate rule {}", r.id);
        assert_eq!(r.scope, Scope::Log);
        assert!(r.checks.len() > 10 && r.evidence.len() > 10, "{}", r.id);
    }
}

/// Only WARN lines reach the catalog, and each tries few patterns in full: the leading-literal
/// index keeps the work per line small whatever the catalog's size.
#[test]
fn lookup_work_per_message_is_small() {
    let c = catalog();
    let mut worst = (0, String::new());
    let mut total = 0usize;
    let mut n = 0usize;
    for m in c.messages.iter().filter(|m| m.kind == Kind::Warn) {
        let line = render_sample(&m.format);
        let k = c.candidates(line.as_bytes());
        total += k;
        n += 1;
        if k > worst.0 {
            worst = (k, line);
        }
    }
    let mean = total as f64 / n as f64;
    assert!(mean < 4.0, "mean {mean:.1} candidates per message");
    assert!(worst.0 <= 16, "{} candidates for {:?}", worst.0, worst.1);
    let lines: Vec<String> = c
        .messages
        .iter()
        .filter(|m| m.kind == Kind::Warn)
        .map(|m| render_sample(&m.format))
        .collect();
    let start = std::time::Instant::now();
    let mut hits = 0;
    for line in &lines {
        hits += usize::from(c.lookup(line.as_bytes()).is_some());
    }
    let looked_up = start.elapsed();
    let start = std::time::Instant::now();
    let fresh = Catalog::parse(&[MESSAGES, RCCL_MESSAGES]);
    eprintln!(
        "{n} WARN formats: mean {mean:.1} candidates, worst {} ({:?}); all looked up in {looked_up:?}, {hits} found; catalog of {} built in {:?}",
        worst.0,
        worst.1,
        fresh.messages.len(),
        start.elapsed()
    );
}

#[test]
fn a_message_cut_in_its_leading_text_is_found_only_when_one_class_fits() {
    let c = catalog();
    // NCCL 2.17+ proxy.cc prints `Socket recv failed while polling for opId=%p`; a pasted
    // excerpt (pytorch/ci-infra#490) cut it after `failed`.
    let whole = c
        .lookup(b"Socket recv failed while polling for opId=0x7f00")
        .map(|m| m.format.clone());
    let cut = c.lookup(b"Socket recv failed").map(|m| m.format.clone());
    assert!(whole.is_some());
    assert_eq!(cut, whole);
    // Cut inside a conversion: `%s` of `[Proxy Service %d] Failed to execute operation %s ...`.
    let proxy = c
        .lookup(b"[Proxy Service 3] Failed to execute operation Set")
        .map(|m| m.format.as_str());
    assert_eq!(
        proxy,
        Some("[Proxy Service %d] Failed to execute operation %s from rank %d, retcode %d")
    );
    // Too short to say which format was cut.
    assert!(c.lookup(b"Socket").is_none());
    // Text no format starts with stays unknown.
    assert!(c
        .lookup(b"Socket recv failed entirely unlike NCCL")
        .is_none());
}
