//! NCCL loaded at run time (dlopen `libnccl.so.2`): the communicator calls and the collectives
//! fabrik's benchmark runs. Hand-written over libloading because the few existing Rust NCCL
//! crates link NCCL at build time (bindgen against nccl.h), which would tie the fabrik binary to
//! one NCCL installed where it was built. The enum values below are those of NVIDIA's
//! `nccl.h.in` (stable since NCCL 2.0; `ncclAvg` and `ncclBfloat16` since 2.10).

use std::ffi::{c_void, CStr};
use std::os::raw::{c_char, c_int};
use std::sync::Arc;

use crate::dl::Library;
use crate::{GpuError, Stream};

/// NCCL's soname, opened by [`Nccl::load`].
pub const LIBNCCL: &str = "libnccl.so.2";

const HINT: &str = "install NCCL (the libnccl2 package, or a pip wheel such as \
                    nvidia-nccl-cu12) or add its directory to LD_LIBRARY_PATH";

/// `ncclUniqueId`: 128 opaque bytes made by one rank and handed to all the others.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct UniqueId {
    /// The bytes, as NCCL made them.
    pub internal: [u8; UniqueId::BYTES],
}

impl UniqueId {
    /// `NCCL_UNIQUE_ID_BYTES`.
    pub const BYTES: usize = 128;

    /// The id received from rank 0; anything but exactly 128 bytes is refused.
    pub fn from_bytes(b: &[u8]) -> Result<Self, GpuError> {
        let internal: [u8; Self::BYTES] = b.try_into().map_err(|_| {
            GpuError::Invalid(format!(
                "an NCCL unique id is {} bytes, got {}",
                Self::BYTES,
                b.len()
            ))
        })?;
        Ok(UniqueId { internal })
    }
}

impl std::fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The id carries rank 0's bootstrap address; do not spill it into logs.
        f.write_str("UniqueId(..)")
    }
}

/// `ncclDataType_t`.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NcclDataType {
    /// `ncclInt8`.
    Int8 = 0,
    /// `ncclUint8`.
    Uint8 = 1,
    /// `ncclInt32`.
    Int32 = 2,
    /// `ncclUint32`.
    Uint32 = 3,
    /// `ncclInt64`.
    Int64 = 4,
    /// `ncclUint64`.
    Uint64 = 5,
    /// `ncclFloat16` (IEEE half).
    Float16 = 6,
    /// `ncclFloat32`.
    Float32 = 7,
    /// `ncclFloat64`.
    Float64 = 8,
    /// `ncclBfloat16`.
    Bfloat16 = 9,
}

/// `ncclRedOp_t` (the built-in operators).
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NcclRedOp {
    /// `ncclSum`.
    Sum = 0,
    /// `ncclProd`.
    Prod = 1,
    /// `ncclMax`.
    Max = 2,
    /// `ncclMin`.
    Min = 3,
    /// `ncclAvg` (sum divided by the number of ranks).
    Avg = 4,
}

/// The ncclResult_t enumerator's name, for messages a user can search for.
pub fn result_name(code: i32) -> &'static str {
    u32::try_from(code)
        .ok()
        .and_then(fabrik_model::nccl::result_name)
        .unwrap_or("unknown ncclResult_t")
}

/// `ncclInProgress`: a non-blocking operation has not finished yet.
const IN_PROGRESS: c_int = 7;

/// NCCL's version, decoded from `ncclGetVersion`'s code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct NcclVersion {
    /// Major version, e.g. 2.
    pub major: u32,
    /// Minor version, e.g. 21.
    pub minor: u32,
    /// Patch level, e.g. 5.
    pub patch: u32,
}

impl NcclVersion {
    /// NCCL ≤ 2.8 encodes `major*1000 + minor*100 + patch`, later ones
    /// `major*10000 + minor*100 + patch` (nccl.h's NCCL_VERSION macro).
    pub fn from_code(code: i32) -> Self {
        let c = code.max(0) as u32;
        if c >= 10000 {
            NcclVersion {
                major: c / 10000,
                minor: (c % 10000) / 100,
                patch: c % 100,
            }
        } else {
            NcclVersion {
                major: c / 1000,
                minor: (c % 1000) / 100,
                patch: c % 100,
            }
        }
    }

    /// `ncclAvg` and `ncclBfloat16` exist from 2.10 on.
    pub fn has_avg_and_bf16(self) -> bool {
        (self.major, self.minor) >= (2, 10)
    }
}

