//! The CUDA driver API loaded at run time (dlopen `libcuda.so.1`, like libibverbs). Hand-written
//! over libloading rather than cudarc: fabrik needs about twenty driver entry points, and
//! cudarc's generated bindings would add a large build to every node for them. The driver API
//! (not the runtime, libcudart) because the driver ships with every GPU node while the runtime
//! is versioned per application; NCCL accepts a driver `CUstream` as its `cudaStream_t`.

use std::ffi::{c_void, CStr};
use std::os::raw::{c_char, c_int, c_uint};
use std::sync::Arc;

use crate::dl::Library;
use crate::GpuError;

/// The CUDA driver's soname, opened by [`Cuda::open`].
pub const LIBCUDA: &str = "libcuda.so.1";

const HINT: &str =
    "no NVIDIA driver here (--mem cuda/managed and --backend nccl need an NVIDIA GPU and its driver)";

/// `CUDA_ERROR_NOT_READY`: the stream still has work queued.
const NOT_READY: c_int = 600;

type CuInit = unsafe extern "C" fn(c_uint) -> c_int;
type CuDriverGetVersion = unsafe extern "C" fn(*mut c_int) -> c_int;
type CuDeviceGetCount = unsafe extern "C" fn(*mut c_int) -> c_int;
type CuDeviceGet = unsafe extern "C" fn(*mut c_int, c_int) -> c_int;
type CuDeviceGetName = unsafe extern "C" fn(*mut c_char, c_int, c_int) -> c_int;
type CuDeviceGetPciBusId = unsafe extern "C" fn(*mut c_char, c_int, c_int) -> c_int;
type CuPrimaryCtxRetain = unsafe extern "C" fn(*mut *mut c_void, c_int) -> c_int;
type CuCtxSetCurrent = unsafe extern "C" fn(*mut c_void) -> c_int;
type CuMemAlloc = unsafe extern "C" fn(*mut u64, usize) -> c_int;
type CuMemAllocManaged = unsafe extern "C" fn(*mut u64, usize, c_uint) -> c_int;
type CuMemFree = unsafe extern "C" fn(u64) -> c_int;
type CuMemcpyHtoD = unsafe extern "C" fn(u64, *const c_void, usize) -> c_int;
type CuMemcpyDtoH = unsafe extern "C" fn(*mut c_void, u64, usize) -> c_int;
type CuMemcpyDtoD = unsafe extern "C" fn(u64, u64, usize) -> c_int;
type CuMemcpyDtoDAsync = unsafe extern "C" fn(u64, u64, usize, *mut c_void) -> c_int;
type CuStreamCreate = unsafe extern "C" fn(*mut *mut c_void, c_uint) -> c_int;
type CuStreamQuery = unsafe extern "C" fn(*mut c_void) -> c_int;
type CuStreamSynchronize = unsafe extern "C" fn(*mut c_void) -> c_int;
type CuStreamDestroy = unsafe extern "C" fn(*mut c_void) -> c_int;
type CuGetHandle = unsafe extern "C" fn(*mut c_void, u64, usize, c_int, u64) -> c_int;
type CuGetErrorString = unsafe extern "C" fn(c_int, *mut *const c_char) -> c_int;

/// The CUDA driver entry points fabrik uses; valid while `_lib` is loaded.
pub struct Cuda {
    driver_version: CuDriverGetVersion,
    device_count: CuDeviceGetCount,
    device_get: CuDeviceGet,
    device_name: CuDeviceGetName,
    pci_bus_id: CuDeviceGetPciBusId,
    retain: CuPrimaryCtxRetain,
    set_current: CuCtxSetCurrent,
    mem_alloc: CuMemAlloc,
    mem_alloc_managed: CuMemAllocManaged,
    mem_free: CuMemFree,
    htod: CuMemcpyHtoD,
    dtoh: CuMemcpyDtoH,
    dtod: CuMemcpyDtoD,
    dtod_async: CuMemcpyDtoDAsync,
    stream_create: CuStreamCreate,
    stream_query: CuStreamQuery,
    stream_sync: CuStreamSynchronize,
    stream_destroy: CuStreamDestroy,
    /// CUDA ≥ 11.7: exports device memory as a dma-buf for `ibv_reg_dmabuf_mr`.
    get_handle: Option<CuGetHandle>,
    error_string: CuGetErrorString,
    _lib: Library,
}

