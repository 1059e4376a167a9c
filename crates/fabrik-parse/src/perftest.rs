//! perftest reports (`ib_write_bw`, `ib_read_bw`, `ib_send_bw`, `ib_*_lat`, every version's
//! header and table) into [`P2pReport`].

use std::io::BufRead;
use std::path::Path;

use fabrik_model::{BwRow, LatRow, P2pReport, P2pRows, P2pTest, ResultSource, SCHEMA_VERSION};

use crate::error::ParseError;
use crate::input::{for_each_line, open_input};
use crate::perftest_failures::FailureLog;

use crate::text::{parse_f64, strip_launcher_prefix};
/// What a perftest output holds is a model type: every renderer reads it.
pub use fabrik_model::perftest::PerftestOutput;

/// Rows kept per report (perftest `-a` prints 23 sizes); the excess is counted, not kept, so
/// memory stays flat on endless or concatenated input.
pub const MAX_ROWS: usize = 8192;
/// Reports kept per input; later ones are counted.
pub const MAX_REPORTS: usize = 512;
/// Notes kept per report.
pub const MAX_NOTES: usize = 64;

/// Header keys perftest prints in its parameter block (`ctx_print_test_info`).
const KEYS: &[&str] = &[
    "Dual-port",
    "Number of qps",
    "Connection type",
    "PCIe relax order",
    "ibv_wr* API",
    "TX depth",
    "RX depth",
    "CQ Moderation",
    "Post List",
    "Mtu",
    "Link type",
    "GID index",
    "Max inline data",
    "rdma_cm QPs",
    "Data ex. method",
    "Outstand reads",
    "Use ODP",
    "Using Enhanced Reorder",
    "CQE Poll Batch",
    "CPU freq",
    "Use ROCm memory",
    "Use CUDA memory",
];

/// The note a bidirectional run carries: its BW columns add both directions.
pub const BIDIRECTIONAL_NOTE: &str = "bidirectional: BW columns are the sum of both directions";

