//! NCCL's message catalog, derived from the sources of NCCL and its network plugins.
//!
//! Two data files, compiled in and parsed once on first use:
//! - `data/nccl-messages.tsv`: every `WARN` format string (and each `INFO` that records a
//!   transport, GPUDirect RDMA, plugin or fallback decision) of NVIDIA/nccl v2.4 to the newest
//!   release, aws-ofi-nccl, nccl-rdma-sharp-plugins and nccl-plugin-gpudirecttcpx, with its
//!   source file and the first and last release it appears in. Written by
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
use std::sync::OnceLock;

use fabrik_model::{Rule, Scope, Severity, Source};

use format::Pattern;

const MESSAGES: &str = include_str!("../../data/nccl-messages.tsv");
const CLASSES: &str = include_str!("../../data/nccl-classes.txt");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Warn,
    Info,
}

/// One distinct format string of the sources.
#[derive(Debug)]
pub struct Message {
    pub kind: Kind,
    /// `nccl`, `ofi`, `sharp`, `tcpx`.
    pub source: &'static str,
    /// NCCL's code area (`net`, `transport`, `proxy`, `bootstrap`, `init`, `graph`, `nvls`,
    /// `ras`, `plugin`, `other`), or the plugin's name.
    pub area: &'static str,
    /// The file it was printed from, in the last release that has it.
    pub file: &'static str,
    pub first: &'static str,
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
    pub severity: Severity,
    pub title: &'static str,
    pub means: &'static str,
    pub fix: &'static str,
    /// NCCL settings (environment variables) involved.
    pub settings: Vec<&'static str>,
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
    pub messages: Vec<Message>,
    pub classes: Vec<Class>,
    /// Data lines that did not parse (a test keeps this empty).
    pub malformed: Vec<&'static str>,
    warn: Vec<(usize, Pattern)>,
    /// Candidates by the first three bytes of their leading literal.
    by_lead: HashMap<[u8; 3], Vec<usize>>,
    /// Patterns whose leading literal is shorter than three bytes: tried after a prefilter on
    /// their longest literal.
    wild: Vec<usize>,
}

/// Patterns with fewer literal bytes than this say too little to be told apart (`%s: %s`).
const MIN_LITERAL: usize = 6;

/// The catalog, parsed on first use.
pub fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| Catalog::parse(MESSAGES, CLASSES))
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
        catalog()
            .classes
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
    fn parse(messages: &'static str, classes: &'static str) -> Catalog {
        let mut malformed = Vec::new();
        let mut msgs = Vec::new();
        for line in messages.lines() {
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
        let classes = parse_classes(classes, &mut malformed);
        // Each message takes the class of the longest `match` prefix that claims it.
        for m in &mut msgs {
            let mut best: Option<(usize, usize)> = None;
            for (ci, c) in classes.iter().enumerate() {
                for claim in &c.claims {
                    let (src, prefix) = split_claim(claim);
                    if src.is_some_and(|s| s != m.source) {
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
        let mut by_lead: HashMap<[u8; 3], Vec<usize>> = HashMap::new();
        let mut wild = Vec::new();
        for (i, m) in msgs.iter().enumerate() {
            if m.kind != Kind::Warn {
                continue;
            }
            let p = Pattern::compile(&m.format);
            if p.literal_len < MIN_LITERAL {
                continue;
            }
            let k = warn.len();
            match p.leading_literal() {
                [a, b, c, ..] => by_lead.entry([*a, *b, *c]).or_default().push(k),
                _ => wild.push(k),
            }
            warn.push((i, p));
        }
        Catalog {
            messages: msgs,
            classes,
            malformed,
            warn,
            by_lead,
            wild,
        }
    }

    /// The catalogued WARN format that printed `message`; the most specific one (most literal
    /// text) when several could have.
    pub fn lookup(&self, message: &[u8]) -> Option<&Message> {
        let message = message.trim_ascii();
        let mut best: Option<(usize, usize)> = None;
        let consider = |k: usize, best: &mut Option<(usize, usize)>| {
            let Some((i, p)) = self.warn.get(k) else {
                return;
            };
            if best.is_some_and(|(_, l)| l >= p.literal_len) {
                return;
            }
            if p.matches(message) {
                *best = Some((*i, p.literal_len));
            }
        };
        if let [a, b, c, ..] = message {
            if let Some(ks) = self.by_lead.get(&[*a, *b, *c]) {
                for &k in ks {
                    consider(k, &mut best);
                }
            }
        }
        for &k in &self.wild {
            let Some((_, p)) = self.warn.get(k) else {
                continue;
            };
            if memchr::memmem::find(message, p.longest_literal().trim_ascii()).is_some() {
                consider(k, &mut best);
            }
        }
        best.and_then(|(i, _)| self.messages.get(i))
    }
}

/// `ofi:NET/OFI Unable` limits a claim to one source.
fn split_claim(claim: &str) -> (Option<&str>, &str) {
    for s in ["nccl:", "ofi:", "sharp:", "tcpx:"] {
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
        "NCCL `WARN` lines whose text is printed by one of these format strings of NCCL's or its plugins' sources (data/nccl-messages.tsv):",
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
