use super::*;
use fabrik_model::{PairMatrix, ResultSource};

use crate::testkit::collective as coll;

fn matrix() -> PairMatrix {
    let hosts = (0..4).map(|r| format!("node<{r}>")).collect();
    crate::testkit::pair_matrix(hosts, Some(20.0), &[((1, 3), 0.1)])
}

fn named(name: &str, input: ReportInput) -> Named {
    Named {
        name: name.into(),
        input,
        findings: vec![],
    }
}

#[test]
fn inputs_are_recognised_by_shape() {
    let c = serde_json::to_string(&coll("all_reduce", ResultSource::Fabrik)).unwrap();
    assert!(matches!(
        classify("c.json", &c).unwrap()[0].input,
        ReportInput::Collective(_)
    ));
    let m = serde_json::to_string(&matrix()).unwrap();
    assert!(matches!(
        classify("m.json", &m).unwrap()[0].input,
        ReportInput::Matrix(_)
    ));
    assert!(matches!(
        classify("f.json", "[]").unwrap()[0].input,
        ReportInput::Findings
    ));
    // Several runs in one file (a parsed nccl-tests log with two runs).
    let two = format!("[{c},{c}]");
    assert_eq!(classify("two.json", &two).unwrap().len(), 2);
    assert!(classify("x.json", "{\"hello\": 1}").is_err());
    assert!(classify("x.json", "not json").is_err());
}

#[test]
fn page_is_self_contained_and_shows_everything() {
    let inputs = vec![
        named(
            "fabrik.json",
            ReportInput::Collective(coll("all_reduce", ResultSource::Fabrik)),
        ),
        named(
            "nccl.json",
            ReportInput::Collective(coll("all_reduce", ResultSource::NcclTests)),
        ),
        named(
            "ag.json",
            ReportInput::Collective(coll("all_gather", ResultSource::Fabrik)),
        ),
        named("m.json", ReportInput::Matrix(Box::new(matrix()))),
    ];
    let r = render(&inputs).unwrap();
    assert_eq!(r.plots.len(), 3);
    assert!(r.html.contains("<svg"));
    assert!(r.html.contains("all_reduce: bus bandwidth"));
    assert!(r.html.contains("nccl.json (nccl-tests, 4 ranks)"));
    // The planted slow link is named, with the host names escaped.
    assert!(
        r.html
            .contains("Slow link: rank 1 (node&lt;1&gt;) &rarr; rank 3"),
        "{}",
        r.html
    );
    // Nothing is fetched: no external references of any kind (the SVG namespace name is an
    // identifier, never loaded).
    let page = r.html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    for needle in [
        "http://", "https://", "<script", "<link", "@import", "url(", "href=", "src=",
    ] {
        assert!(!page.contains(needle), "found {needle}");
    }
}

#[test]
fn heatmap_red_means_a_reported_slow_link_and_nothing_else() {
    let red = "#B00020";
    let slow = heatmap(&matrix()).unwrap();
    assert!(
        slow.to_uppercase().contains(red),
        "the planted slow link is red"
    );
    assert!(slow.contains("slow: below"), "a legend");
    assert!(slow.contains("20.0 \u{b5}s"), "latency in the cells");
    // Every link alike, one at 80% of the others: no slow link is reported, so no red.
    let mut even = matrix();
    for l in &mut even.links {
        l.gbps = 10.0;
    }
    even.links[5].gbps = 9.5;
    let hosts = even.hosts.clone();
    even.analysis = fabrik_cluster::pairs::analyze(&even.links, &hosts, 4);
    assert!(even.analysis.slow_links.is_empty());
    let svg = heatmap(&even).unwrap().to_uppercase();
    assert!(!svg.contains(red));
    let page = render(&[named("m.json", ReportInput::Matrix(Box::new(even)))]).unwrap();
    assert!(page.html.contains("No slow links or nodes."));
    assert!(page.html.contains("Verdict: no errors."));
}

#[test]
fn busbw_uses_a_log_axis() {
    let mut slow = coll("all_reduce", ResultSource::Fabrik);
    for r in &mut slow.rows {
        if let Some(t) = r.out_of_place.as_mut() {
            t.busbw /= 300.0;
        }
    }
    let fast = coll("all_reduce", ResultSource::NcclTests);
    let svg = busbw_plot(
        "all_reduce",
        &[("tcp".into(), &slow), ("nvlink".into(), &fast)],
    )
    .unwrap();
    assert!(svg.contains("log scale"));
    // Decade ticks spanning both runs (a linear axis to 100 would label 0, 20, 40...).
    let labels: Vec<&str> = svg.lines().map(str::trim).collect();
    for tick in ["0.1", "1", "10", "100"] {
        assert!(labels.contains(&tick), "{tick}");
    }
    assert!(!labels.contains(&"20"));
}

#[test]
fn an_aborted_or_cut_run_is_never_a_green_zero() {
    let mut aborted = coll("all_reduce", ResultSource::Fabrik);
    aborted
        .notes
        .push("aborted: rank 1 (node-b): connection reset".into());
    let mut cut = coll("all_reduce", ResultSource::NcclTests);
    cut.avg_busbw = None;
    let done = coll("all_gather", ResultSource::NcclTests);
    assert!(collective_incomplete(&done).is_none());
    let page = render(&[
        named("aborted.json", ReportInput::Collective(aborted)),
        named("cut.json", ReportInput::Collective(cut)),
        named("done.json", ReportInput::Collective(done)),
    ])
    .unwrap()
    .html;
    assert!(page.contains("aborted: rank 1 (node-b): connection reset"));
    assert!(page.contains("incomplete: no &quot;# Avg bus bandwidth&quot; line"));
    assert_eq!(page.matches("<td class=\"ok\">0</td>").count(), 1, "{page}");
    assert!(page.contains("Verdict: not healthy"));
}