/// Whether a perftest report measured both directions at once (`-b`).
pub fn is_bidirectional(r: &P2pReport) -> bool {
    r.notes.iter().any(|n| n == BIDIRECTIONAL_NOTE)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Table {
    /// Bandwidth in Gb/s (`--report_gbits`) or in MiB/s (perftest's `MB/sec` is 2^20 bytes).
    /// Perftest 1.x printed no MsgRate column.
    Bw {
        gbits: bool,
        qos: bool,
        msg_rate: bool,
    },
    Lat {
        avg: bool,
        stdev: bool,
        p99: bool,
        p999: bool,
    },
    LatDuration,
}

struct Builder {
    reports: Vec<P2pReport>,
    cur: P2pReport,
    table: Option<Table>,
    bw: Vec<BwRow>,
    lat: Vec<LatRow>,
    started: bool,
    /// The current report already has its title line.
    titled: bool,
    failures: FailureLog,
    rows_dropped: u64,
    reports_dropped: u64,
}

fn empty() -> P2pReport {
    P2pReport {
        schema_version: SCHEMA_VERSION,
        source: ResultSource::Perftest,
        test: P2pTest::Bw,
        transport: "rdma".to_string(),
        op: None,
        streams: 1,
        interfaces: Vec::new(),
        device: None,
        link_type: None,
        mtu: None,
        gid_index: None,
        results: P2pRows::Bw(Vec::new()),
        per_stream: Vec::new(),
        notes: Vec::new(),
        memory: None,
    }
}

impl Builder {
    fn new() -> Self {
        Builder {
            reports: Vec::new(),
            cur: empty(),
            table: None,
            bw: Vec::new(),
            lat: Vec::new(),
            started: false,
            titled: false,
            failures: FailureLog::default(),
            rows_dropped: 0,
            reports_dropped: 0,
        }
    }

    fn note(&mut self, note: String) {
        if self.cur.notes.len() < MAX_NOTES && !self.cur.notes.contains(&note) {
            self.cur.notes.push(note);
        }
    }

    fn flush(&mut self) {
        let mut r = std::mem::replace(&mut self.cur, empty());
        let bw = std::mem::take(&mut self.bw);
        let lat = std::mem::take(&mut self.lat);
        r.results = if r.test == P2pTest::Lat {
            P2pRows::Lat(lat)
        } else {
            P2pRows::Bw(bw)
        };
        if self.started {
            if self.reports.len() < MAX_REPORTS {
                self.reports.push(r);
            } else {
                self.reports_dropped += 1;
            }
        }
        self.started = false;
        self.titled = false;
        self.table = None;
    }

    fn has_rows(&self) -> bool {
        !self.bw.is_empty() || !self.lat.is_empty()
    }

    fn line(&mut self, raw: &[u8]) {
        let Ok(text) = std::str::from_utf8(strip_launcher_prefix(raw)) else {
            return;
        };
        let t = text.trim();
        if t.is_empty() || t.starts_with("---") || t.starts_with('*') {
            return;
        }
        if self.failures.line(t) {
            return;
        }
        if t.ends_with(" BW Test") || t.ends_with(" Latency Test") || t.ends_with(" Lat Test") {
            if self.has_rows() || self.titled {
                self.flush();
            }
            self.started = true;
            self.titled = true;
            self.title(t);
            return;
        }
        if let Some(v) = t.strip_prefix("Version:") {
            self.started = true;
            self.note(format!("perftest version {}", v.trim()));
            return;
        }
        if t.starts_with("#bytes") {
            if self.has_rows() {
                // A second table: a second run (perhaps without its own header block).
                let keep = self.cur.clone();
                self.flush();
                self.cur = P2pReport {
                    results: P2pRows::Bw(Vec::new()),
                    ..keep
                };
            }
            self.started = true;
            self.table = table_kind(t);
            if let Some(Table::Lat { .. } | Table::LatDuration) = self.table {
                self.cur.test = P2pTest::Lat;
            }
            return;
        }
        if t.as_bytes().first().is_some_and(u8::is_ascii_digit) {
            self.row(t);
            return;
        }
        if let Some(i) = t.split_whitespace().position(is_perftest_tool) {
            self.command_line(t, i);
            return;
        }
        if KEYS.iter().any(|k| t.starts_with(k)) || self.header_line(t) {
            self.started = true;
            for (k, v) in key_values(t) {
                self.kv(&k, &v);
            }
            return;
        }
        // `allocated 67108864 bytes of GPU buffer at 0x7f..` (`--use_cuda`, `--use_rocm`).
        if t.starts_with("allocated ") && t.contains(" bytes of GPU buffer") {
            self.note("GPU memory buffers (GPUDirect RDMA)".to_string());
        }
    }

    /// A `Key : value` line of the parameter block that KEYS does not list (each perftest
    /// release adds some: `CQE Poll Batch`, `CPU freq`, `Use ROCm memory`): only between the
    /// title and the table, and never the address lines that follow the block.
    fn header_line(&self, t: &str) -> bool {
        if !self.titled || self.table.is_some() || self.has_rows() {
            return false;
        }
        let Some((key, value)) = t.split_once(':') else {
            return false;
        };
        let key = key.trim();
        !value.trim().is_empty()
            && (2..=32).contains(&key.len())
            && key.starts_with(|c: char| c.is_ascii_alphabetic())
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || " .*_/()-".contains(c))
            && !matches!(key, "local address" | "remote address" | "GID")
    }

    /// `ib_send_bw -a -c UD -d mlx4_0 10.0.0.1`: old perftest printed no Device line, so the
    /// command line, when the output includes it, names the device and the test.
    fn command_line(&mut self, t: &str, tool_at: usize) {
        let toks: Vec<&str> = t.split_whitespace().collect();
        if toks
            .iter()
            .skip(tool_at)
            .any(|a| a.starts_with("--version"))
        {
            return;
        }
        if self.has_rows() || self.titled {
            // A second run's command line.
            self.flush();
        }
        let tool = toks[tool_at].rsplit('/').next().unwrap_or(toks[tool_at]);
        if !self.titled {
            let mut parts = tool.split('_').skip(1);
            self.cur.op = parts.next().map(str::to_string);
            self.cur.test = if parts.next() == Some("lat") {
                P2pTest::Lat
            } else {
                P2pTest::Bw
            };
        }
        let dev = toks
            .windows(2)
            .find(|w| w[0] == "-d")
            .map(|w| w[1])
            .or_else(|| toks.iter().find_map(|a| a.strip_prefix("--ib-dev=")));
        if let (Some(d), None) = (dev, &self.cur.device) {
            self.cur.device = Some(d.to_string());
            self.cur.interfaces.push(d.to_string());
        }
    }

    fn title(&mut self, t: &str) {
        self.cur.test = if t.contains("Latency") || t.contains("Lat Test") {
            P2pTest::Lat
        } else {
            P2pTest::Bw
        };
        let op = if t.starts_with("RDMA_Write") {
            Some("write")
        } else if t.starts_with("RDMA_Read") {
            Some("read")
        } else if t.starts_with("Send") {
            Some("send")
        } else if t.starts_with("Atomic") {
            Some("atomic")
        } else {
            None
        };
        self.cur.op = op.map(str::to_string);
        self.note(format!("test: {t}"));
        if t.contains("Bidirectional") {
            self.note(BIDIRECTIONAL_NOTE.to_string());
        }
    }

    fn kv(&mut self, key: &str, value: &str) {
        match key {
            "Device" => {
                self.cur.device = Some(value.to_string());
                if !self.cur.interfaces.iter().any(|i| i == value) {
                    self.cur.interfaces.push(value.to_string());
                }
            }
            "Transport type" => self.cur.transport = value.to_string(),
            "Link type" => self.cur.link_type = Some(value.to_string()),
            "Mtu" => self.cur.mtu = value.trim_end_matches("[B]").trim().parse().ok(),
            "GID index" => self.cur.gid_index = value.parse().ok(),
            "Number of qps" => self.cur.streams = value.parse().unwrap_or(1),
            _ => self.note(format!("{key}: {value}")),
        }
    }

    fn row(&mut self, t: &str) {
        let Some(table) = self.table else {
            return;
        };
        if self.bw.len() + self.lat.len() >= MAX_ROWS {
            self.rows_dropped += 1;
            return;
        }
        let toks: Vec<&str> = t
            .split_whitespace()
            .map(|s| s.trim_matches('*'))
            .filter(|s| !s.is_empty())
            .collect();
        match table {
            Table::Bw {
                gbits,
                qos,
                msg_rate,
            } => {
                let skip = usize::from(qos);
                let need = 4 + skip + usize::from(msg_rate);
                if toks.len() < need {
                    return;
                }
                let (Ok(bytes), Ok(iterations)) =
                    (toks[0].parse::<u64>(), toks[1 + skip].parse::<u64>())
                else {
                    return;
                };
                let vals: Option<Vec<f64>> =
                    toks[2 + skip..need].iter().map(|s| parse_f64(s)).collect();
                let Some(v) = vals else { return };
                let to_gbps = |x: f64| {
                    if gbits {
                        x
                    } else {
                        x * 1_048_576.0 * 8.0 / 1e9
                    }
                };
                let avg = to_gbps(v[1]);
                let rate = match v.get(2) {
                    Some(r) => *r,
                    None => {
                        let note = "MsgRate not printed by this perftest; derived from BW average";
                        if !self.cur.notes.iter().any(|n| n == note) {
                            self.cur.notes.push(note.to_string());
                        }
                        if bytes == 0 {
                            0.0
                        } else {
                            avg * 1e9 / 8.0 / bytes as f64 / 1e6
                        }
                    }
                };
                self.bw.push(BwRow {
                    bytes,
                    iterations,
                    bw_peak_gbps: to_gbps(v[0]),
                    bw_avg_gbps: avg,
                    msg_rate_mpps: rate,
                });
            }
            Table::Lat {
                avg,
                stdev,
                p99,
                p999,
            } => {
                let need = 5
                    + usize::from(avg)
                    + usize::from(stdev)
                    + usize::from(p99)
                    + usize::from(p999);
                if toks.len() < need {
                    return;
                }
                let (Ok(bytes), Ok(iterations)) = (toks[0].parse::<u64>(), toks[1].parse::<u64>())
                else {
                    return;
                };
                let vals: Option<Vec<f64>> = toks[2..need].iter().map(|s| parse_f64(s)).collect();
                let Some(v) = vals else { return };
                let mut i = 3;
                let mut next = |present: bool| {
                    if present {
                        i += 1;
                        Some(v[i - 1])
                    } else {
                        None
                    }
                };
                let t_typical = v[2];
                let t_avg = next(avg);
                let t_stdev = next(stdev);
                let p99v = next(p99);
                let p999v = next(p999);
                if t_avg.is_none() && !self.cur.notes.iter().any(|n| n.starts_with("t_avg")) {
                    self.cur.notes.push(
                        "t_avg not printed by this perftest; t_avg_us holds t_typical".into(),
                    );
                }
                self.lat.push(LatRow {
                    bytes,
                    iterations,
                    t_min_us: v[0],
                    t_typical_us: t_typical,
                    t_avg_us: t_avg.unwrap_or(t_typical),
                    t_max_us: v[1],
                    t_stdev_us: t_stdev,
                    p99_us: p99v,
                    p999_us: p999v,
                });
            }
            Table::LatDuration => {
                if !self
                    .cur
                    .notes
                    .iter()
                    .any(|n| n.starts_with("duration mode"))
                {
                    self.cur.notes.push(
                        "duration mode (-D): perftest prints only t_avg and tps; rows not kept"
                            .into(),
                    );
                }
            }
        }
    }

    fn finish(mut self) -> PerftestOutput {
        self.flush();
        PerftestOutput {
            reports: self.reports,
            failures: self.failures.failures,
            failures_dropped: self.failures.dropped,
            rows_dropped: self.rows_dropped,
            reports_dropped: self.reports_dropped,
        }
    }
}