impl std::fmt::Display for NcclVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

type Comm = *mut c_void;
type CudaStream = *mut c_void;
type GetVersion = unsafe extern "C" fn(*mut c_int) -> c_int;
type GetUniqueId = unsafe extern "C" fn(*mut UniqueId) -> c_int;
type CommInitRank = unsafe extern "C" fn(*mut Comm, c_int, UniqueId, c_int) -> c_int;
type CommFinish = unsafe extern "C" fn(Comm) -> c_int;
type CommGetAsyncError = unsafe extern "C" fn(Comm, *mut c_int) -> c_int;
type GetErrorString = unsafe extern "C" fn(c_int) -> *const c_char;
type GetLastError = unsafe extern "C" fn(Comm) -> *const c_char;
type AllReduce = unsafe extern "C" fn(
    *const c_void,
    *mut c_void,
    usize,
    c_int,
    c_int,
    Comm,
    CudaStream,
) -> c_int;
type AllGather =
    unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, Comm, CudaStream) -> c_int;
type ReduceScatter = AllReduce;
/// The root takes the op's place.
type Broadcast = AllReduce;
type Reduce = unsafe extern "C" fn(
    *const c_void,
    *mut c_void,
    usize,
    c_int,
    c_int,
    c_int,
    Comm,
    CudaStream,
) -> c_int;
type Send = unsafe extern "C" fn(*const c_void, usize, c_int, c_int, Comm, CudaStream) -> c_int;
type Recv = unsafe extern "C" fn(*mut c_void, usize, c_int, c_int, Comm, CudaStream) -> c_int;
type Group = unsafe extern "C" fn() -> c_int;

/// The NCCL entry points fabrik uses; valid while `_lib` is loaded.
pub struct Nccl {
    get_version: GetVersion,
    get_unique_id: GetUniqueId,
    comm_init_rank: CommInitRank,
    comm_destroy: CommFinish,
    comm_abort: CommFinish,
    comm_get_async_error: CommGetAsyncError,
    get_error_string: GetErrorString,
    /// NCCL ≥ 2.13.
    get_last_error: Option<GetLastError>,
    all_reduce: AllReduce,
    all_gather: AllGather,
    reduce_scatter: ReduceScatter,
    broadcast: Broadcast,
    reduce: Reduce,
    send: Send,
    recv: Recv,
    group_start: Group,
    group_end: Group,
    _lib: Library,
}

impl std::fmt::Debug for Nccl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nccl").finish_non_exhaustive()
    }
}

impl Nccl {
    /// Loads [`LIBNCCL`] and resolves every call fabrik uses; NCCL older than 2.7 (no ncclSend) is [`GpuError::Symbol`].
    pub fn load() -> Result<Arc<Self>, GpuError> {
        Self::load_from(LIBNCCL)
    }

    /// As [`Nccl::load`], from `name` (a soname or a path).
    pub fn load_from(name: &str) -> Result<Arc<Self>, GpuError> {
        // SAFETY: loading NCCL runs its constructors only (NCCL opens CUDA lazily, on
        // first use).
        let lib = unsafe { Library::open(name) }.map_err(|e| GpuError::from_dl(e, HINT))?;
        macro_rules! sym {
            ($s:literal) => {
                // SAFETY: the type is nccl.h's prototype of this symbol; the pointer does not
                // outlive `lib`, which moves into the returned struct.
                unsafe { lib.symbol($s) }.map_err(|e| {
                    GpuError::from_dl(e, "fabrik needs NCCL 2.7 or later (ncclSend/ncclRecv)")
                })?
            };
        }
        Ok(Arc::new(Nccl {
            get_version: sym!("ncclGetVersion"),
            get_unique_id: sym!("ncclGetUniqueId"),
            comm_init_rank: sym!("ncclCommInitRank"),
            comm_destroy: sym!("ncclCommDestroy"),
            comm_abort: sym!("ncclCommAbort"),
            comm_get_async_error: sym!("ncclCommGetAsyncError"),
            get_error_string: sym!("ncclGetErrorString"),
            // SAFETY: as in sym!; absent before NCCL 2.13.
            get_last_error: unsafe { lib.optional("ncclGetLastError") },
            all_reduce: sym!("ncclAllReduce"),
            all_gather: sym!("ncclAllGather"),
            reduce_scatter: sym!("ncclReduceScatter"),
            broadcast: sym!("ncclBroadcast"),
            reduce: sym!("ncclReduce"),
            send: sym!("ncclSend"),
            recv: sym!("ncclRecv"),
            group_start: sym!("ncclGroupStart"),
            group_end: sym!("ncclGroupEnd"),
            _lib: lib,
        }))
    }

