//! libibverbs loaded at run time, as NCCL loads it: one binary runs on nodes with and without
//! rdma-core, and a node without it gets an error that names the library.

use std::ffi::c_void;
use std::os::raw::{c_char, c_int, c_uint};

use fabrik_gpu::dl::Library;

use crate::error::VerbsError;
use crate::ffi::*;

/// The soname rdma-core has shipped since libibverbs 1.0; the unversioned `libibverbs.so` exists
/// only with the -dev package.
pub const LIBIBVERBS: &str = "libibverbs.so.1";

type GetDeviceList = unsafe extern "C" fn(*mut c_int) -> *mut *mut c_void;
type FreeDeviceList = unsafe extern "C" fn(*mut *mut c_void);
type GetDeviceName = unsafe extern "C" fn(*mut c_void) -> *const c_char;
type OpenDevice = unsafe extern "C" fn(*mut c_void) -> *mut ibv_context;
type CloseDevice = unsafe extern "C" fn(*mut ibv_context) -> c_int;
type QueryDevice = unsafe extern "C" fn(*mut ibv_context, *mut ibv_device_attr) -> c_int;
type QueryPort = unsafe extern "C" fn(*mut ibv_context, u8, *mut ibv_port_attr) -> c_int;
type QueryGid = unsafe extern "C" fn(*mut ibv_context, u8, c_int, *mut ibv_gid) -> c_int;
type AllocPd = unsafe extern "C" fn(*mut ibv_context) -> *mut c_void;
type DeallocPd = unsafe extern "C" fn(*mut c_void) -> c_int;
type RegMr = unsafe extern "C" fn(*mut c_void, *mut c_void, usize, c_int) -> *mut ibv_mr;
type RegMrIova2 = unsafe extern "C" fn(*mut c_void, *mut c_void, usize, u64, c_uint) -> *mut ibv_mr;
type RegDmabufMr = unsafe extern "C" fn(*mut c_void, u64, usize, u64, c_int, c_int) -> *mut ibv_mr;
type DeregMr = unsafe extern "C" fn(*mut ibv_mr) -> c_int;
type CreateCq =
    unsafe extern "C" fn(*mut ibv_context, c_int, *mut c_void, *mut c_void, c_int) -> *mut ibv_cq;
type DestroyCq = unsafe extern "C" fn(*mut ibv_cq) -> c_int;
type CreateQp = unsafe extern "C" fn(*mut c_void, *mut ibv_qp_init_attr) -> *mut ibv_qp;
type ModifyQp = unsafe extern "C" fn(*mut ibv_qp, *mut ibv_qp_attr, c_int) -> c_int;
type DestroyQp = unsafe extern "C" fn(*mut ibv_qp) -> c_int;
type WcStatusStr = unsafe extern "C" fn(c_int) -> *const c_char;

/// The entry points fabrik calls. The function pointers stay valid while `_lib` is loaded, and
/// `_lib` lives as long as this struct.
pub struct Verbs {
    pub(crate) get_device_list: GetDeviceList,
    pub(crate) free_device_list: FreeDeviceList,
    pub(crate) get_device_name: GetDeviceName,
    pub(crate) open_device: OpenDevice,
    pub(crate) close_device: CloseDevice,
    pub(crate) query_device: QueryDevice,
    /// The exported `ibv_query_port` (IBVERBS_1.1). verbs.h wraps it in an inline
    /// `___ibv_query_port` that zeroes the full `ibv_port_attr` and then calls this symbol when
    /// the provider has no extended op; the exported symbol itself dispatches to the extended op
    /// when there is one, so calling it on a zeroed struct is what the inline ends up doing.
    pub(crate) query_port: QueryPort,
    pub(crate) query_gid: QueryGid,
    pub(crate) alloc_pd: AllocPd,
    pub(crate) dealloc_pd: DeallocPd,
    pub(crate) reg_mr: RegMr,
    /// rdma-core ≥ 22 (IBVERBS_1.8); needed for the optional access bits (relaxed ordering).
    pub(crate) reg_mr_iova2: Option<RegMrIova2>,
    /// rdma-core ≥ 34 (IBVERBS_1.12).
    pub(crate) reg_dmabuf_mr: Option<RegDmabufMr>,
    pub(crate) dereg_mr: DeregMr,
    pub(crate) create_cq: CreateCq,
    pub(crate) destroy_cq: DestroyCq,
    pub(crate) create_qp: CreateQp,
    pub(crate) modify_qp: ModifyQp,
    pub(crate) destroy_qp: DestroyQp,
    pub(crate) wc_status_str: WcStatusStr,
    _lib: Library,
}

