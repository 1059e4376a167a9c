//! A printf format string turned into a matcher of the text it prints.
//!
//! NCCL and its plugins print through `vsnprintf`, so a logged message is the format with each
//! conversion replaced by its rendering. Literal segments must appear as written; conversions
//! match what printf can produce for them (`%d` digits, `%x`/`%p` hex, `%s` any text). A format
//! cut at an embedded newline matches as a prefix, because a log line ends there.

use memchr::memmem;

/// What one conversion can print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conv {
    /// `%d %i %u %ld %lu %lld %zu %hd ...`: optional sign, decimal digits.
    Int,
    /// `%x %X %lx %p %#x`: hex digits with an optional `0x`; `%p` of NULL prints `(nil)`.
    Hex,
    /// `%o`.
    Oct,
    /// `%f %g %e %a` and their upper-case forms.
    Float,
    /// `%c`: one character.
    Char,
    /// `%s %.*s`, and tokens of the source that are not literals (`#call`): any text.
    Str,
}

/// One piece of a compiled format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// Literal bytes, which must appear as written.
    Lit(Vec<u8>),
    /// A conversion.
    Conv(Conv),
}

/// A compiled format.
#[derive(Debug, Clone)]
pub struct Pattern {
    tokens: Vec<Token>,
    /// The format was cut at a newline: whatever follows the last token is accepted.
    open_end: bool,
    /// Literal bytes in total: the more, the more specific the pattern.
    pub literal_len: usize,
}

/// Matching backtracks over `%s`; bound its work so that no message costs more than this.
const BUDGET: u32 = 4096;