impl std::fmt::Debug for Cuda {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cuda").finish_non_exhaustive()
    }
}

impl Cuda {
    /// Loads the driver, initialises it and makes device `ordinal`'s primary context current.
    pub fn open(ordinal: i32) -> Result<Arc<Self>, GpuError> {
        Self::open_from(LIBCUDA, ordinal)
    }

    /// As [`Cuda::open`], loading the driver from `name` (a soname or a path) instead of [`LIBCUDA`].
    pub fn open_from(name: &str, ordinal: i32) -> Result<Arc<Self>, GpuError> {
        let cuda = Self::load_from(name)?;
        cuda.use_device(ordinal)?;
        Ok(Arc::new(cuda))
    }

    /// Loads and initialises the driver without choosing a device (to count them first).
    pub fn load_from(name: &str) -> Result<Self, GpuError> {
        // SAFETY: loading the CUDA driver runs its constructors only; no driver call touches a
        // GPU before cuInit.
        let lib = unsafe { Library::open(name) }.map_err(|e| GpuError::from_dl(e, HINT))?;
        macro_rules! sym {
            ($s:literal) => {
                // SAFETY: the type is the CUDA driver API prototype of this symbol; the pointer
                // does not outlive `lib`, which moves into the returned struct.
                unsafe { lib.symbol($s) }.map_err(|e| {
                    GpuError::from_dl(e, "the NVIDIA driver is too old or this is not libcuda")
                })?
            };
        }
        let init: CuInit = sym!("cuInit");
        let cuda = Cuda {
            driver_version: sym!("cuDriverGetVersion"),
            device_count: sym!("cuDeviceGetCount"),
            device_get: sym!("cuDeviceGet"),
            device_name: sym!("cuDeviceGetName"),
            pci_bus_id: sym!("cuDeviceGetPCIBusId"),
            retain: sym!("cuDevicePrimaryCtxRetain"),
            set_current: sym!("cuCtxSetCurrent"),
            mem_alloc: sym!("cuMemAlloc_v2"),
            mem_alloc_managed: sym!("cuMemAllocManaged"),
            mem_free: sym!("cuMemFree_v2"),
            htod: sym!("cuMemcpyHtoD_v2"),
            dtoh: sym!("cuMemcpyDtoH_v2"),
            dtod: sym!("cuMemcpyDtoD_v2"),
            dtod_async: sym!("cuMemcpyDtoDAsync_v2"),
            stream_create: sym!("cuStreamCreate"),
            stream_query: sym!("cuStreamQuery"),
            stream_sync: sym!("cuStreamSynchronize"),
            stream_destroy: sym!("cuStreamDestroy_v2"),
            // SAFETY: as in sym!; absent on drivers older than CUDA 11.7.
            get_handle: unsafe { lib.optional("cuMemGetHandleForAddressRange") },
            error_string: sym!("cuGetErrorString"),
            _lib: lib,
        };
        // SAFETY: cuInit takes flags 0.
        cuda.check(unsafe { init(0) }, "cuInit")?;
        Ok(cuda)
    }

    /// Makes device `ordinal`'s primary context current on this thread (kept for the life of
    /// the process, as the runtime API does).
    pub fn use_device(&self, ordinal: i32) -> Result<(), GpuError> {
        let dev = self.device(ordinal)?;
        let mut ctx: *mut c_void = std::ptr::null_mut();
        // SAFETY: ctx is a valid out-pointer; dev came from cuDeviceGet.
        let rc = unsafe { (self.retain)(&mut ctx, dev) };
        self.check(rc, "cuDevicePrimaryCtxRetain")?;
        // SAFETY: ctx is the primary context just retained.
        self.check(unsafe { (self.set_current)(ctx) }, "cuCtxSetCurrent")
    }

    fn device(&self, ordinal: i32) -> Result<c_int, GpuError> {
        let mut dev: c_int = 0;
        // SAFETY: dev is a valid out-pointer.
        let rc = unsafe { (self.device_get)(&mut dev, ordinal) };
        self.check(rc, "cuDeviceGet")?;
        Ok(dev)
    }

