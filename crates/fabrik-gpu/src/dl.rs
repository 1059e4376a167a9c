//! dlopen and dlsym for the vendor libraries fabrik loads at run time (the CUDA driver, NCCL,
//! libibverbs), with errors that name the library and the missing symbol: the one place every
//! loader goes through. Each caller maps [`DlError`] into its own error, adding what to install.

/// A shared library opened with dlopen, kept with the name it was opened by so that errors
/// name it. Function pointers taken from it are valid only while it is loaded.
pub struct Library {
    inner: libloading::Library,
    name: String,
}

impl std::fmt::Debug for Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Library").field("name", &self.name).finish()
    }
}

/// Why a library or one of its symbols could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DlError {
    /// dlopen failed; `reason` is dlerror's text (file not found, wrong ELF class...).
    #[error("cannot open {lib}: {reason}")]
    Open {
        /// The name given to dlopen.
        lib: String,
        /// dlerror's text.
        reason: String,
    },
    /// The library is there but lacks `symbol` (too old, or not the real one).
    #[error("{lib} lacks {symbol}")]
    Symbol {
        /// The name the library was opened by.
        lib: String,
        /// The symbol dlsym did not find.
        symbol: &'static str,
    },
}

impl Library {
    /// Opens `name` (a soname searched on the dynamic linker's path, or a path).
    ///
    /// # Safety
    /// Opening a library runs its ELF constructors; the caller vouches that this library's
    /// are sound to run in this process.
    pub unsafe fn open(name: &str) -> Result<Self, DlError> {
        // SAFETY: the caller vouches for the library's constructors.
        match unsafe { libloading::Library::new(name) } {
            Ok(inner) => Ok(Library {
                inner,
                name: name.to_string(),
            }),
            Err(e) => Err(DlError::Open {
                lib: name.to_string(),
                reason: e.to_string(),
            }),
        }
    }

    /// The name the library was opened by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Looks `symbol` up.
    ///
    /// # Safety
    /// `T` must be the C prototype of `symbol`, and the returned pointer must not outlive `self`.
    pub unsafe fn symbol<T: Copy>(&self, symbol: &'static str) -> Result<T, DlError> {
        // SAFETY: the caller vouches for the type and keeps `self` alive as long as the pointer.
        unsafe { self.inner.get::<T>(symbol.as_bytes()) }
            .map(|s| *s)
            .map_err(|_| DlError::Symbol {
                lib: self.name.clone(),
                symbol,
            })
    }

    /// Looks up a symbol that older versions of the library lack: absent is `None`, not an error.
    ///
    /// # Safety
    /// As for [`Library::symbol`].
    pub unsafe fn optional<T: Copy>(&self, symbol: &'static str) -> Option<T> {
        // SAFETY: as in `symbol`, vouched for by the caller.
        unsafe { self.symbol(symbol) }.ok()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_and_a_missing_symbol_are_named() {
        // SAFETY: the library does not exist; nothing is loaded.
        let err = unsafe { Library::open("libfabrik-no-such-library.so.9") }.unwrap_err();
        assert!(matches!(err, DlError::Open { ref lib, ref reason }
            if lib == "libfabrik-no-such-library.so.9" && reason.contains("libfabrik-no-such-library.so.9")));
        // SAFETY: libc is already loaded in this process; opening it again runs no constructor.
        let libc = unsafe { Library::open("libc.so.6") }.unwrap();
        assert_eq!(libc.name(), "libc.so.6");
        // SAFETY: `getpid` is `pid_t getpid(void)`; the pointer is dropped before `libc`.
        let getpid: unsafe extern "C" fn() -> i32 = unsafe { libc.symbol("getpid") }.unwrap();
        // SAFETY: getpid has no preconditions.
        assert_eq!(unsafe { getpid() }, std::process::id() as i32);
        // SAFETY: never called; the lookup fails.
        let missing = unsafe { libc.symbol::<unsafe extern "C" fn()>("fabrik_no_such_symbol") };
        assert_eq!(
            missing.unwrap_err(),
            DlError::Symbol {
                lib: "libc.so.6".into(),
                symbol: "fabrik_no_such_symbol"
            }
        );
        // SAFETY: never called; the lookup fails.
        let absent = unsafe { libc.optional::<unsafe extern "C" fn()>("fabrik_no_such_symbol") };
        assert!(absent.is_none());
    }
}