impl Pattern {
    /// Compiles an (unescaped) format string.
    pub fn compile(format: &str) -> Pattern {
        let (body, open_end) = match format.find('\n') {
            Some(p) => (&format[..p], true),
            None => (format, false),
        };
        let body = body.trim_end();
        let b = body.as_bytes();
        let mut tokens: Vec<Token> = Vec::new();
        let mut lit: Vec<u8> = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i] != b'%' {
                lit.push(b[i]);
                i += 1;
                continue;
            }
            if b.get(i + 1) == Some(&b'%') {
                lit.push(b'%');
                i += 2;
                continue;
            }
            // flags, width, precision, length, then the conversion letter
            let mut j = i + 1;
            while j < b.len() && b"-+ #0'".contains(&b[j]) {
                j += 1;
            }
            while j < b.len() && (b[j].is_ascii_digit() || b[j] == b'*' || b[j] == b'.') {
                j += 1;
            }
            while j < b.len() && b"hlqjztL".contains(&b[j]) {
                j += 1;
            }
            let conv = match b.get(j) {
                Some(b'd' | b'i' | b'u') => Conv::Int,
                Some(b'x' | b'X' | b'p') => Conv::Hex,
                Some(b'o') => Conv::Oct,
                Some(b'f' | b'F' | b'g' | b'G' | b'e' | b'E' | b'a' | b'A') => Conv::Float,
                Some(b'c') => Conv::Char,
                // absl::StrFormat's %v (FasTrak) prints any value.
                Some(b's' | b'v') => Conv::Str,
                // Not a conversion printf knows: printed as written.
                _ => {
                    lit.push(b'%');
                    i += 1;
                    continue;
                }
            };
            if !lit.is_empty() {
                tokens.push(Token::Lit(std::mem::take(&mut lit)));
            }
            tokens.push(Token::Conv(conv));
            i = j + 1;
        }
        if !lit.is_empty() {
            tokens.push(Token::Lit(lit));
        }
        let literal_len = tokens
            .iter()
            .map(|t| match t {
                Token::Lit(l) => l.iter().filter(|c| !c.is_ascii_whitespace()).count(),
                Token::Conv(_) => 0,
            })
            .sum();
        Pattern {
            tokens,
            open_end,
            literal_len,
        }
    }

    /// The format's pieces, in order.
    pub fn tokens(&self) -> &[Token] {
        &self.tokens
    }

    /// The literal text the message must start with (empty when it starts with a conversion).
    pub fn leading_literal(&self) -> &[u8] {
        match self.tokens.first() {
            Some(Token::Lit(l)) => l,
            _ => &[],
        }
    }

    /// The longest literal segment, for a substring prefilter.
    pub fn longest_literal(&self) -> &[u8] {
        self.tokens
            .iter()
            .filter_map(|t| match t {
                Token::Lit(l) => Some(l.as_slice()),
                Token::Conv(_) => None,
            })
            .max_by_key(|l| l.len())
            .unwrap_or(&[])
    }

    /// Whether `message` (one log line's text after `NCCL WARN `) is what this format prints.
    pub fn matches(&self, message: &[u8]) -> bool {
        let message = message.trim_ascii_end();
        let mut budget = BUDGET;
        self.match_at(0, message, 0, &mut budget, false)
    }

    /// Whether `message` is the start of what this format prints: a line cut anywhere, inside a
    /// literal or a conversion, as excerpts pasted into issue threads often end.
    pub fn matches_cut(&self, message: &[u8]) -> bool {
        let message = message.trim_ascii_end();
        let mut budget = BUDGET;
        self.match_at(0, message, 0, &mut budget, true)
    }

    fn match_at(&self, t: usize, m: &[u8], pos: usize, budget: &mut u32, cut: bool) -> bool {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        if cut && pos >= m.len() {
            return true;
        }
        let Some(tok) = self.tokens.get(t) else {
            return self.open_end || m[pos..].trim_ascii().is_empty();
        };
        match tok {
            Token::Lit(l) => {
                if cut && l.len() > m.len() - pos && l.starts_with(&m[pos..]) {
                    return true;
                }
                // printf pads with spaces; a literal space run also absorbs a width we did not
                // model, so compare runs of blanks loosely.
                match lit_at(l, m, pos) {
                    Some(end) => self.match_at(t + 1, m, end, budget, cut),
                    None => false,
                }
            }
            Token::Conv(Conv::Str) => {
                let next_lit = match self.tokens.get(t + 1) {
                    Some(Token::Lit(l)) => Some(l.as_slice()),
                    _ => None,
                };
                match next_lit {
                    // The text of %s ends where the next literal starts: try each occurrence.
                    Some(l) if !l.is_empty() => {
                        let key = l.trim_ascii();
                        let key = if key.is_empty() { &l[..1] } else { key };
                        let mut from = pos;
                        while let Some(off) = memmem::find(&m[from..], key) {
                            let start = from + off;
                            // the literal may begin with blanks that precede the key
                            let lead = l.len() - l.trim_ascii_start().len();
                            let cand = start.saturating_sub(lead).max(pos);
                            for s in cand..=start {
                                if self.match_at(t + 1, m, s, budget, cut) {
                                    return true;
                                }
                            }
                            if *budget == 0 {
                                return false;
                            }
                            from = start + 1;
                        }
                        // Cut inside this text, before the next literal was printed.
                        cut
                    }
                    _ => {
                        if t + 1 == self.tokens.len() {
                            return true;
                        }
                        (pos..=m.len()).any(|s| self.match_at(t + 1, m, s, budget, cut))
                    }
                }
            }
            Token::Conv(c) => match conv_len(*c, &m[pos..]) {
                Some(n) => self.match_at(t + 1, m, pos + n, budget, cut),
                None => false,
            },
        }
    }
}

/// Where literal `l` ends when it starts at `pos`, or None. Blanks must be there as written
/// (padding belongs to the conversions, which skip leading blanks), except at the end of the
/// message, whose trailing blanks were trimmed.
fn lit_at(l: &[u8], m: &[u8], pos: usize) -> Option<usize> {
    let mut p = pos;
    for &c in l {
        match m.get(p) {
            Some(&b) if b == c => p += 1,
            None if c.is_ascii_whitespace() => {}
            _ => return None,
        }
    }
    Some(p)
}