fn is_perftest_tool(tok: &str) -> bool {
    let name = tok.rsplit('/').next().unwrap_or(tok);
    let Some(rest) = name.strip_prefix("ib_") else {
        return false;
    };
    matches!(
        rest,
        "write_bw"
            | "read_bw"
            | "send_bw"
            | "atomic_bw"
            | "write_lat"
            | "read_lat"
            | "send_lat"
            | "atomic_lat"
    )
}

fn table_kind(header: &str) -> Option<Table> {
    if header.contains("BW peak") || header.contains("BW average") || header.contains("BW_") {
        return Some(Table::Bw {
            gbits: header.contains("Gb/sec"),
            qos: header.contains("#sl"),
            msg_rate: header.contains("MsgRate"),
        });
    }
    if header.contains("t_min") {
        return Some(Table::Lat {
            avg: header.contains("t_avg"),
            stdev: header.contains("t_stdev"),
            p99: header.contains("99%"),
            p999: header.contains("99.9%"),
        });
    }
    if header.contains("t_avg") {
        return Some(Table::LatDuration);
    }
    None
}

/// ` Dual-port       : OFF\t\tDevice         : mlx5_0` → [(Dual-port, OFF), (Device, mlx5_0)].
fn key_values(line: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let parts: Vec<&str> = line.split(':').collect();
    if parts.len() < 2 {
        return out;
    }
    let mut key = parts[0].trim().to_string();
    for (i, part) in parts.iter().enumerate().skip(1) {
        let last = i == parts.len() - 1;
        if last {
            out.push((key.clone(), part.trim().to_string()));
            break;
        }
        // `value<gap>NextKey`: the gap is a tab or 2+ spaces.
        let p = part.trim();
        let split = p
            .find('\t')
            .or_else(|| p.find("  "))
            .map(|g| (p[..g].trim(), p[g..].trim()));
        match split {
            Some((value, next_key)) if !next_key.is_empty() => {
                out.push((key.clone(), value.to_string()));
                key = next_key.to_string();
            }
            _ => {
                // A value that itself contains ':' — join the rest.
                out.push((key.clone(), parts[i..].join(":").trim().to_string()));
                break;
            }
        }
    }
    out
}

