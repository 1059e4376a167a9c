//! NCCL's message catalog, derived from the sources of NCCL and its network plugins.
//!
//! Two data files, compiled in and parsed once on first use:
//! - `data/nccl-messages.tsv`: every `WARN` format string (and each `INFO` that records a
//!   transport, GPUDirect RDMA, plugin or fallback decision) of NVIDIA/nccl v2.4 to the newest
//!   release, aws-ofi-nccl, nccl-rdma-sharp-plugins and nccl-plugin-gpudirecttcpx, with its
//!   source file and the first and last release it appears in; `data/rccl-messages.tsv` the
//!   same for RCCL (ROCm/rccl) and AMD's AINIC plugin (ROCm/amd-anp). Written by
//!   `scripts/catalog/extract.py` from the repositories; never edited by hand.
//! - `data/nccl-classes.txt`: hand-written cause classes (severity, meaning, fix, the NCCL
//!   settings involved, public sources) and which of those format strings belong to each. A
//!   message whose meaning is not established stays unclassified.
//!
//! [`classify`] turns a logged WARN message back into its format string (each format compiled
//! once into a [`format::Pattern`]) and returns the class, if any. The classes also carry the
//! pages of the log rules (`FAB-NCCL-*`, `FAB-BENCH-*`) that `fabrik rules` lists: [`rules`].

pub mod format;

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::OnceLock;

use fabrik_model::{Rule, Scope, Severity, Source};

use format::Pattern;

const MESSAGES: &str = include_str!("../../data/nccl-messages.tsv");
/// The second catalog: RCCL (ROCm/rccl release tags) and AMD's AINIC network plugin.
const RCCL_MESSAGES: &str = include_str!("../../data/rccl-messages.tsv");
const CLASSES: &str = include_str!("../../data/nccl-classes.txt");

/// Which NCCL log level a message is printed at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `WARN` (printed through `WARN(...)`).
    Warn,
    /// `INFO` (printed through `INFO(...)`).
    Info,
}

/// One distinct format string of the sources.
#[derive(Debug)]
pub struct Message {
    /// The level it is printed at.
    pub kind: Kind,
    /// `nccl`, `ofi`, `sharp`, `tcpx`, `fastrak`, `rccl`, `anp`.
    pub source: &'static str,
    /// NCCL's code area (`net`, `transport`, `proxy`, `bootstrap`, `init`, `graph`, `nvls`,
    /// `ras`, `plugin`, `other`), or the plugin's name.
    pub area: &'static str,
    /// The file it was printed from, in the last release that has it.
    pub file: &'static str,
    /// The first release that prints it.
    pub first: &'static str,
    /// The last release that prints it.
    pub last: &'static str,
    /// How many releases print it.
    pub releases: u32,
    /// The format string (escapes of the data file undone).
    pub format: String,
    /// Index into [`Catalog::classes`].
    pub class: Option<usize>,
}

/// A cause class: what a set of messages means and what fixes it.
#[derive(Debug)]
pub struct Class {
    /// The rule id its findings carry.
    pub rule: &'static str,
    /// Its severity.
    pub severity: Severity,
    /// A short title for the rule page.
    pub title: &'static str,
    /// What a message of this class means.
    pub means: &'static str,
    /// What fixes it.
    pub fix: &'static str,
    /// NCCL settings (environment variables) involved.
    pub settings: Vec<&'static str>,
    /// The documentation and issues behind it.
    pub sources: Vec<Source>,
    /// For a rule page: what the rule reads.
    pub checks: String,
    /// For a rule page: the evidence.
    pub evidence: &'static str,
    /// Format prefixes this class claims (`match` lines of the data file).
    pub claims: Vec<&'static str>,
}

/// The catalog: messages, classes and the matchers of the WARN messages.
#[derive(Debug)]
pub struct Catalog {
    /// Every distinct message of the sources.
    pub messages: Vec<Message>,
    /// The cause classes.
    pub classes: &'static [Class],
    /// Data lines that did not parse (a test keeps this empty).
    pub malformed: Vec<&'static str>,
    warn: Vec<Compiled>,
    /// Candidates by their whole leading literal (the text before the first conversion), keyed
    /// by its FNV-1a hash: one pass over the message's first bytes hashes every prefix, and the
    /// prefixes whose length is some leading literal's are looked up. The cost grows with the
    /// longest leading literal, not with the number of formats (aws-ofi-nccl's ~950 all start
    /// with `NET/OFI `).
    by_lead: HashMap<u64, Vec<usize>, BuildHasherDefault<Prehashed>>,
    /// `is_lead_len[n]`: some leading literal is `n` bytes long.
    is_lead_len: Vec<bool>,
    /// Patterns that start with a conversion: tried after a prefilter on their longest literal.
    wild: Vec<usize>,
}

