//! The environment as text: shell exports with reasons, dotenv, docker `-e` flags, a
//! Kubernetes `env:` list, JSON.

use std::fmt::Write as _;

use serde::Serialize;

use super::{Env, NoteLevel};

/// Why an environment could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// A value no shell quoting can carry (a NUL byte).
    #[error("value of {name} cannot be written for a shell: {reason}")]
    Unquotable {
        /// The variable's name.
        name: String,
        /// Why its value cannot be quoted.
        reason: String,
    },
    /// JSON or YAML serialization failed.
    #[error("serializing: {0}")]
    Serialize(String),
}

/// The forms the environment is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum EnvFormat {
    /// `export K=V` with `# reason (source)` comments.
    Shell,
    /// `K=V` lines.
    Dotenv,
    /// `-e K=V` flags for `docker run`.
    Docker,
    /// A Kubernetes container `env:` list.
    K8s,
    /// The whole document as JSON.
    Json,
}

impl EnvFormat {
    /// Whether the form is for programs, which do not read the warnings in the text's
    /// comments: the caller says the summary and warnings on stderr.
    pub fn for_machines(self) -> bool {
        matches!(self, EnvFormat::Docker | EnvFormat::Json)
    }
}

/// The environment in `format`, newline-terminated.
pub fn render(env: &Env, format: EnvFormat) -> Result<String, RenderError> {
    match format {
        EnvFormat::Shell => shell(env),
        EnvFormat::Dotenv => dotenv(env),
        EnvFormat::Docker => docker_flags(env).map(|flags| flags + "\n"),
        EnvFormat::K8s => k8s_env(env),
        EnvFormat::Json => json(env),
    }
}

/// Quotes `s` as one POSIX shell word ([`fabrik_quote::sh::word`]); only a NUL byte cannot be
/// quoted.
pub fn shell_quote(s: &str) -> Result<String, String> {
    fabrik_quote::sh::word(s)
        .map(|w| w.into_owned())
        .map_err(|e| e.reason)
}

fn quoted(name: &str, value: &str) -> Result<String, RenderError> {
    fabrik_quote::sh::word(value)
        .map(|w| w.into_owned())
        .map_err(|e| RenderError::Unquotable {
            name: name.into(),
            reason: e.reason,
        })
}

/// A variable's name as the shell and docker's `-e` need it; the process environment can hold
/// names no shell can export (`--keep-env` reads it).
fn var_name(name: &str) -> Result<&str, RenderError> {
    fabrik_quote::sh::var_name(name).map_err(|e| RenderError::Unquotable {
        name: format!("{name:?}"),
        reason: e.reason,
    })
}

/// Comments never span lines, whatever the message holds.
fn one_line(s: &str) -> String {
    fabrik_quote::sh::comment(s)
}

/// The `#` lines every text form starts with; `comment` is the output language's comment
/// quoting (shell or YAML), through which every line goes whole.
fn header(env: &Env, out: &mut String, comment: fn(&str) -> String) {
    let mut line = |text: String| {
        let _ = writeln!(out, "# {}", comment(&text));
    };
    line(format!(
        "fabrik env: profile {} (requested {}), transport {}",
        env.profile,
        env.requested_profile,
        env.transport.as_str()
    ));
    line(env.summary.clone());
    for n in &env.notes {
        let tag = match n.level {
            NoteLevel::Warning => "warning",
            NoteLevel::Info => "note",
        };
        let src = n
            .source
            .as_deref()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default();
        line(format!("{tag}: {}{src}", n.message));
    }
}

/// `export K=V` lines, each preceded by `# reason (source)`.
pub fn shell(env: &Env) -> Result<String, RenderError> {
    let mut out = String::new();
    header(env, &mut out, one_line);
    for v in &env.vars {
        let _ = writeln!(out, "# {} ({})", one_line(&v.reason), one_line(&v.source));
        let _ = writeln!(
            out,
            "export {}={}",
            var_name(&v.name)?,
            quoted(&v.name, &v.value)?
        );
    }
    Ok(out)
}

/// `K=V` lines (docker `--env-file` and most dotenv readers).
pub fn dotenv(env: &Env) -> Result<String, RenderError> {
    let mut out = String::new();
    header(env, &mut out, one_line);
    for v in &env.vars {
        let value = fabrik_quote::dotenv::value(&v.value).map_err(|e| RenderError::Unquotable {
            name: v.name.clone(),
            reason: e.reason,
        })?;
        let _ = writeln!(out, "# {} ({})", one_line(&v.reason), one_line(&v.source));
        let _ = writeln!(out, "{}={value}", var_name(&v.name)?);
    }
    Ok(out)
}

/// `-e K=V` flags for `docker run`, shell-quoted, on one line.
pub fn docker_flags(env: &Env) -> Result<String, RenderError> {
    let mut parts = Vec::new();
    for v in &env.vars {
        parts.push("-e".to_string());
        parts.push(quoted(
            &v.name,
            &format!("{}={}", var_name(&v.name)?, v.value),
        )?);
    }
    Ok(parts.join(" "))
}

#[derive(Serialize)]
struct K8sEnvVar<'a> {
    name: &'a str,
    value: std::borrow::Cow<'a, str>,
}

#[derive(Serialize)]
struct K8sEnvList<'a> {
    env: Vec<K8sEnvVar<'a>>,
}

/// A Kubernetes container `env:` list.
pub fn k8s_env(env: &Env) -> Result<String, RenderError> {
    let list = K8sEnvList {
        env: env
            .vars
            .iter()
            .map(|v| {
                Ok(K8sEnvVar {
                    name: var_name(&v.name)?,
                    // The kubelet expands `$(VAR)` in env values.
                    value: fabrik_quote::kube::literal(&v.value),
                })
            })
            .collect::<Result<_, RenderError>>()?,
    };
    let mut out = String::new();
    header(env, &mut out, fabrik_quote::yaml::comment);
    out.push_str(
        &crate::yaml::to_string(&list).map_err(|e| RenderError::Serialize(e.to_string()))?,
    );
    Ok(out)
}

/// The whole [`Env`] document.
pub fn json(env: &Env) -> Result<String, RenderError> {
    serde_json::to_string_pretty(env)
        .map(|mut s| {
            s.push('\n');
            s
        })
        .map_err(|e| RenderError::Serialize(e.to_string()))
}
