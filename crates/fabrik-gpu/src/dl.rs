//! dlopen and dlsym for the GPU libraries, with errors that name the library, the missing
//! symbol and what to install: the one place both loaders (CUDA driver, NCCL) go through.

use libloading::Library;

use crate::GpuError;

/// Opens `name`; `hint` says what to install when it is not there.
pub(crate) fn open(name: &str, hint: &'static str) -> Result<Library, GpuError> {
    // SAFETY: loading the CUDA driver or NCCL runs their constructors only (NCCL opens CUDA
    // lazily, on first use).
    unsafe { Library::new(name) }.map_err(|e| GpuError::Missing {
        lib: name.to_string(),
        why: e.to_string(),
        hint,
    })
}

/// Looks `symbol` up in `lib` (opened as `lib_name`); `hint` says why it may be missing.
///
/// # Safety
/// `T` must be the C prototype of `symbol`, and the returned pointer must not outlive `lib`.
pub(crate) unsafe fn symbol<T: Copy>(
    lib: &Library,
    lib_name: &str,
    symbol: &'static str,
    hint: &'static str,
) -> Result<T, GpuError> {
    // SAFETY: the caller vouches for the type and keeps `lib` alive as long as the pointer.
    unsafe { lib.get::<T>(symbol.as_bytes()) }
        .map(|s| *s)
        .map_err(|_| GpuError::Symbol {
            lib: lib_name.to_string(),
            symbol,
            hint,
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_and_a_missing_symbol_are_named() {
        let err = open("libfabrik-no-such-library.so.9", "install it").unwrap_err();
        assert!(
            matches!(err, GpuError::Missing { ref lib, hint: "install it", .. }
            if lib == "libfabrik-no-such-library.so.9")
        );
        let libc = open("libc.so.6", "glibc").unwrap();
        // SAFETY: `getpid` is `pid_t getpid(void)`; the pointer is dropped before `libc`.
        let getpid: unsafe extern "C" fn() -> i32 =
            unsafe { symbol(&libc, "libc.so.6", "getpid", "too old") }.unwrap();
        // SAFETY: getpid has no preconditions.
        assert_eq!(unsafe { getpid() }, std::process::id() as i32);
        // SAFETY: never called; the lookup fails.
        let missing = unsafe {
            symbol::<unsafe extern "C" fn()>(&libc, "libc.so.6", "fabrik_no_such_symbol", "too old")
        };
        assert!(
            matches!(missing, Err(GpuError::Symbol { symbol: "fabrik_no_such_symbol", hint: "too old", ref lib })
            if lib == "libc.so.6")
        );
    }
}