/// One WARN format ready to match.
#[derive(Debug)]
struct Compiled {
    /// Index into [`Catalog::messages`].
    message: usize,
    pattern: Pattern,
    /// The pattern's longest literal: a message without it cannot match.
    key: memchr::memmem::Finder<'static>,
}

/// Patterns with fewer literal bytes than this say too little to be told apart (`%s: %s`).
const MIN_LITERAL: usize = 6;
/// Shortest cut message [`Catalog::lookup`] completes from a format's leading literal: shorter
/// text names too many formats to say which one was cut.
const MIN_CUT: usize = 12;
/// Formats that start with less literal text than this (`[%s] ...`, `%s: ...`) would take any
/// cut line that shares a bracket or a word: they are not completed.
const MIN_CUT_LEAD: usize = 8;

/// The catalog, parsed on first use.
pub fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| Catalog::parse(&[MESSAGES, RCCL_MESSAGES]))
}

struct ClassSet {
    classes: Vec<Class>,
    malformed: Vec<&'static str>,
}

/// The classes alone: what `fabrik rules` and `fabrik explain` need, without parsing the
/// messages and compiling their matchers.
fn class_set() -> &'static ClassSet {
    static CLASS_SET: OnceLock<ClassSet> = OnceLock::new();
    CLASS_SET.get_or_init(|| {
        let mut malformed = Vec::new();
        let classes = parse_classes(CLASSES, &mut malformed);
        ClassSet { classes, malformed }
    })
}

/// The cause classes of `data/nccl-classes.txt`, in file order.
pub fn classes() -> &'static [Class] {
    &class_set().classes
}

/// The class of an NCCL `WARN` message (the text after `NCCL WARN `), if the catalog knows it.
pub fn classify(message: &[u8]) -> Option<&'static Class> {
    let c = catalog();
    let m = c.lookup(message)?;
    m.class.map(|i| &c.classes[i])
}

/// The log rules (`FAB-NCCL-*`, `FAB-BENCH-*`) as rule pages, in the data file's order.
pub fn rules() -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES.get_or_init(|| {
        classes()
            .iter()
            .map(|c| Rule {
                id: c.rule,
                severity: c.severity,
                scope: Scope::Log,
                title: c.title,
                checks: &c.checks,
                why: c.means,
                evidence: c.evidence,
                fix: c.fix,
                sources: &c.sources,
            })
            .collect()
    })
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(o) => out.push(o),
            None => out.push('\\'),
        }
    }
    out
}

fn severity(s: &str) -> Option<Severity> {
    match s {
        "error" => Some(Severity::Error),
        "warning" => Some(Severity::Warning),
        "info" => Some(Severity::Info),
        _ => None,
    }
}