    /// `major*1000 + minor*10`, e.g. 12040 for CUDA 12.4.
    pub fn driver_version(&self) -> Result<i32, GpuError> {
        let mut v: c_int = 0;
        // SAFETY: v is a valid out-pointer.
        let rc = unsafe { (self.driver_version)(&mut v) };
        self.check(rc, "cuDriverGetVersion")?;
        Ok(v)
    }

    /// How many CUDA devices the driver sees (`cuDeviceGetCount`).
    pub fn device_count(&self) -> Result<i32, GpuError> {
        let mut n: c_int = 0;
        // SAFETY: n is a valid out-pointer.
        self.check(unsafe { (self.device_count)(&mut n) }, "cuDeviceGetCount")?;
        Ok(n)
    }

    /// The marketing name, e.g. "NVIDIA H100 80GB HBM3".
    pub fn device_name(&self, ordinal: i32) -> Result<String, GpuError> {
        let dev = self.device(ordinal)?;
        let mut buf = [0 as c_char; 256];
        // SAFETY: buf holds 256 chars; the driver writes a NUL-terminated string within it.
        let rc = unsafe { (self.device_name)(buf.as_mut_ptr(), buf.len() as c_int, dev) };
        self.check(rc, "cuDeviceGetName")?;
        Ok(c_buf_string(&buf))
    }

    /// The PCI address as `domain:bus:device.function`, e.g. "0000:18:00.0".
    pub fn pci_bus_id(&self, ordinal: i32) -> Result<String, GpuError> {
        let dev = self.device(ordinal)?;
        let mut buf = [0 as c_char; 64];
        // SAFETY: buf holds 64 chars (the driver needs 13); NUL-terminated on success.
        let rc = unsafe { (self.pci_bus_id)(buf.as_mut_ptr(), buf.len() as c_int, dev) };
        self.check(rc, "cuDeviceGetPCIBusId")?;
        Ok(c_buf_string(&buf))
    }

    /// Turns a `CUresult` from `call` into [`GpuError::Cuda`] with the driver's text for it; 0 is success.
    pub fn check(&self, rc: c_int, call: &'static str) -> Result<(), GpuError> {
        if rc == 0 {
            return Ok(());
        }
        let mut p: *const c_char = std::ptr::null();
        // SAFETY: p is a valid out-pointer; the driver returns a static string.
        let text = if unsafe { (self.error_string)(rc, &mut p) } == 0 && !p.is_null() {
            // SAFETY: non-null static NUL-terminated string.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        } else {
            "unknown error".to_string()
        };
        Err(GpuError::Cuda {
            call,
            code: rc,
            text,
        })
    }

    /// `cuMemAlloc`: `len` bytes of device memory in the current context.
    pub fn mem_alloc(&self, len: usize) -> Result<u64, GpuError> {
        let mut ptr: u64 = 0;
        // SAFETY: ptr is a valid out-pointer; a context is current (use_device).
        self.check(unsafe { (self.mem_alloc)(&mut ptr, len) }, "cuMemAlloc")?;
        Ok(ptr)
    }

    /// `cuMemAllocManaged` with `CU_MEM_ATTACH_GLOBAL`.
    pub fn mem_alloc_managed(&self, len: usize) -> Result<u64, GpuError> {
        let mut ptr: u64 = 0;
        // SAFETY: as in mem_alloc; 1 = CU_MEM_ATTACH_GLOBAL.
        let rc = unsafe { (self.mem_alloc_managed)(&mut ptr, len, 1) };
        self.check(rc, "cuMemAllocManaged")?;
        Ok(ptr)
    }

    /// Frees an allocation of [`Cuda::mem_alloc`]/[`Cuda::mem_alloc_managed`].
    ///
    /// # Safety
    /// `ptr` came from this driver's allocation calls and is not used afterwards.
    pub unsafe fn mem_free(&self, ptr: u64) -> Result<(), GpuError> {
        // SAFETY: the caller guarantees ptr is a live allocation of this driver.
        self.check(unsafe { (self.mem_free)(ptr) }, "cuMemFree")
    }

