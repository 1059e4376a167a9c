/// Everything that can fail on the GPU side; every message names the library or call.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// The shared library could not be opened at all.
    #[error("{lib} not found ({why}): {hint}")]
    Missing {
        /// The library's name as given to dlopen.
        lib: String,
        /// dlerror's text.
        why: String,
        /// What to install or set so that the library is found.
        hint: &'static str,
    },
    /// The library is there but too old (or not the real one): a symbol is missing.
    #[error("{lib} lacks {symbol}: {hint}")]
    Symbol {
        /// The library's name as given to dlopen.
        lib: String,
        /// The symbol that is missing.
        symbol: &'static str,
        /// What version to install instead.
        hint: &'static str,
    },
    /// A CUDA driver call returned an error.
    #[error("{call} failed: {text} (CUresult {code})")]
    Cuda {
        /// The driver function, e.g. `cuMemAlloc_v2`.
        call: &'static str,
        /// The `CUresult` it returned.
        code: i32,
        /// `cuGetErrorString`'s text for `code`.
        text: String,
    },
    /// `name` is the ncclResult_t enumerator, `text` ncclGetErrorString's, `last` the
    /// communicator's ncclGetLastError detail when the library has it.
    #[error("{call} failed: {name} ({code}): {text}{}", last.as_deref().map(|l| format!(" ({l})")).unwrap_or_default())]
    Nccl {
        /// The NCCL function, e.g. `ncclCommInitRank`.
        call: &'static str,
        /// The `ncclResult_t` it returned.
        code: i32,
        /// The enumerator's name, e.g. `ncclSystemError`.
        name: &'static str,
        /// `ncclGetErrorString`'s text.
        text: String,
        /// `ncclGetLastError`'s detail, when the library has that call and it said something.
        last: Option<String>,
    },
    /// A wait on GPU work passed its deadline.
    #[error("{what} did not finish within {secs:.1} s")]
    Timeout {
        /// The call or work waited for.
        what: String,
        /// The deadline, in seconds.
        secs: f64,
    },
    /// A request refused before calling the library (a range outside a buffer, a bad id).
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