impl Catalog {
    fn parse(files: &[&'static str]) -> Catalog {
        let mut malformed = class_set().malformed.clone();
        let mut msgs = Vec::new();
        for line in files.iter().flat_map(|f| f.lines()) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let f: Vec<&'static str> = line.splitn(8, '\t').collect();
            let (Some(kind), Some(releases)) = (
                match f.first() {
                    Some(&"WARN") => Some(Kind::Warn),
                    Some(&"INFO") => Some(Kind::Info),
                    _ => None,
                },
                f.get(6).and_then(|r| r.parse().ok()),
            ) else {
                malformed.push(line);
                continue;
            };
            let Some(fmt) = f.get(7) else {
                malformed.push(line);
                continue;
            };
            msgs.push(Message {
                kind,
                source: f[1],
                area: f[2],
                file: f[3],
                first: f[4],
                last: f[5],
                releases,
                format: unescape(fmt),
                class: None,
            });
        }
        let classes = classes();
        // Each message takes the class of the longest `match` prefix that claims it.
        for m in &mut msgs {
            let mut best: Option<(usize, usize)> = None;
            for (ci, c) in classes.iter().enumerate() {
                for claim in &c.claims {
                    let (src, prefix) = split_claim(claim);
                    if src.is_some_and(|s| !claim_covers(s, m.source)) {
                        continue;
                    }
                    if m.format.starts_with(prefix) && best.is_none_or(|(_, l)| prefix.len() > l) {
                        best = Some((ci, prefix.len()));
                    }
                }
            }
            m.class = best.map(|(ci, _)| ci);
        }
        let mut warn = Vec::new();
        let mut by_lead: HashMap<u64, Vec<usize>, BuildHasherDefault<Prehashed>> =
            HashMap::default();
        let mut is_lead_len = Vec::new();
        let mut wild = Vec::new();
        // RCCL repeats most of NCCL's formats word for word: one matcher per distinct text
        // (the first source's message answers; its class is the same by `claim_covers`).
        let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
        for (i, m) in msgs.iter().enumerate() {
            if m.kind != Kind::Warn || !seen.insert(m.format.as_str()) {
                continue;
            }
            let p = Pattern::compile(&m.format);
            if p.literal_len < MIN_LITERAL {
                continue;
            }
            let k = warn.len();
            match p.leading_literal() {
                [] => wild.push(k),
                lead => {
                    by_lead.entry(fnv1a(lead)).or_default().push(k);
                    if is_lead_len.len() <= lead.len() {
                        is_lead_len.resize(lead.len() + 1, false);
                    }
                    is_lead_len[lead.len()] = true;
                }
            }
            let key = memchr::memmem::Finder::new(p.longest_literal().trim_ascii()).into_owned();
            warn.push(Compiled {
                message: i,
                pattern: p,
                key,
            });
        }
        Catalog {
            messages: msgs,
            classes,
            malformed,
            warn,
            by_lead,
            is_lead_len,
            wild,
        }
    }

    /// The catalogued WARN format that printed `message`; the most specific one (most literal
    /// text) when several could have.
    pub fn lookup(&self, message: &[u8]) -> Option<&Message> {
        let message = message.trim_ascii();
        let mut best: Option<(usize, usize)> = None;
        let consider = |k: usize, best: &mut Option<(usize, usize)>| {
            let Some(Compiled {
                message: i,
                pattern: p,
                key,
            }) = self.warn.get(k)
            else {
                return;
            };
            if best.is_some_and(|(_, l)| l >= p.literal_len) {
                return;
            }
            // The longest literal must be in the message: one memmem before any backtracking.
            if key.find(message).is_none() {
                return;
            }
            if p.matches(message) {
                *best = Some((*i, p.literal_len));
            }
        };
        for ks in self.lead_candidates(message) {
            for &k in ks {
                consider(k, &mut best);
            }
        }
        for &k in &self.wild {
            consider(k, &mut best);
        }
        match best {
            Some((i, _)) => self.messages.get(i),
            None => self.lookup_cut(message),
        }
    }

    /// A message cut short, as pasted excerpts often end (`Socket recv failed` for `Socket recv
    /// failed while polling for opId=%p`, `... operation Set` for `... operation %s from rank
    /// %d`): the format it is the start of, when the cut text still names one class alone.
    fn lookup_cut(&self, message: &[u8]) -> Option<&Message> {
        if message.len() < MIN_CUT {
            return None;
        }
        let mut found: Option<&Message> = None;
        for c in &self.warn {
            // Only formats that start with text (not with a conversion) can be told from a cut
            // line, and only those whose start agrees with the message's are tried in full.
            let lead = c.pattern.leading_literal();
            let n = lead.len().min(message.len());
            if lead.len() < MIN_CUT_LEAD
                || lead[..n] != message[..n]
                || !c.pattern.matches_cut(message)
            {
                continue;
            }
            let m = self.messages.get(c.message)?;
            match found {
                None => found = Some(m),
                Some(f) if f.class == m.class => {}
                Some(_) => return None,
            }
        }
        found
    }
}

impl Catalog {
    /// How many patterns [`Catalog::lookup`] tries in full for `message`, after the index and
    /// the longest-literal prefilter (the work per WARN line; a test bounds it).
    pub fn candidates(&self, message: &[u8]) -> usize {
        let message = message.trim_ascii();
        let mut ks: Vec<usize> = self.wild.clone();
        for found in self.lead_candidates(message) {
            ks.extend(found);
        }
        ks.iter()
            .filter_map(|&k| self.warn.get(k))
            .filter(|c| c.key.find(message).is_some())
            .count()
    }
}

