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

/// Quotes `s` for POSIX shells: bare when every character is plain, else in single quotes
/// (`'` written as `'\''`). Hand-written because shlex also quotes `=` and `,`, which would
/// turn `--nnodes=2` and `eth1,eth2` into noise; this quoter is only used for words after the
/// command name, where `=` has no special meaning. Only a NUL byte cannot be quoted.
pub fn shell_quote(s: &str) -> Result<String, String> {
    if s.contains('\0') {
        return Err("contains a NUL byte".into());
    }
    if s.is_empty() {
        return Ok("''".into());
    }
    let plain = s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
    if plain {
        Ok(s.to_string())
    } else {
        Ok(format!("'{}'", s.replace('\'', "'\\''")))
    }
}

fn quoted(name: &str, value: &str) -> Result<String, RenderError> {
    shell_quote(value).map_err(|reason| RenderError::Unquotable {
        name: name.into(),
        reason,
    })
}

/// Comments never span lines, whatever the message holds.
fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

fn header(env: &Env, out: &mut String) {
    let _ = writeln!(
        out,
        "# fabrik env: profile {} (requested {}), transport {}",
        env.profile,
        env.requested_profile,
        env.transport.as_str()
    );
    let _ = writeln!(out, "# {}", one_line(&env.summary));
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
        let _ = writeln!(out, "# {tag}: {}{src}", one_line(&n.message));
    }
}

/// `export K=V` lines, each preceded by `# reason (source)`.
pub fn shell(env: &Env) -> Result<String, RenderError> {
    let mut out = String::new();
    header(env, &mut out);
    for v in &env.vars {
        let _ = writeln!(out, "# {} ({})", one_line(&v.reason), v.source);
        let _ = writeln!(out, "export {}={}", v.name, quoted(&v.name, &v.value)?);
    }
    Ok(out)
}

fn dotenv_value(v: &str) -> String {
    let plain = v
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "=:,._/-+@%^".contains(c));
    if plain {
        v.to_string()
    } else {
        let escaped = v
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n")
            .replace('$', "\\$");
        format!("\"{escaped}\"")
    }
}

/// `K=V` lines (docker `--env-file` and most dotenv readers).
pub fn dotenv(env: &Env) -> String {
    let mut out = String::new();
    header(env, &mut out);
    for v in &env.vars {
        let _ = writeln!(out, "# {} ({})", one_line(&v.reason), v.source);
        let _ = writeln!(out, "{}={}", v.name, dotenv_value(&v.value));
    }
    out
}

/// `-e K=V` flags for `docker run`, shell-quoted, on one line.
pub fn docker_flags(env: &Env) -> Result<String, RenderError> {
    let mut parts = Vec::new();
    for v in &env.vars {
        parts.push("-e".to_string());
        parts.push(quoted(&v.name, &format!("{}={}", v.name, v.value))?);
    }
    Ok(parts.join(" "))
}

#[derive(Serialize)]
struct K8sEnvVar<'a> {
    name: &'a str,
    value: &'a str,
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
            .map(|v| K8sEnvVar {
                name: &v.name,
                value: &v.value,
            })
            .collect(),
    };
    let mut out = String::new();
    header(env, &mut out);
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
