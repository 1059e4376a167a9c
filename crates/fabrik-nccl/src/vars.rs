//! The environment variables NCCL, its network plugins and nccl-tests read, with the releases
//! that read each: `data/nccl-env.tsv`, extracted from their sources by
//! `scripts/catalog/nccl_env.py` (NCCL_PARAM's `"NCCL_" env` prefix, aws-ofi-nccl's
//! `"OFI_NCCL_"`, the TCPX plugin's `NCCL_GPUDIRECTTCPX_`... as each source's code forms the
//! name). [`check`] tells a name none of them reads, with the nearest one that is read.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Serialize;

const DATA: &str = include_str!("../data/nccl-env.tsv");

/// One program (`nccl`, `ofi`, `sharp`, `tcpx`, `fastrak`, `nccl-tests`) that reads a variable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reader {
    /// The source it was extracted from (`nccl`, `ofi` for aws-ofi-nccl...).
    pub source: &'static str,
    /// The first release read that reads it.
    pub first: &'static str,
    /// The last release read that reads it.
    pub last: &'static str,
    /// Every release that reads it, as ranges (`v2.10.3-1..v2.12.12-1,v2.19.1-1`).
    pub releases: &'static str,
    /// The file that reads it in the last of them.
    pub file: &'static str,
}

/// A variable and the programs that read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Variable {
    /// The name, as the environment holds it (`NCCL_IB_HCA`).
    pub name: &'static str,
    /// The programs that read it.
    pub readers: Vec<Reader>,
}

/// One source read by the extractor: its name, repository and releases.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Source {
    /// `nccl`, `ofi`...
    pub name: &'static str,
    /// Its repository.
    pub url: &'static str,
    /// Its first release read.
    pub first: &'static str,
    /// Its last release read.
    pub last: &'static str,
}

impl Source {
    /// `NCCL v2.4.2-1..HEAD@5067397c2676`: what the reader calls the program.
    pub fn label(&self) -> String {
        let program = match self.name {
            "nccl" => "NCCL",
            "ofi" => "aws-ofi-nccl",
            "sharp" => "nccl-rdma-sharp-plugins",
            "tcpx" => "nccl-plugin-gpudirecttcpx",
            "fastrak" => "nccl-plugin-gpudirect-tcpxo",
            other => other,
        };
        format!("{program} {}..{}", self.first, self.last)
    }
}

struct Table {
    vars: BTreeMap<&'static str, Variable>,
    sources: Vec<Source>,
}

/// `#   nccl: https://github.com/NVIDIA/nccl, 61 releases v2.4.2-1 .. HEAD@5067397c2676, ...`
fn source_line(line: &'static str) -> Option<Source> {
    let (name, rest) = line.trim_start_matches('#').trim().split_once(": ")?;
    let mut parts = rest.split(", ");
    let url = parts.next()?;
    let range = parts.next()?;
    let range = range.split_once(" releases ")?.1;
    let (first, last) = range.split_once(" .. ")?;
    Some(Source {
        name,
        url,
        first,
        last,
    })
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut vars: BTreeMap<&'static str, Variable> = BTreeMap::new();
        let mut sources = Vec::new();
        for line in DATA.lines() {
            if line.starts_with("#   ") {
                sources.extend(source_line(line));
                continue;
            }
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            let f: Vec<&'static str> = line.split('\t').collect();
            let [name, source, first, last, _count, releases, file] = f[..] else {
                continue;
            };
            vars.entry(name)
                .or_insert_with(|| Variable {
                    name,
                    readers: Vec::new(),
                })
                .readers
                .push(Reader {
                    source,
                    first,
                    last,
                    releases,
                    file,
                });
        }
        Table { vars, sources }
    })
}

/// Every variable read, by name.
pub fn all() -> impl Iterator<Item = &'static Variable> {
    table().vars.values()
}

/// The sources the list was extracted from, in the data file's order.
pub fn sources() -> &'static [Source] {
    &table().sources
}

/// The variable `name` (exact: the environment is case-sensitive), when something reads it.
pub fn lookup(name: &str) -> Option<&'static Variable> {
    table().vars.get(name)
}

