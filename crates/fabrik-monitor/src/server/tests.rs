use super::*;

/// The CLI prints errors as anyhow's chain (`{:#}`): the OS message must appear once.
#[test]
fn the_chain_names_the_os_error_once() {
    let os = io::Error::from_raw_os_error(24);
    let text = os.to_string();
    let chain = format!("{:#}", anyhow::Error::new(ServerError::Serve(os)));
    assert!(
        chain.starts_with("the exporter's server stopped: "),
        "{chain}"
    );
    assert_eq!(chain.matches(&text).count(), 1, "{chain}");
}

fn track(ip: [u8; 4], idle_ms: u64) -> (u64, Arc<Track>) {
    let t = Track::new(IpAddr::from(ip));
    let born = Instant::now() - Duration::from_millis(idle_ms + 1);
    let t = Track { born, ..t };
    (u64::from(ip[3]) * 1000 + idle_ms, Arc::new(t))
}

#[test]
fn room_is_made_by_the_heaviest_address_then_by_the_idle() {
    let open: Open = Arc::default();
    // A full server: five connections from .2, one from .3.
    for i in 0..5 {
        lock(&open).push(track([127, 0, 0, 2], 10 * i));
    }
    lock(&open).push(track([127, 0, 0, 3], 5000));
    let newcomer = IpAddr::from([127, 0, 0, 9]);
    assert!(make_room(&open, newcomer, 6));
    let closed: Vec<IpAddr> = lock(&open)
        .iter()
        .filter(|(_, t)| t.closing.load(Ordering::Relaxed))
        .map(|(_, t)| t.ip)
        .collect();
    // The heavy address gave one up, not the idler connection of the light one.
    assert_eq!(closed, vec![IpAddr::from([127, 0, 0, 2])]);

    // Everyone holds one and nobody is idle: the newcomer waits.
    let open: Open = Arc::default();
    for i in 2..6u8 {
        lock(&open).push(track([127, 0, 0, i], 0));
    }
    assert!(!make_room(&open, newcomer, 4));
    // One idle for a second makes room.
    lock(&open).push(track([127, 0, 0, 7], 2000));
    assert!(make_room(&open, newcomer, 5));
    // The heavy address itself never evicts its own for fairness.
    let open: Open = Arc::default();
    for i in 0..4 {
        lock(&open).push(track([127, 0, 0, 2], i));
    }
    assert!(!make_room(&open, IpAddr::from([127, 0, 0, 2]), 4));
}
