//! Command words that are either literal or a variable expanded at run time, so one command
//! can be written for a shell (`"$NODE_RANK"`) and for Kubernetes (`$(NODE_RANK)`).

use crate::LaunchError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Word {
    Lit(String),
    /// `prefix` followed by the value of the variable.
    Var {
        prefix: String,
        var: String,
    },
}

impl Word {
    pub fn lit(s: impl Into<String>) -> Self {
        Word::Lit(s.into())
    }
    pub fn var(prefix: &str, var: &str) -> Self {
        Word::Var {
            prefix: prefix.into(),
            var: var.into(),
        }
    }

    /// For a POSIX shell: literals single-quoted where needed, variables in double quotes.
    pub fn shell(&self) -> Result<String, LaunchError> {
        match self {
            Word::Lit(s) => quote(s),
            Word::Var { prefix, var } => Ok(format!("{}\"${{{var}}}\"", quote_prefix(prefix)?)),
        }
    }

    /// For a Kubernetes `command`/`args` entry: `$(VAR)` is expanded by the kubelet.
    pub fn k8s(&self) -> String {
        match self {
            // A literal `$(` would be expanded by the kubelet; `$$` escapes it.
            Word::Lit(s) => s.replace("$(", "$$("),
            Word::Var { prefix, var } => format!("{}$({var})", prefix.replace("$(", "$$(")),
        }
    }
}

fn quote_prefix(p: &str) -> Result<String, LaunchError> {
    if p.is_empty() {
        Ok(String::new())
    } else {
        quote(p)
    }
}

pub fn quote(s: &str) -> Result<String, LaunchError> {
    fabrik_nccl::env::render::shell_quote(s).map_err(|reason| LaunchError::Unquotable {
        what: format!("{s:?}"),
        reason,
    })
}

pub fn shell_line(words: &[Word]) -> Result<String, LaunchError> {
    Ok(words
        .iter()
        .map(Word::shell)
        .collect::<Result<Vec<_>, _>>()?
        .join(" "))
}

/// Like [`shell_line`], continuing the line (` \` newline) before every word equal to one of
/// `breaks`, so long commands stay readable without touching quoted values.
pub fn shell_lines(words: &[Word], breaks: &[&str]) -> Result<String, LaunchError> {
    let mut out = String::new();
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            let brk = matches!(w, Word::Lit(s) if breaks.contains(&s.as_str()));
            out.push_str(if brk { " \\\n  " } else { " " });
        }
        out.push_str(&w.shell()?);
    }
    Ok(out)
}