    /// The loaded library's version (`ncclGetVersion`).
    pub fn version(&self) -> Result<NcclVersion, GpuError> {
        let mut code: c_int = 0;
        // SAFETY: code is a valid out-pointer.
        let rc = unsafe { (self.get_version)(&mut code) };
        self.check(rc, "ncclGetVersion", None)?;
        Ok(NcclVersion::from_code(code))
    }

    /// A new id; called on rank 0 only, which also starts NCCL's bootstrap listener.
    pub fn unique_id(&self) -> Result<UniqueId, GpuError> {
        let mut id = UniqueId {
            internal: [0; UniqueId::BYTES],
        };
        // SAFETY: id is a valid out-pointer of nccl.h's ncclUniqueId layout (128 chars).
        let rc = unsafe { (self.get_unique_id)(&mut id) };
        self.check(rc, "ncclGetUniqueId", None)?;
        Ok(id)
    }

    fn error_string(&self, code: c_int) -> String {
        // SAFETY: ncclGetErrorString takes any code and returns a static string (or null).
        let p = unsafe { (self.get_error_string)(code) };
        if p.is_null() {
            return "no description".into();
        }
        // SAFETY: non-null static NUL-terminated string.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }

    fn last_error(&self, comm: Option<Comm>) -> Option<String> {
        let f = self.get_last_error?;
        // SAFETY: ncclGetLastError accepts a live communicator or null (the last error of
        // this thread) and returns a string owned by NCCL.
        let p = unsafe { f(comm.unwrap_or(std::ptr::null_mut())) };
        if p.is_null() {
            return None;
        }
        // SAFETY: non-null NUL-terminated string owned by NCCL, copied at once.
        let s = unsafe { CStr::from_ptr(p) }
            .to_string_lossy()
            .trim()
            .to_string();
        (!s.is_empty()).then_some(s)
    }

    fn check(&self, rc: c_int, call: &'static str, comm: Option<Comm>) -> Result<(), GpuError> {
        if rc == 0 {
            return Ok(());
        }
        Err(GpuError::Nccl {
            call,
            code: rc,
            name: result_name(rc),
            text: self.error_string(rc),
            last: self.last_error(comm),
        })
    }
}

/// One rank's communicator. Dropped with `ncclCommDestroy`, or `ncclCommAbort` after a failure
/// (destroy would wait for peers that may be gone).
pub struct NcclComm {
    nccl: Arc<Nccl>,
    raw: Comm,
    failed: bool,
}

// SAFETY: an NCCL communicator may be used from any thread (one at a time, which &mut/& plus
// the single benchmark thread guarantee).
unsafe impl std::marker::Send for NcclComm {}

/// A device address as NCCL takes it.
fn dev(p: u64) -> *mut c_void {
    p as usize as *mut c_void
}

impl NcclComm {
    /// `ncclCommInitRank`: blocks until all `nranks` ranks have joined with the same `id`. The
    /// CUDA context of this rank's GPU must be current on this thread.
    pub fn init_rank(
        nccl: &Arc<Nccl>,
        nranks: u32,
        id: &UniqueId,
        rank: u32,
    ) -> Result<Self, GpuError> {
        let mut raw: Comm = std::ptr::null_mut();
        // SAFETY: raw is a valid out-pointer; the id is passed by value as nccl.h declares.
        let rc = unsafe { (nccl.comm_init_rank)(&mut raw, nranks as c_int, *id, rank as c_int) };
        nccl.check(rc, "ncclCommInitRank", None)?;
        Ok(NcclComm {
            nccl: nccl.clone(),
            raw,
            failed: false,
        })
    }

    fn check(&mut self, rc: c_int, call: &'static str) -> Result<(), GpuError> {
        let r = self.nccl.check(rc, call, Some(self.raw));
        if r.is_err() {
            self.failed = true;
        }
        r
    }