/// Parses perftest output from a reader, line by line with bounded state: the reports (one per
/// test printed) and the failure messages.
pub fn parse_reader_full<R: BufRead + ?Sized>(reader: &mut R) -> std::io::Result<PerftestOutput> {
    let mut b = Builder::new();
    for_each_line(reader, |l| b.line(l))?;
    Ok(b.finish())
}

/// Parses perftest output from a reader; one report per test printed.
pub fn parse_reader<R: BufRead + ?Sized>(reader: &mut R) -> std::io::Result<Vec<P2pReport>> {
    Ok(parse_reader_full(reader)?.reports)
}

/// Parses a file (`-` is stdin; gzip detected), reports and failures.
pub fn parse_path_full(path: &Path) -> Result<PerftestOutput, ParseError> {
    let mut r = open_input(path).map_err(|e| ParseError::io(path, e))?;
    parse_reader_full(&mut r).map_err(|e| ParseError::io(path, e))
}

/// Parses a file (`-` is stdin; gzip detected) into its reports.
pub fn parse_path(path: &Path) -> Result<Vec<P2pReport>, ParseError> {
    Ok(parse_path_full(path)?.reports)
}

/// Parses perftest output held in memory into its reports.
pub fn parse_str(text: &str) -> Vec<P2pReport> {
    let mut reader = text.as_bytes();
    parse_reader(&mut reader).unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn latency_rows_in_perftest_report_format() {
        // Built with REPORT_FMT_LAT of perftest_parameters.h.
        let text = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n 2       1000          5.43           7.90         5.84     \t       5.90     \t0.12\t\t6.80 \t\t7.90\n";
        let r = parse_str(text);
        let P2pRows::Lat(rows) = &r[0].results else {
            panic!("latency expected")
        };
        assert_eq!(rows[0].t_min_us, 5.43);
        assert_eq!(rows[0].t_max_us, 7.90);
        assert_eq!(rows[0].t_typical_us, 5.84);
        assert_eq!(rows[0].t_avg_us, 5.90);
        assert_eq!(rows[0].t_stdev_us, Some(0.12));
        assert_eq!(rows[0].p99_us, Some(6.80));
        assert_eq!(rows[0].p999_us, Some(7.90));
    }

    #[test]
    fn old_latency_table_without_avg() {
        let text = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n 2       1000          1.10           9.37         1.14\n";
        let r = parse_str(text);
        let P2pRows::Lat(rows) = &r[0].results else {
            panic!("latency expected")
        };
        assert_eq!(rows[0].t_avg_us, 1.14);
        assert_eq!(rows[0].t_stdev_us, None);
        assert!(r[0]
            .notes
            .iter()
            .any(|n| n.starts_with("t_avg not printed")));
    }

    #[test]
    fn mib_rows_convert_to_gbps() {
        let text = " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\n 65536      5000             11000.00            10000.00\t\t   0.160000\n";
        let r = parse_str(text);
        let P2pRows::Bw(rows) = &r[0].results else {
            panic!("bw expected")
        };
        assert!((rows[0].bw_avg_gbps - 83.886_08).abs() < 1e-6);
    }

    #[test]
    fn key_value_pairs() {
        let kv = key_values(" Dual-port       : OFF\t\tDevice         : mlx5_0");
        assert_eq!(
            kv,
            vec![
                ("Dual-port".to_string(), "OFF".to_string()),
                ("Device".to_string(), "mlx5_0".to_string())
            ]
        );
        let kv = key_values(" Connection type : RC           Using SRQ      : OFF");
        assert_eq!(kv[1], ("Using SRQ".to_string(), "OFF".to_string()));
    }
}