/// How many bytes of `s` one conversion printed (the longest run it can print).
fn conv_len(c: Conv, s: &[u8]) -> Option<usize> {
    let lead = s.iter().take_while(|b| **b == b' ').count();
    let s2 = &s[lead..];
    let n = match c {
        Conv::Int => {
            let sign = usize::from(matches!(s2.first(), Some(b'-' | b'+')));
            let d = s2[sign..].iter().take_while(|b| b.is_ascii_digit()).count();
            (d > 0).then_some(sign + d)
        }
        Conv::Hex => {
            if s2.starts_with(b"(nil)") {
                Some(5)
            } else {
                let px = if s2.starts_with(b"0x") || s2.starts_with(b"0X") {
                    2
                } else {
                    0
                };
                let d = s2[px..]
                    .iter()
                    .take_while(|b| b.is_ascii_hexdigit())
                    .count();
                (d > 0).then_some(px + d)
            }
        }
        Conv::Oct => {
            let d = s2.iter().take_while(|b| (b'0'..=b'7').contains(b)).count();
            (d > 0).then_some(d)
        }
        Conv::Float => {
            let d = s2
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric() || b"+-.".contains(b))
                .count();
            (d > 0).then_some(d)
        }
        Conv::Char => {
            // one UTF-8 scalar at most; printf %c prints one byte
            (!s.is_empty()).then_some(1)
        }
        Conv::Str => Some(s.len()),
    }?;
    Some(if c == Conv::Char { n } else { lead + n })
}

/// Renders a format with sample arguments of each conversion: what a test feeds the matcher.
pub fn render_sample(format: &str) -> String {
    let body = match format.find('\n') {
        Some(p) => &format[..p],
        None => format,
    };
    let p = Pattern::compile(body);
    let mut out = String::new();
    for (k, t) in p.tokens.iter().enumerate() {
        match t {
            Token::Lit(l) => out.push_str(&String::from_utf8_lossy(l)),
            Token::Conv(c) => out.push_str(match c {
                Conv::Int => ["3", "-1", "4096", "0"][k % 4],
                Conv::Hex => ["0x7f3a2c001e00", "1b000", "(nil)", "ff"][k % 4],
                Conv::Oct => "755",
                Conv::Float => "1.500000",
                Conv::Char => "x",
                Conv::Str => ["mlx5_0", "some text", "", "eth0:10.0.0.1<0>"][k % 4],
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_match_what_printf_prints() {
        let p = Pattern::compile(
            "Duplicate GPU detected : rank %d and rank %d both on CUDA device %lx",
        );
        assert!(p.matches(b"Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1b000"));
        assert!(
            !p.matches(b"Duplicate GPU detected : rank one and rank 0 both on CUDA device 1b000")
        );
        assert!(!p.matches(
            b"Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1b000 and more"
        ));
    }

    #[test]
    fn strings_widths_and_percent() {
        let p = Pattern::compile("NET/IB : %s:%d Got completion from peer %s with status=%d opcode=%d len=%u vendor err %d (%s)%s%s%s%s");
        assert!(p.matches(b"NET/IB : mlx5_0:1 Got completion from peer 10.0.0.2<46023> with status=12 opcode=0 len=0 vendor err 129 (Recv)"));
        let p = Pattern::compile("Message truncated : received %5.1f%% of %.*s");
        assert!(p.matches(b"Message truncated : received  12.5% of abc"));
        let p = Pattern::compile("ptr %p size %zu");
        assert!(p.matches(b"ptr (nil) size 0"));
        assert!(p.matches(b"ptr 0x7f00aa size 12"));
    }

    #[test]
    fn a_format_cut_at_a_newline_matches_as_prefix() {
        let p = Pattern::compile("Failed to bind NVLink SHARP (NVLS) Multicast memory of size %ld : CUDA error %d '%s'.\nThis is usually caused");
        assert!(p.matches(b"Failed to bind NVLink SHARP (NVLS) Multicast memory of size 1024 : CUDA error 801 'operation not supported'."));
    }

    #[test]
    fn pathological_input_is_bounded() {
        let p = Pattern::compile("%s a %s a %s a %s a %s b");
        let m = "a ".repeat(5000);
        assert!(!p.matches(m.as_bytes()));
    }

    #[test]
    fn sample_rendering_matches_its_format() {
        for f in ["rank %d dev %s %p", "%s:%d -> %d", "x %c y %.*s z %5.2f"] {
            assert!(
                Pattern::compile(f).matches(render_sample(f).as_bytes()),
                "{f}"
            );
        }
    }
}
