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

    /// For a Kubernetes `command`/`args` entry: `$(VAR)` is expanded by the kubelet, so a
    /// literal has every `$` doubled ([`fabrik_quote::kube`]).
    pub fn k8s(&self) -> String {
        match self {
            Word::Lit(s) => fabrik_quote::kube::literal(s).into_owned(),
            Word::Var { prefix, var } => fabrik_quote::kube::reference(prefix, var),
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
    fabrik_quote::sh::word(s)
        .map(|w| w.into_owned())
        .map_err(|e| LaunchError::Unquotable {
            what: format!("{s:?}"),
            reason: e.reason,
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

/// `name` if a shell can export it and a launcher can pass it (`-e NAME`, `-x NAME=V`).
pub fn var_name(name: &str) -> Result<String, LaunchError> {
    fabrik_quote::sh::var_name(name)
        .map(str::to_string)
        .map_err(|e| LaunchError::Unquotable {
            what: format!("the variable name {name:?}"),
            reason: e.reason,
        })
}