    /// Copies `data` to device address `dst`.
    ///
    /// # Safety
    /// `[dst, dst + data.len())` lies in one live device allocation.
    pub unsafe fn htod(&self, dst: u64, data: &[u8]) -> Result<(), GpuError> {
        // SAFETY: the caller guarantees the device range; data is a valid host slice.
        let rc = unsafe { (self.htod)(dst, data.as_ptr().cast(), data.len()) };
        self.check(rc, "cuMemcpyHtoD")
    }

    /// Waits for the copies queued on the legacy default stream to reach the device.
    ///
    /// `cuMemcpyHtoD` from pageable memory returns once the data is staged, and `cuMemcpyDtoD`
    /// returns at once; the DMA itself may still be running (CUDA driver API, "API
    /// synchronization behavior"). Work queued on a non-blocking stream, as NCCL's is, does not
    /// wait for it, so a buffer written this way must have landed before such work is queued.
    fn settle(&self) -> Result<(), GpuError> {
        // SAFETY: the null handle is the legacy default stream of the current context.
        let rc = unsafe { (self.stream_sync)(std::ptr::null_mut()) };
        self.check(rc, "cuStreamSynchronize")
    }

    /// Copies `out.len()` bytes from device address `src`.
    ///
    /// # Safety
    /// `[src, src + out.len())` lies in one live device allocation.
    pub unsafe fn dtoh(&self, out: &mut [u8], src: u64) -> Result<(), GpuError> {
        // SAFETY: the caller guarantees the device range; out is a valid host slice.
        let rc = unsafe { (self.dtoh)(out.as_mut_ptr().cast(), src, out.len()) };
        self.check(rc, "cuMemcpyDtoH")
    }

    /// Exports `[ptr, ptr+len)` as a dma-buf fd, when the driver can.
    pub fn dmabuf_fd(&self, ptr: u64, len: usize) -> Option<i32> {
        let f = self.get_handle?;
        let mut fd: c_int = -1;
        // SAFETY: fd is a valid out-pointer of the handle type DMA_BUF_FD (1) asks for.
        let rc = unsafe { f((&mut fd as *mut c_int).cast(), ptr, len, 1, 0) };
        (rc == 0 && fd >= 0).then_some(fd)
    }
}

fn c_buf_string(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).trim().to_string()
}

/// Device memory freed on drop; every access is range-checked.
pub struct DeviceBuffer {
    cuda: Arc<Cuda>,
    ptr: u64,
    len: usize,
}

impl std::fmt::Debug for DeviceBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .finish()
    }
}

impl DeviceBuffer {
    /// `len` bytes (at least one, so that empty sizes still have a valid pointer).
    pub fn new(cuda: &Arc<Cuda>, len: usize) -> Result<Self, GpuError> {
        let len = len.max(1);
        let ptr = cuda.mem_alloc(len)?;
        Ok(DeviceBuffer {
            cuda: cuda.clone(),
            ptr,
            len,
        })
    }

    /// The allocation's size in bytes (at least 1).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: a buffer holds at least one byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address of byte `offset` (checked to lie inside the buffer).
    pub fn addr(&self, offset: usize) -> Result<u64, GpuError> {
        self.range(offset, 0)?;
        Ok(self.ptr + offset as u64)
    }

    /// Copies `data` from the host to the buffer at byte `offset`; a range outside the buffer is [`GpuError::Invalid`].
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<(), GpuError> {
        self.range(offset, data.len())?;
        // SAFETY: range checked against this live allocation.
        unsafe { self.cuda.htod(self.ptr + offset as u64, data) }?;
        self.cuda.settle()
    }