    /// `ncclCommGetAsyncError`: an error raised while kernels or the proxy thread ran (a peer
    /// that died, a network failure).
    pub fn async_error(&mut self) -> Result<(), GpuError> {
        let mut state: c_int = 0;
        // SAFETY: raw is live; state is a valid out-pointer.
        let rc = unsafe { (self.nccl.comm_get_async_error)(self.raw, &mut state) };
        self.check(rc, "ncclCommGetAsyncError")?;
        if state == 0 || state == IN_PROGRESS {
            return Ok(());
        }
        self.check(state, "an NCCL operation (asynchronous error)")
    }

    /// Marks the communicator as failed so that drop aborts it instead of destroying it.
    pub fn abort_on_drop(&mut self) {
        self.failed = true;
    }

    /// `ncclAllReduce` of `count` elements from `send` into `recv` (device addresses; equal
    /// for in place).
    pub fn all_reduce(
        &mut self,
        send: u64,
        recv: u64,
        count: usize,
        dt: NcclDataType,
        op: NcclRedOp,
        stream: &Stream,
    ) -> Result<(), GpuError> {
        let f = self.nccl.all_reduce;
        self.enqueue(
            f,
            (send, recv, count),
            dt,
            op as c_int,
            stream,
            "ncclAllReduce",
        )
    }

    /// Enqueues `f`, an entry point of ncclAllReduce's shape (send, recv, count, type, then
    /// an op or a root), on `stream`; `what` names it in an error.
    fn enqueue(
        &mut self,
        f: AllReduce,
        (send, recv, count): (u64, u64, usize),
        dt: NcclDataType,
        op_or_root: c_int,
        stream: &Stream,
        what: &'static str,
    ) -> Result<(), GpuError> {
        // SAFETY: the caller's buffers hold `count` elements on this communicator's device
        // (the sweep sizes them from the same counts; all_gather's and reduce_scatter's
        // larger side holds nranks times as many); the stream is live.
        let rc = unsafe {
            f(
                dev(send),
                dev(recv),
                count,
                dt as c_int,
                op_or_root,
                self.raw,
                stream.raw(),
            )
        };
        self.check(rc, what)
    }

    /// `ncclAllGather`: `send_count` elements from each rank into `recv` (`nranks` times as
    /// many); in place when `send == recv + rank * send_count * size`.
    pub fn all_gather(
        &mut self,
        send: u64,
        recv: u64,
        send_count: usize,
        dt: NcclDataType,
        stream: &Stream,
    ) -> Result<(), GpuError> {
        // SAFETY: as in all_reduce, with recv holding nranks * send_count elements.
        let rc = unsafe {
            (self.nccl.all_gather)(
                dev(send),
                dev(recv),
                send_count,
                dt as c_int,
                self.raw,
                stream.raw(),
            )
        };
        self.check(rc, "ncclAllGather")
    }

    /// `ncclReduceScatter`: `recv_count` reduced elements per rank out of `send` (`nranks`
    /// times as many).
    pub fn reduce_scatter(
        &mut self,
        send: u64,
        recv: u64,
        recv_count: usize,
        dt: NcclDataType,
        op: NcclRedOp,
        stream: &Stream,
    ) -> Result<(), GpuError> {
        // send holds nranks * recv_count elements.
        let f = self.nccl.reduce_scatter;
        let bufs = (send, recv, recv_count);
        self.enqueue(f, bufs, dt, op as c_int, stream, "ncclReduceScatter")
    }

    /// `ncclBroadcast` of `count` elements from rank `root`'s `send` into every rank's `recv` (device addresses), enqueued on `stream`.
    pub fn broadcast(
        &mut self,
        send: u64,
        recv: u64,
        count: usize,
        dt: NcclDataType,
        root: u32,
        stream: &Stream,
    ) -> Result<(), GpuError> {
        let f = self.nccl.broadcast;
        self.enqueue(
            f,
            (send, recv, count),
            dt,
            root as c_int,
            stream,
            "ncclBroadcast",
        )
    }

    /// `ncclReduce` of `count` elements with `op` into rank `root`'s `recv` (device addresses), enqueued on `stream`.
    #[allow(clippy::too_many_arguments)]
    pub fn reduce(
        &mut self,
        send: u64,
        recv: u64,
        count: usize,
        dt: NcclDataType,
        op: NcclRedOp,
        root: u32,
        stream: &Stream,
    ) -> Result<(), GpuError> {
        // SAFETY: as in all_reduce.
        let rc = unsafe {
            (self.nccl.reduce)(
                dev(send),
                dev(recv),
                count,
                dt as c_int,
                op as c_int,
                root as c_int,
                self.raw,
                stream.raw(),
            )
        };
        self.check(rc, "ncclReduce")
    }