/// Whether fabrik knows every variable of `name`'s family, so that a name it does not know
/// is worth a word: `NCCL_*` (NCCL, its plugins that use NCCL's prefix, nccl-tests) and
/// `OFI_NCCL_*` (aws-ofi-nccl). libfabric's `FI_*`, UCX's and rdma-core's variables come from
/// sources the list is not extracted from.
pub fn is_checked_family(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper.starts_with("NCCL_") || upper.starts_with("OFI_NCCL_")
}

/// The edit distance (optimal string alignment, case-insensitive) within which an unknown name
/// is taken for a misspelling of a known one (`NCCL_IB_GID_IDX` is 2 from `NCCL_IB_GID_INDEX`).
pub const TYPO_DISTANCE: usize = 2;

/// Whether `a` and `b` differ in one whole `_`-separated word, case-insensitively: one word
/// added or left out (`NCCL_GID_INDEX`, `NCCL_IB_GID_INDEX`), or one word shortened or
/// lengthened (`NCCL_DEBUG_SUBSYSTEM`, `NCCL_DEBUG_SUBSYS`): a misspelling however many
/// letters it takes.
pub fn one_word_apart(a: &str, b: &str) -> bool {
    let (a, b) = (a.to_ascii_uppercase(), b.to_ascii_uppercase());
    let (wa, wb): (Vec<&str>, Vec<&str>) = (a.split('_').collect(), b.split('_').collect());
    if wa.len() == wb.len() {
        let differ: Vec<(&&str, &&str)> = wa.iter().zip(&wb).filter(|(x, y)| x != y).collect();
        return matches!(differ[..], [(x, y)] if !x.is_empty() && !y.is_empty() && (x.starts_with(*y) || y.starts_with(*x)));
    }
    let (short, long) = if wa.len() < wb.len() {
        (wa, wb)
    } else {
        (wb, wa)
    };
    long.len() == short.len() + 1
        && (0..long.len()).any(|skip| {
            long.iter()
                .enumerate()
                .filter(|(i, _)| *i != skip)
                .map(|(_, w)| *w)
                .eq(short.iter().copied())
        })
}

/// The known variable nearest `name` and its distance: the smallest case-insensitive edit
/// distance (optimal string alignment), ties to the name first in sorted order. `None` only
/// when the list is empty.
pub fn nearest(name: &str) -> Option<(&'static Variable, usize)> {
    let w = name.to_ascii_uppercase();
    all()
        .map(|v| (strsim::osa_distance(&w, v.name), v))
        .min_by(|a, b| a.0.cmp(&b.0).then(a.1.name.cmp(b.1.name)))
        .map(|(d, v)| (v, d))
}

/// The variable `name` misspells, if it misspells one: the nearest known name when it is
/// within [`TYPO_DISTANCE`], else the nearest of those one word apart ([`one_word_apart`]).
/// `family_only` looks only at names of the checked families ([`is_checked_family`]).
pub fn misspelling_of(name: &str, family_only: bool) -> Option<(&'static Variable, usize)> {
    let w = name.to_ascii_uppercase();
    let candidates = || {
        all()
            .filter(move |v| !family_only || is_checked_family(v.name))
            .map(|v| (v, strsim::osa_distance(&w, v.name)))
    };
    let nearest = candidates().min_by(|a, b| a.1.cmp(&b.1).then(a.0.name.cmp(b.0.name)))?;
    if nearest.1 <= TYPO_DISTANCE {
        return Some(nearest);
    }
    candidates()
        .filter(|(v, _)| one_word_apart(name, v.name))
        .min_by(|a, b| a.1.cmp(&b.1).then(a.0.name.cmp(b.0.name)))
}

/// Whether `name`, outside the checked families, is within [`TYPO_DISTANCE`] of one of their
/// variables (`CCL_NET_GDR_LEVEL`, the N of NCCL lost): a misspelling that takes the variable
/// out of NCCL's family.
pub fn misspells_into_family(name: &str) -> Option<(&'static Variable, usize)> {
    if is_checked_family(name) || lookup(name).is_some() {
        return None;
    }
    misspelling_of(name, true).filter(|(_, d)| *d <= TYPO_DISTANCE)
}

