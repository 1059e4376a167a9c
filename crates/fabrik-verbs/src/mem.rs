//! Buffers to register: host memory, or GPU memory from the CUDA driver API loaded at run time
//! (dlopen `libcuda.so.1`, like libibverbs; the loader is `fabrik_gpu::cuda`).

use serde::{Deserialize, Serialize};
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::sync::Arc;

use crate::error::VerbsError;

/// Where the benchmark buffer lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemKind {
    /// Page-aligned host memory.
    Host,
    /// `cuMemAlloc`: device memory, reached by the NIC through GPUDirect RDMA.
    Cuda,
    /// `cuMemAllocManaged`: unified memory, registered as a host range.
    Managed,
}

impl MemKind {
    /// The name used in options and reports (`host`, `cuda`, `managed`).
    pub fn as_str(self) -> &'static str {
        match self {
            MemKind::Host => "host",
            MemKind::Cuda => "cuda",
            MemKind::Managed => "managed",
        }
    }
}

/// The CUDA driver loader lives in fabrik-gpu (shared with the NCCL backend).
pub use fabrik_gpu::cuda::{Cuda, LIBCUDA};

impl From<fabrik_gpu::GpuError> for VerbsError {
    fn from(e: fabrik_gpu::GpuError) -> Self {
        VerbsError::Cuda(e.to_string())
    }
}

enum Storage {
    Host { ptr: *mut u8, layout: Layout },
    Cuda { cuda: Arc<Cuda>, ptr: u64 },
}

/// A buffer the NIC reads and writes, with copy-in/copy-out for filling and checking it.
pub struct Buffer {
    storage: Storage,
    /// Size in bytes (at least 1).
    pub len: usize,
    /// Where it lives.
    pub kind: MemKind,
}

// SAFETY: the buffer is plain memory owned by this value; access goes through &self/&mut self.
unsafe impl Send for Buffer {}

/// GPU allocations are rounded to 2 MiB so that the whole range can be exported as a dma-buf
/// (which wants GPU-page-aligned ranges).
const GPU_ALIGN: usize = 2 << 20;

impl Buffer {
    /// A zeroed buffer of `len` bytes (at least 1) of `kind`; GPU kinds need `cuda`.
    pub fn new(kind: MemKind, len: usize, cuda: Option<&Arc<Cuda>>) -> Result<Self, VerbsError> {
        let len = len.max(1);
        match kind {
            MemKind::Host => {
                let layout = Layout::from_size_align(len, 4096)
                    .map_err(|e| VerbsError::Unsupported(format!("buffer of {len} bytes: {e}")))?;
                // SAFETY: layout has non-zero size.
                let ptr = unsafe { alloc_zeroed(layout) };
                if ptr.is_null() {
                    return Err(VerbsError::Unsupported(format!(
                        "cannot allocate {len} bytes of host memory"
                    )));
                }
                Ok(Buffer {
                    storage: Storage::Host { ptr, layout },
                    len,
                    kind,
                })
            }
            MemKind::Cuda | MemKind::Managed => {
                let Some(cuda) = cuda else {
                    return Err(VerbsError::Cuda("CUDA driver not opened".into()));
                };
                let alloc_len = len.div_ceil(GPU_ALIGN) * GPU_ALIGN;
                let ptr = if kind == MemKind::Cuda {
                    cuda.mem_alloc(alloc_len)?
                } else {
                    cuda.mem_alloc_managed(alloc_len)?
                };
                let b = Buffer {
                    storage: Storage::Cuda {
                        cuda: cuda.clone(),
                        ptr,
                    },
                    len: alloc_len,
                    kind,
                };
                b.write(0, &vec![0u8; alloc_len])?;
                Ok(b)
            }
        }
    }

    /// The address the NIC uses (a host virtual address, or a CUDA device pointer).
    pub fn addr(&self) -> u64 {
        match &self.storage {
            Storage::Host { ptr, .. } => *ptr as u64,
            Storage::Cuda { ptr, .. } => *ptr,
        }
    }

    /// The buffer's start as a pointer (a device address for CUDA memory: never dereference it on the host).
    pub fn as_mut_ptr(&self) -> *mut u8 {
        self.addr() as *mut u8
    }

    /// The CUDA driver behind a GPU buffer.
    pub fn cuda(&self) -> Option<&Arc<Cuda>> {
        match &self.storage {
            Storage::Cuda { cuda, .. } => Some(cuda),
            Storage::Host { .. } => None,
        }
    }

    /// Copies `data` in at `offset`.
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<(), VerbsError> {
        self.range_check(offset, data.len())?;
        match &self.storage {
            Storage::Host { ptr, .. } => {
                // SAFETY: the range is inside the allocation (checked); the NIC is idle on this
                // range while the benchmark fills or checks it.
                unsafe {
                    std::ptr::copy_nonoverlapping(data.as_ptr(), ptr.add(offset), data.len())
                };
                Ok(())
            }
            Storage::Cuda { cuda, ptr } => {
                // SAFETY: device range checked against this allocation.
                Ok(unsafe { cuda.htod(ptr + offset as u64, data) }?)
            }
        }
    }

