//! The netns fault classes, one case each, drawn from the seeded generator.

use super::{Fault, Rng, HOSTS};

/// The fault classes, one case each, drawn from `rng`: victims, rates, shares and MTUs.
/// `netem` adds the delay class.
pub fn cases(rng: &mut Rng, netem: bool) -> Vec<(String, Vec<Fault>)> {
    let any = |rng: &mut Rng| rng.usize(0..HOSTS);
    // Rank 0 carries the control channel; faults that cut a host off entirely (a black hole
    // swallows its large control messages, a firewall its connections) would be named as rank
    // 0's silence, so their victims are other ranks.
    let not_root = |rng: &mut Rng| rng.usize(1..HOSTS);
    let pair = |rng: &mut Rng| {
        let a = rng.usize(0..HOSTS);
        let mut b = rng.usize(0..HOSTS - 1);
        if b >= a {
            b += 1;
        }
        (a, b)
    };
    let rate =
        |rng: &mut Rng| ["100mbit", "200mbit", "500mbit", "1gbit"][rng.usize(0..4)].to_string();
    let pct = |rng: &mut Rng, lo: f64, hi: f64| lo + (hi - lo) * rng.f64();
    let mut c: Vec<(String, Vec<Fault>)> = Vec::new();
    c.push((
        "host rate".into(),
        vec![Fault::HostRate {
            h: any(rng),
            rate: rate(rng),
        }],
    ));
    let (a, b) = pair(rng);
    c.push((
        "link rate".into(),
        vec![Fault::LinkRate {
            a,
            b,
            rate: rate(rng),
        }],
    ));
    let dir = rng.usize(0..3);
    c.push((
        "host loss".into(),
        vec![Fault::HostLoss {
            h: any(rng),
            pct: pct(rng, 1.0, 5.0),
            input: dir != 1,
            output: dir != 0,
        }],
    ));
    let (a, b) = pair(rng);
    c.push((
        "link loss".into(),
        vec![Fault::LinkLoss {
            a,
            b,
            pct: pct(rng, 1.5, 5.0),
        }],
    ));
    if netem {
        c.push((
            "host delay".into(),
            vec![Fault::HostDelay {
                h: any(rng),
                ms: rng.u32(2..20),
            }],
        ));
    }
    let mtu = [9000, 4200, 9216, 1400, 1280][rng.usize(0..5)];
    c.push((
        "MTU mismatch".into(),
        vec![Fault::MtuMismatch { h: any(rng), mtu }],
    ));
    let limit = [1280, 1400, 1450][rng.usize(0..3)];
    c.push((
        "MTU black hole".into(),
        vec![Fault::BlackHole {
            h: not_root(rng),
            limit,
        }],
    ));
    let (a, b) = loop {
        let p = pair(rng);
        if p.0 != 0 && p.1 != 0 {
            break p;
        }
    };
    c.push((
        "firewalled pair".into(),
        vec![Fault::Firewall {
            a,
            b,
            reject: rng.bool(),
        }],
    ));
    c.push((
        "small TCP buffers".into(),
        vec![Fault::TcpBuffers { h: any(rng) }],
    ));
    c.push((
        "rank never starts".into(),
        vec![Fault::NeverStarts { h: not_root(rng) }],
    ));
    c.push((
        "rank killed mid-run".into(),
        vec![Fault::Killed {
            h: not_root(rng),
            rounds: rng.u32(1..6),
        }],
    ));
    // Two at once, on two hosts: two of the host faults that leave the control channel whole.
    let (x, y) = pair(rng);
    let pick = |rng: &mut Rng, h: usize| match rng.usize(0..4) {
        0 => Fault::HostLoss {
            h,
            pct: pct(rng, 1.5, 5.0),
            input: true,
            output: false,
        },
        1 => Fault::HostRate { h, rate: rate(rng) },
        2 => Fault::TcpBuffers { h },
        _ => Fault::MtuMismatch { h, mtu: 9000 },
    };
    let first = pick(rng, x);
    let second = pick(rng, y);
    c.push(("two faults at once".into(), vec![first, second]));
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::campaign::Entity;

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
}