impl Catalog {
    /// The buckets of the leading literals that `message` starts with (a hash collision only
    /// adds a candidate that the full match then rejects).
    fn lead_candidates<'a>(&'a self, message: &'a [u8]) -> impl Iterator<Item = &'a Vec<usize>> {
        let mut h = FNV_OFFSET;
        message
            .iter()
            .take(self.is_lead_len.len().saturating_sub(1))
            .enumerate()
            .filter_map(move |(i, b)| {
                h = fnv_step(h, *b);
                if self.is_lead_len.get(i + 1) == Some(&true) {
                    self.by_lead.get(&h)
                } else {
                    None
                }
            })
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

fn fnv_step(h: u64, b: u8) -> u64 {
    (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(FNV_OFFSET, |h, b| fnv_step(h, *b))
}

/// A hasher for keys that are already hashes.
#[derive(Default)]
pub struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = fnv_step(self.0, *b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// RCCL is NCCL's code hipified: a format it shares word for word with NCCL means what NCCL's
/// does, so a claim limited to `nccl` covers RCCL's copy too.
fn claim_covers(claim_source: &str, message_source: &str) -> bool {
    claim_source == message_source || (claim_source == "nccl" && message_source == "rccl")
}

/// `ofi:NET/OFI Unable` limits a claim to one source.
fn split_claim(claim: &str) -> (Option<&str>, &str) {
    for s in [
        "nccl:", "ofi:", "sharp:", "tcpx:", "fastrak:", "rccl:", "anp:",
    ] {
        if let Some(rest) = claim.strip_prefix(s) {
            return (Some(&s[..s.len() - 1]), rest);
        }
    }
    (None, claim)
}

/// The classes file: blocks of `key: value` lines, each block opened by `rule: FAB-...`.
fn parse_classes(text: &'static str, malformed: &mut Vec<&'static str>) -> Vec<Class> {
    let mut out: Vec<Class> = Vec::new();
    for line in text.lines() {
        let line = line.trim_end();
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            malformed.push(line);
            continue;
        };
        let value = value.strip_prefix(' ').unwrap_or(value);
        if key == "rule" {
            out.push(Class {
                rule: value.trim(),
                severity: Severity::Warning,
                title: "",
                means: "",
                fix: "",
                settings: Vec::new(),
                sources: Vec::new(),
                checks: String::new(),
                evidence: "",
                claims: Vec::new(),
            });
            continue;
        }
        let Some(c) = out.last_mut() else {
            malformed.push(line);
            continue;
        };
        match key {
            "severity" => match severity(value.trim()) {
                Some(s) => c.severity = s,
                None => malformed.push(line),
            },
            "title" => c.title = value,
            "means" => c.means = value,
            "fix" => c.fix = value,
            "evidence" => c.evidence = value,
            "checks" => c.checks = value.to_string(),
            "settings" => c.settings = value.split(',').map(str::trim).collect(),
            "source" => match value.rsplit_once(" | ") {
                Some((title, url)) => c.sources.push(Source {
                    title: title.trim(),
                    url: url.trim(),
                }),
                None => malformed.push(line),
            },
            "match" => c.claims.push(value),
            _ => malformed.push(line),
        }
    }
    for c in &mut out {
        if c.checks.is_empty() {
            c.checks = checks_text(c);
        }
        if c.evidence.is_empty() {
            c.evidence = "The WARN line (host, process, GPU, source location and message) in NCCL_DEBUG=INFO output, as `fabrik logs` reads it.";
        }
    }
    out
}

fn checks_text(c: &Class) -> String {
    let mut s = String::from(
        "NCCL `WARN` lines whose text is printed by one of these format strings of NCCL's, RCCL's or their plugins' sources (data/nccl-messages.tsv, data/rccl-messages.tsv):",
    );
    for claim in &c.claims {
        let (src, prefix) = split_claim(claim);
        s.push_str(&format!(
            "\n- `{}…`{}",
            prefix.replace('`', "'"),
            src.map(|s| format!(" ({s})")).unwrap_or_default()
        ));
    }
    if !c.settings.is_empty() {
        s.push_str(&format!(
            "\n\nNCCL settings involved: {}.",
            c.settings.join(", ")
        ));
    }
    s
}

#[cfg(test)]
mod tests;
