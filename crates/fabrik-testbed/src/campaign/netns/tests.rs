use super::*;

#[test]
fn the_error_names_the_ranks_it_blames() {
    let err = "fabrik: rank 0 in the pair matrix: the run was aborted: rank 5 (node5, 10.77.0.6) died or exited (its control connection closed); rank 0: rank 5 (node5, 10.77.0.6): connection closed";
    assert_eq!(blamed_ranks(err), vec![5]);
    let never = "fabrik: rank 0 joining the job: rendezvous: rank 3 never joined within 16 s (world size 8)";
    assert_eq!(blamed_ranks(never), vec![3]);
    let silent = "rank 2 (node2, 10.77.0.3) is silent: its peers gave up on it";
    assert_eq!(blamed_ranks(silent), vec![2]);
    assert!(blamed_ranks("rank 0: sending: timed out").is_empty());
}

#[test]
fn a_matrix_names_its_culprits() {
    let out = r#"{"culprits":[{"kind":"node","hosts":["node3"]},{"kind":"link","hosts":["node1","node6"]},{"kind":"undecided","hosts":[]}]}"#;
    assert_eq!(
        named_by_matrix(out, ""),
        vec![
            Entity::Host("node3".into()),
            Entity::Link("node1".into(), "node6".into()),
            Entity::Fabric
        ]
    );
    assert!(named_by_matrix(r#"{"links":[]}"#, "").is_empty());
}

#[test]
fn every_class_is_drawn_and_victims_stay_in_range() {
    let mut rng = Rng::with_seed(7);
    for _ in 0..50 {
        let c = cases(&mut rng, true);
        assert_eq!(c.len(), 12);
        for (_, faults) in &c {
            for f in faults {
                let e = f.culprit();
                let ok = match &e {
                    Entity::Host(h) => h.starts_with("node"),
                    Entity::Link(a, b) => a != b,
                    _ => false,
                };
                assert!(ok, "{f:?}");
            }
        }
    }
    assert_eq!(cases(&mut rng, false).len(), 11);
}