impl std::fmt::Debug for Verbs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verbs")
            .field("reg_mr_iova2", &self.reg_mr_iova2.is_some())
            .field("reg_dmabuf_mr", &self.reg_dmabuf_mr.is_some())
            .finish()
    }
}

impl Verbs {
    /// Loads `libibverbs.so.1` from the dynamic linker's search path.
    pub fn load() -> Result<Self, VerbsError> {
        Self::load_from(LIBIBVERBS)
    }

    /// Loads libibverbs from `name` (a soname or a path).
    pub fn load_from(name: &str) -> Result<Self, VerbsError> {
        // SAFETY: loading libibverbs runs its ELF constructors, which only set up internal
        // tables; no other code in this process depends on a particular load order for it.
        let lib = unsafe { Library::open(name) }?;
        macro_rules! sym {
            ($s:literal) => {
                // SAFETY: the symbol's type is the C prototype from verbs.h for this name, and
                // the pointer does not outlive `lib`, which is moved into the returned struct.
                unsafe { lib.symbol($s) }?
            };
        }
        macro_rules! opt_sym {
            ($s:literal) => {
                // SAFETY: as in `sym!`; an absent symbol is an older rdma-core, not an error.
                unsafe { lib.optional($s) }
            };
        }
        Ok(Verbs {
            get_device_list: sym!("ibv_get_device_list"),
            free_device_list: sym!("ibv_free_device_list"),
            get_device_name: sym!("ibv_get_device_name"),
            open_device: sym!("ibv_open_device"),
            close_device: sym!("ibv_close_device"),
            query_device: sym!("ibv_query_device"),
            query_port: sym!("ibv_query_port"),
            query_gid: sym!("ibv_query_gid"),
            alloc_pd: sym!("ibv_alloc_pd"),
            dealloc_pd: sym!("ibv_dealloc_pd"),
            reg_mr: sym!("ibv_reg_mr"),
            reg_mr_iova2: opt_sym!("ibv_reg_mr_iova2"),
            reg_dmabuf_mr: opt_sym!("ibv_reg_dmabuf_mr"),
            dereg_mr: sym!("ibv_dereg_mr"),
            create_cq: sym!("ibv_create_cq"),
            destroy_cq: sym!("ibv_destroy_cq"),
            create_qp: sym!("ibv_create_qp"),
            modify_qp: sym!("ibv_modify_qp"),
            destroy_qp: sym!("ibv_destroy_qp"),
            wc_status_str: sym!("ibv_wc_status_str"),
            _lib: lib,
        })
    }

    /// Whether `ibv_reg_dmabuf_mr` exists (the GPU memory path without nvidia_peermem).
    pub fn has_dmabuf(&self) -> bool {
        self.reg_dmabuf_mr.is_some()
    }

    /// `ibv_wc_status_str`: the library's words for a completion status.
    pub fn wc_status_str(&self, status: c_int) -> String {
        // SAFETY: ibv_wc_status_str returns a pointer to a static string for any value
        // (unknown values get "unknown").
        let p = unsafe { (self.wc_status_str)(status) };
        if p.is_null() {
            return format!("status {status}");
        }
        // SAFETY: non-null, NUL-terminated static string owned by the library.
        unsafe { std::ffi::CStr::from_ptr(p) }
            .to_string_lossy()
            .into_owned()
    }
}