    /// Copies `len` bytes out from `offset`.
    pub fn read(&self, offset: usize, len: usize) -> Result<Vec<u8>, VerbsError> {
        self.range_check(offset, len)?;
        let mut out = vec![0u8; len];
        match &self.storage {
            Storage::Host { ptr, .. } => {
                // SAFETY: range checked; see write.
                unsafe { std::ptr::copy_nonoverlapping(ptr.add(offset), out.as_mut_ptr(), len) };
            }
            Storage::Cuda { cuda, ptr } => {
                // SAFETY: device range checked against this allocation; out has len bytes.
                unsafe { cuda.dtoh(&mut out, ptr + offset as u64) }?;
            }
        }
        Ok(out)
    }

    /// Number of bytes at `offset` that differ from `expected`; compares in place for host
    /// memory (a memcmp on the fast path), through a copy for GPU memory.
    pub fn mismatches(&self, offset: usize, expected: &[u8]) -> Result<u64, VerbsError> {
        self.range_check(offset, expected.len())?;
        let count = |got: &[u8]| {
            if got == expected {
                0
            } else {
                got.iter().zip(expected).filter(|(a, b)| a != b).count() as u64
            }
        };
        match &self.storage {
            Storage::Host { ptr, .. } => {
                // SAFETY: range checked; the NIC is not writing this message any more (its
                // completion was reaped, or the peer said it is done).
                let got = unsafe { std::slice::from_raw_parts(ptr.add(offset), expected.len()) };
                Ok(count(got))
            }
            Storage::Cuda { .. } => Ok(count(&self.read(offset, expected.len())?)),
        }
    }

    /// One byte of host memory, read volatile: the NIC writes it behind the compiler's back.
    pub fn read_volatile_byte(&self, offset: usize) -> Option<u8> {
        match &self.storage {
            Storage::Host { ptr, .. } if offset < self.len => {
                // SAFETY: in bounds; volatile because RDMA writes land without Rust's knowledge.
                Some(unsafe { std::ptr::read_volatile(ptr.add(offset)) })
            }
            _ => None,
        }
    }

    fn range_check(&self, offset: usize, len: usize) -> Result<(), VerbsError> {
        if offset.checked_add(len).is_none_or(|end| end > self.len) {
            return Err(VerbsError::Unsupported(format!(
                "range {offset}+{len} outside a buffer of {} bytes",
                self.len
            )));
        }
        Ok(())
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        match &self.storage {
            // SAFETY: ptr/layout came from alloc_zeroed; the MR over it was dropped first (the
            // owner keeps the MR in a field declared before the buffer).
            Storage::Host { ptr, layout } => unsafe { dealloc(*ptr, *layout) },
            Storage::Cuda { cuda, ptr } => {
                // SAFETY: ptr came from cuMemAlloc/cuMemAllocManaged and dies with the buffer.
                let _ = unsafe { cuda.mem_free(*ptr) };
            }
        }
    }
}

/// The byte at `k` of the test pattern for messages of `bytes`: differs per size and offset so
/// that a stale or shifted payload is caught.
pub fn pattern_byte(bytes: u64, k: u64) -> u8 {
    ((k.wrapping_mul(31)
        .wrapping_add(bytes.wrapping_mul(7))
        .wrapping_add(1))
        % 251) as u8
}

/// The `bytes`-long test pattern both ends fill and check buffers with.
pub fn pattern(bytes: u64) -> Vec<u8> {
    (0..bytes).map(|k| pattern_byte(bytes, k)).collect()
}

/// Number of bytes of `got` that differ from the pattern for `bytes`.
pub fn count_mismatches(bytes: u64, got: &[u8]) -> u64 {
    got.iter()
        .enumerate()
        .filter(|(k, b)| **b != pattern_byte(bytes, *k as u64))
        .count() as u64
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn host_buffer_round_trip() {
        let b = Buffer::new(MemKind::Host, 8192, None).unwrap();
        assert_eq!(b.addr() % 4096, 0);
        let p = pattern(100);
        b.write(4000, &p).unwrap();
        assert_eq!(count_mismatches(100, &b.read(4000, 100).unwrap()), 0);
        assert!(count_mismatches(101, &b.read(4000, 100).unwrap()) > 0);
        assert!(b.write(8190, &p).is_err());
        assert_eq!(b.read_volatile_byte(4000), Some(p[0]));
        assert_eq!(b.mismatches(4000, &p).unwrap(), 0);
        assert_eq!(b.mismatches(4001, &p[1..]).unwrap(), 0);
        assert_eq!(
            b.mismatches(4000, &pattern(101)[..100]).unwrap(),
            count_mismatches(101, &p)
        );
        assert!(b.mismatches(8100, &p).is_err());
        assert_eq!(b.read_volatile_byte(9000), None);
    }

    #[test]
    fn cuda_without_driver_is_a_clear_error() {
        let e = Cuda::open_from("libcuda-not-here.so.1", 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("libcuda-not-here.so.1"), "{e}");
        assert!(e.contains("need an NVIDIA GPU"), "{e}");
        let e = Buffer::new(MemKind::Cuda, 10, None)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("CUDA"), "{e}");
    }

    #[test]
    fn pattern_differs_by_size_and_offset() {
        assert_ne!(pattern(64)[..8], pattern(128)[..8]);
        let p = pattern(300);
        assert!(p.windows(2).any(|w| w[0] != w[1]));
    }
}