/// What the list says of a variable set in an environment.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Check {
    /// Read by the last release of a source that reads it.
    Read,
    /// Read only by older releases: the last release of each source that reads it does not.
    NoLongerRead {
        /// The variable.
        variable: &'static Variable,
    },
    /// Not read by any release of any source, and a known name is within [`TYPO_DISTANCE`] or
    /// one word apart ([`one_word_apart`]): a misspelling.
    Misspelled {
        /// The known variable nearest it.
        nearest: &'static Variable,
        /// Its edit distance.
        distance: usize,
    },
    /// Not read by any release of any source, and no known name is near it: another
    /// program's setting (PyTorch reads some `NCCL_*` names) or one of a release newer than
    /// the list.
    Unknown {
        /// The known variable nearest it all the same.
        nearest: Option<&'static Variable>,
    },
}

/// Judges `name` against the list. Names outside the checked families
/// ([`is_checked_family`]) are [`Check::Read`]: the list cannot say.
pub fn check(name: &str) -> Check {
    if !is_checked_family(name) {
        return Check::Read;
    }
    if let Some(v) = lookup(name) {
        let current = v.readers.iter().any(|r| {
            sources()
                .iter()
                .any(|s| s.name == r.source && s.last == r.last)
        });
        return if current {
            Check::Read
        } else {
            Check::NoLongerRead { variable: v }
        };
    }
    match misspelling_of(name, false) {
        Some((v, d)) => Check::Misspelled {
            nearest: v,
            distance: d,
        },
        None => Check::Unknown {
            nearest: nearest(name).map(|(v, _)| v),
        },
    }
}

