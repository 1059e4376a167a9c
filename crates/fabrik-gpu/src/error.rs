/// Everything that can fail on the GPU side; every message names the library or call.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// The shared library could not be opened at all.
    #[error("{lib} not found ({why}): {hint}")]
    Missing {
        lib: String,
        why: String,
        hint: &'static str,
    },
    /// The library is there but too old (or not the real one): a symbol is missing.
    #[error("{lib} lacks {symbol}: {hint}")]
    Symbol {
        lib: String,
        symbol: &'static str,
        hint: &'static str,
    },
    #[error("{call} failed: {text} (CUresult {code})")]
    Cuda {
        call: &'static str,
        code: i32,
        text: String,
    },
    /// `name` is the ncclResult_t enumerator, `text` ncclGetErrorString's, `last` the
    /// communicator's ncclGetLastError detail when the library has it.
    #[error("{call} failed: {name} ({code}): {text}{}", last.as_deref().map(|l| format!(" ({l})")).unwrap_or_default())]
    Nccl {
        call: &'static str,
        code: i32,
        name: &'static str,
        text: String,
        last: Option<String>,
    },
    #[error("{what} did not finish within {secs:.1} s")]
    Timeout { what: String, secs: f64 },
    #[error("{0}")]
    Invalid(String),
}

impl GpuError {
    /// A load failure from [`crate::dl`], with `hint`: what to install or upgrade.
    pub(crate) fn from_dl(e: crate::dl::DlError, hint: &'static str) -> Self {
        match e {
            crate::dl::DlError::Open { lib, reason } => GpuError::Missing {
                lib,
                why: reason,
                hint,
            },
            crate::dl::DlError::Symbol { lib, symbol } => GpuError::Symbol { lib, symbol, hint },
        }
    }
}