    /// Copies `out.len()` bytes from byte `offset` of the buffer to the host; a range outside the buffer is [`GpuError::Invalid`].
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), GpuError> {
        self.range(offset, out.len())?;
        // SAFETY: range checked against this live allocation.
        unsafe { self.cuda.dtoh(out, self.ptr + offset as u64) }
    }

    /// Copies `len` bytes from `src` at `src_off` to this buffer at `offset`, in stream order.
    pub fn copy_from_async(
        &self,
        offset: usize,
        src: &DeviceBuffer,
        src_off: usize,
        len: usize,
        stream: &Stream,
    ) -> Result<(), GpuError> {
        self.range(offset, len)?;
        src.range(src_off, len)?;
        // SAFETY: both ranges checked against live allocations; the stream is live.
        let rc = unsafe {
            (self.cuda.dtod_async)(
                self.ptr + offset as u64,
                src.ptr + src_off as u64,
                len,
                stream.raw,
            )
        };
        self.cuda.check(rc, "cuMemcpyDtoDAsync")
    }

    /// A synchronous device-to-device copy (used to stage data before timing starts).
    pub fn copy_from(
        &self,
        offset: usize,
        src: &DeviceBuffer,
        src_off: usize,
        len: usize,
    ) -> Result<(), GpuError> {
        self.range(offset, len)?;
        src.range(src_off, len)?;
        // SAFETY: both ranges checked against live allocations.
        let rc =
            unsafe { (self.cuda.dtod)(self.ptr + offset as u64, src.ptr + src_off as u64, len) };
        self.cuda.check(rc, "cuMemcpyDtoD")?;
        self.cuda.settle()
    }

    fn range(&self, offset: usize, len: usize) -> Result<(), GpuError> {
        if offset.checked_add(len).is_none_or(|end| end > self.len) {
            return Err(GpuError::Invalid(format!(
                "range {offset}+{len} outside a device buffer of {} bytes",
                self.len
            )));
        }
        Ok(())
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: ptr came from cuMemAlloc and nothing uses it after drop.
        let _ = unsafe { self.cuda.mem_free(self.ptr) };
    }
}

/// A CUDA stream (the `cudaStream_t` NCCL enqueues on), destroyed on drop.
pub struct Stream {
    cuda: Arc<Cuda>,
    raw: *mut c_void,
}

// SAFETY: a CUstream handle may be used from any thread whose current context owns it; fabrik
// moves a stream between threads only together with the work that uses it.
unsafe impl Send for Stream {}

impl Stream {
    /// A non-blocking stream in the current context (`cuStreamCreate` with `CU_STREAM_NON_BLOCKING`).
    pub fn new(cuda: &Arc<Cuda>) -> Result<Self, GpuError> {
        let mut raw: *mut c_void = std::ptr::null_mut();
        // SAFETY: raw is a valid out-pointer; 1 = CU_STREAM_NON_BLOCKING (no implicit
        // synchronisation with the legacy default stream, as NCCL users create them).
        let rc = unsafe { (cuda.stream_create)(&mut raw, 1) };
        cuda.check(rc, "cuStreamCreate")?;
        Ok(Stream {
            cuda: cuda.clone(),
            raw,
        })
    }

    /// The handle to pass as `cudaStream_t`.
    pub fn raw(&self) -> *mut c_void {
        self.raw
    }

    /// Whether everything queued so far has finished (`cuStreamQuery`), without blocking.
    pub fn is_done(&self) -> Result<bool, GpuError> {
        // SAFETY: raw is a live stream of this driver.
        let rc = unsafe { (self.cuda.stream_query)(self.raw) };
        if rc == NOT_READY {
            return Ok(false);
        }
        self.cuda.check(rc, "cuStreamQuery")?;
        Ok(true)
    }

    /// Blocks until the stream is idle; only for work that cannot hang (copies).
    pub fn synchronize(&self) -> Result<(), GpuError> {
        // SAFETY: raw is a live stream of this driver.
        let rc = unsafe { (self.cuda.stream_sync)(self.raw) };
        self.cuda.check(rc, "cuStreamSynchronize")
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: raw came from cuStreamCreate and is not used after drop.
        let _ = unsafe { (self.cuda.stream_destroy)(self.raw) };
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn missing_driver_is_a_clear_error() {
        let e = Cuda::open_from("libcuda-not-here.so.1", 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("libcuda-not-here.so.1 not found"), "{e}");
        assert!(e.contains("no NVIDIA driver"), "{e}");
    }

    #[test]
    fn c_strings_stop_at_nul() {
        let raw: Vec<c_char> = b"GPU 0\0junk".iter().map(|&b| b as c_char).collect();
        assert_eq!(c_buf_string(&raw), "GPU 0");
        assert_eq!(c_buf_string(&[]), "");
    }
}
