//! `ports/N/rate` of an InfiniBand or RoCE port (`drivers/infiniband/core/sysfs.c`, `rate_show`).

use fabrik_model::LinkRate;

use super::Format;

/// `ports/N/rate` as the kernel writes it: `400 Gb/sec (4X NDR)`, `2.5 Gb/sec (1X)` (SDR has no
/// speed name), `56 Gb/sec (4X FDR)`. `None` for an empty text; a text without a number keeps
/// it whole with no Gb/s.
pub struct IbRate;

impl Format for IbRate {
    type Facts = LinkRate;
    const EXPECTED: &'static str = "an InfiniBand rate (`400 Gb/sec (4X NDR)`)";

    fn parse(text: &str) -> Option<LinkRate> {
        parse_rate(text)
    }
}

fn parse_rate(raw: &str) -> Option<LinkRate> {
    let text = raw.trim();
    if text.is_empty() {
        return None;
    }
    let gbps = text
        .split_whitespace()
        .next()
        .and_then(|n| n.parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
        .filter(|_| text.contains("Gb/sec"));
    let (mut width, mut speed) = (None, None);
    if let (Some(open), Some(close)) = (text.find('('), text.rfind(')')) {
        if open < close {
            let inner = &text[open + 1..close];
            let mut parts = inner.split_whitespace();
            if let Some(w) = parts.next() {
                width = w
                    .strip_suffix('X')
                    .or_else(|| w.strip_suffix('x'))
                    .and_then(|n| n.parse::<u32>().ok());
            }
            speed = parts.next().map(str::to_string);
            if width.is_some() && speed.is_none() && gbps.is_some() {
                // The kernel prints no name for SDR lanes.
                speed = Some("SDR".to_string());
            }
        }
    }
    Some(LinkRate {
        text: text.to_string(),
        gbps,
        width,
        speed,
    })
}