/// `NCCL v2.4.2-1..HEAD@5067397c2676, aws-ofi-nccl v1.6.0..v1.15.0`: who reads `v`, when.
pub fn readers_text(v: &Variable) -> String {
    v.readers
        .iter()
        .map(|r| {
            let s = Source {
                name: r.source,
                url: "",
                first: r.first,
                last: r.last,
            };
            s.label()
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn reader<'a>(v: &'a Variable, source: &str) -> &'a Reader {
        v.readers.iter().find(|r| r.source == source).unwrap()
    }

    #[test]
    fn the_list_holds_what_each_source_reads_with_its_prefix() {
        let names: Vec<&str> = sources().iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            ["nccl", "ofi", "sharp", "tcpx", "fastrak", "nccl-tests"]
        );
        // NCCL_PARAM(IbHca...) does not exist: NCCL_IB_HCA is a getenv; NCCL_PARAM(IbGidIndex,
        // "IB_GID_INDEX", -1) reads "NCCL_" "IB_GID_INDEX".
        let hca = lookup("NCCL_IB_HCA").unwrap();
        assert_eq!(reader(hca, "nccl").first, "v2.4.2-1");
        assert!(lookup("NCCL_IB_GID_INDEX").is_some());
        assert!(lookup("IB_GID_INDEX").is_none());
        // NCCL_P2P_LEVEL reaches ncclGetEnv through ncclGetLevel's parameter.
        assert!(lookup("NCCL_P2P_LEVEL").is_some());
        // DEFINE_NCCL_PARAM(ncclParamDebugLevel, ..., NCCL_DEBUG, ...) in NCCL >= 2.29 keeps
        // NCCL_DEBUG read to the last release.
        assert_eq!(
            reader(lookup("NCCL_DEBUG").unwrap(), "nccl").last,
            sources()[0].last
        );
        // aws-ofi-nccl's OFI_NCCL_PARAM(type, name, "PROTOCOL", ...) reads OFI_NCCL_PROTOCOL.
        assert!(lookup("OFI_NCCL_PROTOCOL").unwrap().readers[0].source == "ofi");
        // The TCPX plugin's TCPX_PARAM and TCPX_GET_ENV, the TCPXO plugin's NCCL_CONST_PARAM.
        assert!(lookup("NCCL_GPUDIRECTTCPX_SOCKET_IFNAME").is_some());
        assert!(lookup("NCCL_GPUDIRECTTCPX_PROGRAM_FLOW_STEERING_WAIT_MICROS").is_some());
        assert!(lookup("NCCL_FASTRAK_NUM_FLOWS").is_some());
        assert!(lookup("NCCL_TESTS_MIN_BW").is_some());
        // A variable an old release read and a later one dropped keeps its range.
        let agg = reader(lookup("NCCL_AGG_CHANNEL_SIZE").unwrap(), "nccl");
        assert_eq!((agg.first, agg.last), ("v2.10.3-1", "v2.19.4-1"));
    }

    #[test]
    fn every_variable_fabrik_sets_is_read_by_its_source() {
        // The settings fabrik's platform profiles write: each must be a name something reads.
        let empty = BTreeMap::new();
        let mut unread = vec![];
        for profile in crate::env::Profile::named() {
            let env = crate::env::generate(&crate::env::Request {
                profile,
                node: None,
                existing: &empty,
                keep_env: false,
            })
            .unwrap();
            for v in &env.vars {
                if is_checked_family(&v.name) && lookup(&v.name).is_none() {
                    unread.push(format!("{} ({profile:?})", v.name));
                }
            }
        }
        // Google's TCPXO scripts (tcpxo_scripts/nccl-env-profile.sh) set two variables the
        // plugin's published sources never read; the profile keeps Google's settings.
        assert_eq!(
            unread,
            [
                "NCCL_FASTRAK_USE_SNAP (GcpA3MegaTcpxo)",
                "NCCL_FASTRAK_ENABLE_CONTROL_CHANNEL (GcpA3MegaTcpxo)"
            ]
        );
    }

    #[test]
    fn misspellings_name_the_variable_meant() {
        let meant = |w: &str| match check(w) {
            Check::Misspelled { nearest, .. } => nearest.name,
            other => panic!("{w}: {other:?}"),
        };
        assert_eq!(meant("NCCL_IB_HCAS"), "NCCL_IB_HCA");
        assert_eq!(meant("NCCL_SOCKET_IFNAMES"), "NCCL_SOCKET_IFNAME");
        assert_eq!(meant("NCCL_IB_GID_IDX"), "NCCL_IB_GID_INDEX");
        assert_eq!(meant("NCCL_GID_INDEX"), "NCCL_IB_GID_INDEX");
        assert_eq!(meant("NCCL_NET_GDR_LEVLE"), "NCCL_NET_GDR_LEVEL");
        assert_eq!(meant("nccl_ib_hca"), "NCCL_IB_HCA");
        assert_eq!(meant("OFI_NCCL_PROTOCAL"), "OFI_NCCL_PROTOCOL");
        assert_eq!(check("NCCL_IB_HCA"), Check::Read);
        assert_eq!(check("FI_EFA_USE_DEVICE_RDMA"), Check::Read);
        assert!(matches!(
            check("NCCL_AGG_CHANNEL_SIZE"),
            Check::NoLongerRead { .. }
        ));
        // PyTorch's own variable is far from every NCCL name, and so is a TCPXO setting of
        // Google's scripts the plugin does not read: not misspellings.
        for other in ["NCCL_ASYNC_ERROR_HANDLING", "NCCL_FASTRAK_USE_SNAP"] {
            assert!(
                matches!(check(other), Check::Unknown { nearest: Some(_) }),
                "{other}: {:?}",
                check(other)
            );
        }
        // Misspellings found in public job scripts and issues: a word left out, a word
        // lengthened, an extra word, a prefix that lost its N.
        assert_eq!(meant("NCCL_DEBUG_SUBSYSTEM"), "NCCL_DEBUG_SUBSYS");
        assert_eq!(meant("NCCL_P2P_DISABLED"), "NCCL_P2P_DISABLE");
        assert_eq!(meant("NCCL_IB_QPS_PER_CONN"), "NCCL_IB_QPS_PER_CONNECTION");
        assert_eq!(meant("NCCL_EXCLUDE_IB_HCA"), "NCCL_IB_HCA");
        assert_eq!(
            misspells_into_family("CCL_NET_GDR_LEVEL").map(|(v, d)| (v.name, d)),
            Some(("NCCL_NET_GDR_LEVEL", 1))
        );
        for other in [
            "TORCH_NCCL_ASYNC_ERROR_HANDLING",
            "GLOO_SOCKET_IFNAME",
            "HOME",
            "PATH",
        ] {
            assert_eq!(misspells_into_family(other), None, "{other}");
        }
        assert!(one_word_apart("NCCL_GID_INDEX", "NCCL_IB_GID_INDEX"));
        assert!(!one_word_apart(
            "NCCL_TUNER_CONFIG_PATH",
            "NCCL_TUNER_CONFIG_FILE"
        ));
        assert!(one_word_apart("NCCL_IB_GID_INDEX", "nccl_gid_index"));
        assert!(!one_word_apart(
            "NCCL_FASTRAK_USE_SNAP",
            "NCCL_FASTRAK_USE_LLCM"
        ));
        assert!(!one_word_apart("NCCL_IB_HCA", "NCCL_IB_HCA"));
    }

    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_";

    fn known_checked() -> Vec<&'static str> {
        all()
            .map(|v| v.name)
            .filter(|n| is_checked_family(n))
            .collect()
    }

    proptest! {
        #[test]
        fn a_known_name_is_never_a_misspelling(i in any::<prop::sample::Index>()) {
            let names = known_checked();
            let name = names[i.index(names.len())];
            let read = matches!(check(name), Check::Read | Check::NoLongerRead { .. });
            prop_assert!(read, "{}", name);
        }

        #[test]
        fn one_edit_of_a_known_name_suggests_a_name_at_most_that_far(
            i in any::<prop::sample::Index>(),
            at in any::<prop::sample::Index>(),
            c in prop::sample::select(ALPHABET),
            op in 0u8..4,
        ) {
            let names = known_checked();
            let name = names[i.index(names.len())];
            let mut b = name.as_bytes().to_vec();
            let k = at.index(b.len());
            match op {
                0 => { b.remove(k); }
                1 => b.insert(k, c),
                2 => b[k] = c,
                _ => if k + 1 < b.len() { b.swap(k, k + 1) },
            }
            let word = String::from_utf8(b).unwrap();
            prop_assume!(lookup(&word).is_none() && is_checked_family(&word));
            match check(&word) {
                Check::Misspelled { nearest, distance } => {
                    prop_assert!(distance <= 1, "{word}: {} at {distance}", nearest.name);
                    prop_assert_eq!(strsim::osa_distance(&word, nearest.name), distance);
                    prop_assert!(lookup(nearest.name).is_some());
                }
                other => prop_assert!(false, "{}: {:?}", word, other),
            }
        }

        #[test]
        fn any_name_gets_an_answer_from_the_list(word in "[A-Za-z0-9_]{0,40}") {
            match check(&word) {
                Check::Read => prop_assert!(!is_checked_family(&word) || lookup(&word).is_some()),
                Check::NoLongerRead { variable } => prop_assert_eq!(variable.name, word.as_str()),
                Check::Misspelled { nearest, distance } => {
                    prop_assert!(distance <= TYPO_DISTANCE || one_word_apart(&word, nearest.name));
                    // At no distance, only the case differs: the environment's names are
                    // case-sensitive.
                    prop_assert!(distance > 0 || word != word.to_ascii_uppercase());
                    prop_assert_eq!(
                        strsim::osa_distance(&word.to_ascii_uppercase(), nearest.name),
                        distance
                    );
                }
                Check::Unknown { nearest } => {
                    let (n, d) = nearest.map(|v| (v, strsim::osa_distance(&word.to_ascii_uppercase(), v.name))).unwrap();
                    prop_assert!(d > TYPO_DISTANCE, "{} at {}", n.name, d);
                    prop_assert!(all().all(|v| !one_word_apart(&word, v.name)));
                    // Nothing in the list is nearer than the one named.
                    prop_assert!(all().all(|v| strsim::osa_distance(&word.to_ascii_uppercase(), v.name) >= d));
                }
            }
        }
    }
}