    /// All-to-all as nccl-tests builds it: one grouped ncclSend/ncclRecv pair per peer, block
    /// `p` of `send` to rank `p`, block `p` of `recv` from rank `p` (`count` elements each).
    #[allow(clippy::too_many_arguments)]
    pub fn alltoall(
        &mut self,
        send: u64,
        recv: u64,
        count: usize,
        elem_size: usize,
        dt: NcclDataType,
        nranks: u32,
        stream: &Stream,
    ) -> Result<(), GpuError> {
        let block = (count * elem_size) as u64;
        // SAFETY: ncclGroupStart takes no arguments.
        let rc = unsafe { (self.nccl.group_start)() };
        self.check(rc, "ncclGroupStart")?;
        let mut first_err = Ok(());
        for p in 0..nranks {
            let off = u64::from(p) * block;
            // SAFETY: send and recv hold nranks blocks of `count` elements; the stream is live.
            let rc = unsafe {
                (self.nccl.send)(
                    dev(send + off),
                    count,
                    dt as c_int,
                    p as c_int,
                    self.raw,
                    stream.raw(),
                )
            };
            if first_err.is_ok() {
                first_err = self.check(rc, "ncclSend");
            }
            // SAFETY: as above.
            let rc = unsafe {
                (self.nccl.recv)(
                    dev(recv + off),
                    count,
                    dt as c_int,
                    p as c_int,
                    self.raw,
                    stream.raw(),
                )
            };
            if first_err.is_ok() {
                first_err = self.check(rc, "ncclRecv");
            }
        }
        // SAFETY: closes the group opened above (always, so NCCL's group depth stays balanced).
        let rc = unsafe { (self.nccl.group_end)() };
        first_err?;
        self.check(rc, "ncclGroupEnd")
    }
}

impl Drop for NcclComm {
    fn drop(&mut self) {
        let f = if self.failed {
            self.nccl.comm_abort
        } else {
            self.nccl.comm_destroy
        };
        // SAFETY: raw came from ncclCommInitRank and is not used after drop.
        let _ = unsafe { f(self.raw) };
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn versions_decode_in_both_encodings() {
        let v = NcclVersion::from_code(22105);
        assert_eq!((v.major, v.minor, v.patch), (2, 21, 5));
        assert_eq!(v.to_string(), "2.21.5");
        assert!(v.has_avg_and_bf16());
        let old = NcclVersion::from_code(2708);
        assert_eq!(old.to_string(), "2.7.8");
        assert!(!old.has_avg_and_bf16());
        assert!(NcclVersion::from_code(21003).has_avg_and_bf16());
    }

    #[test]
    fn unique_id_must_be_128_bytes() {
        assert!(UniqueId::from_bytes(&[7u8; 128]).is_ok());
        let e = UniqueId::from_bytes(&[7u8; 127]).unwrap_err().to_string();
        assert!(e.contains("128 bytes, got 127"), "{e}");
        assert_eq!(std::mem::size_of::<UniqueId>(), 128);
        assert_eq!(
            format!("{:?}", UniqueId::from_bytes(&[1; 128]).unwrap()),
            "UniqueId(..)"
        );
    }

    proptest::proptest! {
        /// The id arrives from the network: any byte string is refused or taken, never a panic.
        #[test]
        fn unique_id_from_any_bytes(b in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            let r = UniqueId::from_bytes(&b);
            proptest::prop_assert_eq!(r.is_ok(), b.len() == 128);
            if let Ok(id) = r {
                proptest::prop_assert_eq!(&id.internal[..], &b[..]);
            }
        }
    }

    #[test]
    fn result_names_follow_nccl_h() {
        assert_eq!(result_name(2), "ncclSystemError");
        assert_eq!(result_name(6), "ncclRemoteError");
        assert_eq!(result_name(99), "unknown ncclResult_t");
    }

    #[test]
    fn missing_library_names_it_and_the_fix() {
        let e = Nccl::load_from("libnccl-not-here.so.2")
            .unwrap_err()
            .to_string();
        assert!(e.contains("libnccl-not-here.so.2 not found"), "{e}");
        assert!(e.contains("LD_LIBRARY_PATH"), "{e}");
    }
}
