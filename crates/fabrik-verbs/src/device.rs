//! Owned verbs objects (device context, protection domain, completion queue, queue pair, memory
//! region), each released in `Drop` in the order the kernel requires: the Arcs keep a parent
//! alive while a child exists.

use std::ffi::{c_void, CStr};
use std::os::raw::c_int;
use std::ptr::NonNull;
use std::sync::Arc;

use crate::error::{memlock_limit, VerbsError};
use crate::ffi::*;
use crate::loader::Verbs;

/// What `ibv_query_port` says about one port.
#[derive(Debug, Clone, Copy)]
pub struct PortInfo {
    /// `ibv_port_state` (4 is ACTIVE).
    pub state: i32,
    /// `ibv_mtu` enum (1 = 256 bytes … 5 = 4096 bytes).
    pub active_mtu: i32,
    /// GID table size.
    pub gid_tbl_len: i32,
    /// The port's LID (IB; 0 on RoCE).
    pub lid: u16,
    /// `IBV_LINK_LAYER_*`.
    pub link_layer: u8,
}

impl PortInfo {
    /// Whether the link layer is Ethernet (RoCE), so addressing goes through GIDs.
    pub fn is_ethernet(&self) -> bool {
        self.link_layer == IBV_LINK_LAYER_ETHERNET
    }
    /// The active MTU in bytes (`IBV_MTU_256` = 1 … `IBV_MTU_4096` = 5).
    pub fn active_mtu_bytes(&self) -> u32 {
        mtu_enum_to_bytes(self.active_mtu)
    }
}

/// Bytes of an `ibv_mtu` value (1 → 256 … 5 → 4096); 0 for anything else.
pub fn mtu_enum_to_bytes(v: i32) -> u32 {
    match v {
        1..=5 => 128u32 << v,
        _ => 0,
    }
}

/// The `ibv_mtu` value of an MTU in bytes; `None` unless it is 256, 512, 1024, 2048 or 4096.
pub fn mtu_bytes_to_enum(bytes: u32) -> Option<i32> {
    match bytes {
        256 => Some(1),
        512 => Some(2),
        1024 => Some(3),
        2048 => Some(4),
        4096 => Some(5),
        _ => None,
    }
}

/// The name of an `ibv_port_state` (`ACTIVE`), `UNKNOWN` for values outside the enum.
pub fn port_state_name(state: i32) -> &'static str {
    match state {
        0 => "NOP",
        1 => "DOWN",
        2 => "INIT",
        3 => "ARMED",
        4 => "ACTIVE",
        5 => "ACTIVE_DEFER",
        _ => "UNKNOWN",
    }
}

/// An open device (`ibv_open_device`).
pub struct Context {
    pub(crate) verbs: Arc<Verbs>,
    pub(crate) ptr: NonNull<ibv_context>,
    /// The device name (`mlx5_0`).
    pub name: String,
}

// SAFETY: libibverbs contexts are thread-safe for the verbs used here (rdma-core documents the
// control path as thread-safe); fabrik never shares a QP between threads without ownership.
unsafe impl Send for Context {}
// SAFETY: as above.
unsafe impl Sync for Context {}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: ptr came from ibv_open_device and every child object holds an Arc to this
        // context, so none is alive any more.
        unsafe { (self.verbs.close_device)(self.ptr.as_ptr()) };
    }
}

/// Names of the RDMA devices libibverbs sees.
pub fn device_names(verbs: &Verbs) -> Result<Vec<String>, VerbsError> {
    with_device_list(verbs, |list| {
        Ok(list.iter().map(|(n, _)| n.clone()).collect())
    })
}

fn with_device_list<T>(
    verbs: &Verbs,
    f: impl FnOnce(&[(String, *mut c_void)]) -> Result<T, VerbsError>,
) -> Result<T, VerbsError> {
    let mut n: c_int = 0;
    // SAFETY: n is a valid out-pointer; the list is freed below.
    let list = unsafe { (verbs.get_device_list)(&mut n) };
    if list.is_null() {
        let err = std::io::Error::last_os_error();
        // ENOSYS: the kernel has no RDMA (no ib_uverbs, or not in this container).
        if err.raw_os_error() == Some(38) {
            return Err(VerbsError::NoDevices);
        }
        return Err(VerbsError::Call {
            call: "ibv_get_device_list",
            err,
        });
    }
    let mut devs = Vec::new();
    for i in 0..usize::try_from(n).unwrap_or(0) {
        // SAFETY: the list holds n valid device pointers followed by NULL.
        let dev = unsafe { *list.add(i) };
        if dev.is_null() {
            break;
        }
        // SAFETY: dev is a live device from the list; the name is a NUL-terminated string
        // inside it.
        let name = unsafe { (verbs.get_device_name)(dev) };
        let name = if name.is_null() {
            String::new()
        } else {
            // SAFETY: non-null NUL-terminated string owned by the device.
            unsafe { CStr::from_ptr(name) }
                .to_string_lossy()
                .into_owned()
        };
        devs.push((name, dev));
    }
    let out = f(&devs);
    // SAFETY: list came from ibv_get_device_list; devices opened inside `f` stay valid after.
    unsafe { (verbs.free_device_list)(list) };
    out
}

impl Context {
    /// Opens the device called `name`, or the first one when `name` is `None`.
    pub fn open(verbs: Arc<Verbs>, name: Option<&str>) -> Result<Arc<Self>, VerbsError> {
        let v = verbs.clone();
        with_device_list(&v, |devs| {
            if devs.is_empty() {
                return Err(VerbsError::NoDevices);
            }
            let found = match name {
                Some(n) => devs.iter().find(|(d, _)| d == n),
                None => devs.first(),
            };
            let Some((dname, dev)) = found else {
                return Err(VerbsError::DeviceNotFound {
                    name: name.unwrap_or_default().to_string(),
                    available: devs.iter().map(|(n, _)| n.clone()).collect(),
                });
            };
            // SAFETY: dev is a live entry of the device list, which is still allocated.
            let ctx = unsafe { (verbs.open_device)(*dev) };
            let ptr = NonNull::new(ctx).ok_or_else(|| VerbsError::call("ibv_open_device"))?;
            Ok(Arc::new(Context {
                verbs: verbs.clone(),
                ptr,
                name: dname.clone(),
            }))
        })
    }

    /// The loaded library this context calls through.
    pub fn verbs(&self) -> &Verbs {
        &self.verbs
    }

    /// Number of physical ports (`ibv_query_device`).
    pub fn phys_port_cnt(&self) -> Result<u8, VerbsError> {
        // SAFETY: ibv_device_attr is plain data; all-zero is a valid value.
        let mut attr: ibv_device_attr = unsafe { std::mem::zeroed() };
        // SAFETY: ptr is an open context; attr is a valid out-pointer of the right size.
        let rc = unsafe { (self.verbs.query_device)(self.ptr.as_ptr(), &mut attr) };
        if rc != 0 {
            return Err(VerbsError::call_rc("ibv_query_device", rc));
        }
        Ok(attr.phys_port_cnt)
    }

    /// State, MTU, GID table size, LID and link layer of `port` (`ibv_query_port`).
    pub fn query_port(&self, port: u8) -> Result<PortInfo, VerbsError> {
        let mut attr = ibv_port_attr::default();
        // SAFETY: ptr is an open context; attr is zeroed and at least as large as the compat
        // structure the exported symbol fills (see Verbs::query_port).
        let rc = unsafe { (self.verbs.query_port)(self.ptr.as_ptr(), port, &mut attr) };
        if rc != 0 {
            return Err(VerbsError::call_rc("ibv_query_port", rc));
        }
        Ok(PortInfo {
            state: attr.state,
            active_mtu: attr.active_mtu,
            gid_tbl_len: attr.gid_tbl_len,
            lid: attr.lid,
            link_layer: attr.link_layer,
        })
    }

    /// The 16 raw bytes of GID `index` on `port` (`ibv_query_gid`).
    pub fn query_gid(&self, port: u8, index: u32) -> Result<[u8; 16], VerbsError> {
        let mut gid = ibv_gid::default();
        let idx = c_int::try_from(index)
            .map_err(|_| VerbsError::Unsupported(format!("GID index {index} is too large")))?;
        // SAFETY: ptr is an open context; gid is a valid 16-byte out-pointer.
        let rc = unsafe { (self.verbs.query_gid)(self.ptr.as_ptr(), port, idx, &mut gid) };
        if rc != 0 {
            return Err(VerbsError::call("ibv_query_gid"));
        }
        Ok(gid.raw)
    }
}

/// A protection domain.
pub struct Pd {
    pub(crate) ctx: Arc<Context>,
    pub(crate) ptr: NonNull<c_void>,
}
// SAFETY: see Context.
unsafe impl Send for Pd {}
// SAFETY: see Context.
unsafe impl Sync for Pd {}

impl Pd {
    /// Allocates a protection domain on `ctx` (`ibv_alloc_pd`).
    pub fn new(ctx: Arc<Context>) -> Result<Arc<Self>, VerbsError> {
        // SAFETY: ctx is open.
        let pd = unsafe { (ctx.verbs.alloc_pd)(ctx.ptr.as_ptr()) };
        let ptr = NonNull::new(pd).ok_or_else(|| VerbsError::call("ibv_alloc_pd"))?;
        Ok(Arc::new(Pd { ctx, ptr }))
    }
    /// The device context this PD belongs to.
    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        // SAFETY: every MR and QP of this PD holds an Arc to it, so none is alive.
        unsafe { (self.ctx.verbs.dealloc_pd)(self.ptr.as_ptr()) };
    }
}

/// A registered memory region over memory the caller keeps alive longer than this value.
pub struct Mr {
    pd: Arc<Pd>,
    ptr: NonNull<ibv_mr>,
    /// The registered range's start address, as the NIC sees it.
    pub addr: u64,
    /// The registered range's length in bytes.
    pub len: usize,
}
// SAFETY: see Context.
unsafe impl Send for Mr {}
// SAFETY: see Context.
unsafe impl Sync for Mr {}

impl Mr {
    /// The protection domain this region belongs to (for registering more memory beside it).
    pub fn pd(&self) -> Arc<Pd> {
        self.pd.clone()
    }

    /// Registers `len` bytes at `addr` (host memory, or GPU memory through nvidia_peermem).
    ///
    /// # Safety
    /// `addr..addr+len` must stay mapped until the returned `Mr` is dropped.
    pub unsafe fn register(
        pd: Arc<Pd>,
        addr: *mut u8,
        len: usize,
        access: c_int,
    ) -> Result<Self, VerbsError> {
        let verbs = &pd.ctx.verbs;
        let mr = if access & IBV_ACCESS_OPTIONAL_RANGE != 0 {
            let Some(reg2) = verbs.reg_mr_iova2 else {
                return Err(VerbsError::Unsupported(
                    "this libibverbs lacks ibv_reg_mr_iova2, needed for relaxed ordering \
                     (rdma-core >= 22)"
                        .into(),
                ));
            };
            // SAFETY: pd is live; the caller guarantees the range stays mapped; iova = addr
            // as verbs.h's inline ibv_reg_mr passes it.
            unsafe {
                reg2(
                    pd.ptr.as_ptr(),
                    addr.cast(),
                    len,
                    addr as u64,
                    access as u32,
                )
            }
        } else {
            // SAFETY: as above.
            unsafe { (verbs.reg_mr)(pd.ptr.as_ptr(), addr.cast(), len, access) }
        };
        Self::finish(pd, mr, len, "ibv_reg_mr")
    }

    /// Registers a dma-buf (GPU memory exported by the CUDA driver) without nvidia_peermem.
    pub fn register_dmabuf(
        pd: Arc<Pd>,
        fd: i32,
        offset: u64,
        len: usize,
        iova: u64,
        access: c_int,
    ) -> Result<Self, VerbsError> {
        let Some(reg) = pd.ctx.verbs.reg_dmabuf_mr else {
            return Err(VerbsError::Unsupported(
                "this libibverbs lacks ibv_reg_dmabuf_mr (rdma-core >= 34)".into(),
            ));
        };
        // SAFETY: pd is live; the fd refers to a dma-buf the caller keeps open while the MR lives.
        let mr = unsafe { reg(pd.ptr.as_ptr(), offset, len, iova, fd, access) };
        Self::finish(pd, mr, len, "ibv_reg_dmabuf_mr")
    }

    fn finish(
        pd: Arc<Pd>,
        mr: *mut ibv_mr,
        len: usize,
        call: &'static str,
    ) -> Result<Self, VerbsError> {
        let Some(ptr) = NonNull::new(mr) else {
            let err = std::io::Error::last_os_error();
            // ib_umem_get fails with ENOMEM when pinning would pass RLIMIT_MEMLOCK.
            if err.raw_os_error() == Some(12) {
                return Err(VerbsError::MemlockTooLow {
                    bytes: len,
                    limit: memlock_limit(),
                    err,
                });
            }
            return Err(VerbsError::Call { call, err });
        };
        // SAFETY: ptr is the MR just returned by libibverbs.
        let addr = unsafe { ptr.as_ref() }.addr as u64;
        Ok(Mr { pd, ptr, addr, len })
    }

    /// The local key, for scatter/gather entries.
    pub fn lkey(&self) -> u32 {
        // SAFETY: ptr is a live MR.
        unsafe { self.ptr.as_ref() }.lkey
    }
    /// The remote key, for the peer's RDMA reads and writes.
    pub fn rkey(&self) -> u32 {
        // SAFETY: ptr is a live MR.
        unsafe { self.ptr.as_ref() }.rkey
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        // SAFETY: ptr is a live MR; QPs using it are dropped before it by the owner.
        unsafe { (self.pd.ctx.verbs.dereg_mr)(self.ptr.as_ptr()) };
    }
}

/// A completion queue, polled (no completion channel).
pub struct Cq {
    ctx: Arc<Context>,
    pub(crate) ptr: NonNull<ibv_cq>,
}
// SAFETY: see Context.
unsafe impl Send for Cq {}
// SAFETY: see Context.
unsafe impl Sync for Cq {}

impl Cq {
    /// A completion queue of at least `depth` entries (`ibv_create_cq`).
    pub fn new(ctx: Arc<Context>, depth: u32) -> Result<Arc<Self>, VerbsError> {
        let cqe = c_int::try_from(depth).unwrap_or(c_int::MAX);
        // SAFETY: ctx is open; no channel, no context, vector 0.
        let cq = unsafe {
            (ctx.verbs.create_cq)(
                ctx.ptr.as_ptr(),
                cqe,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )
        };
        let ptr = NonNull::new(cq).ok_or_else(|| VerbsError::call("ibv_create_cq"))?;
        Ok(Arc::new(Cq { ctx, ptr }))
    }

    /// `ibv_poll_cq`, which verbs.h defines inline as `cq->context->ops.poll_cq(...)`.
    pub fn poll(&self, wcs: &mut [ibv_wc]) -> Result<usize, VerbsError> {
        // SAFETY: the cq and its context are live (the Arc holds the context); the context
        // pointer inside the cq is the one libibverbs set at creation.
        let ctx = unsafe { &*self.ptr.as_ref().context };
        let Some(poll) = ctx.ops.poll_cq else {
            return Err(VerbsError::Unsupported("provider has no poll_cq".into()));
        };
        let n = c_int::try_from(wcs.len()).unwrap_or(c_int::MAX);
        // SAFETY: wcs has room for n entries; the cq is live.
        let rc = unsafe { poll(self.ptr.as_ptr(), n, wcs.as_mut_ptr()) };
        if rc < 0 {
            return Err(VerbsError::call_rc("ibv_poll_cq", rc));
        }
        Ok(usize::try_from(rc).unwrap_or(0))
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        // SAFETY: every QP on this CQ holds an Arc to it.
        unsafe { (self.ctx.verbs.destroy_cq)(self.ptr.as_ptr()) };
    }
}

/// A reliable-connected queue pair.
pub struct Qp {
    pd: Arc<Pd>,
    _send_cq: Arc<Cq>,
    _recv_cq: Arc<Cq>,
    pub(crate) ptr: NonNull<ibv_qp>,
    /// Inline data the QP accepts, bytes (what the provider granted).
    pub max_inline: u32,
}
// SAFETY: see Context; a Qp is used by one thread at a time (&mut for posting).
unsafe impl Send for Qp {}

/// The remote end of a connection, as exchanged over the control channel.
#[derive(Debug, Clone, Copy)]
pub struct RemoteQp {
    /// The peer's QP number.
    pub qpn: u32,
    /// The peer's initial packet sequence number.
    pub psn: u32,
    /// The peer's LID (IB).
    pub lid: u16,
    /// The peer's GID (raw bytes).
    pub gid: [u8; 16],
}

/// Path parameters of the local end.
#[derive(Debug, Clone, Copy)]
pub struct PathParams {
    /// Local port, from 1.
    pub port: u8,
    /// Local GID index.
    pub gid_index: u8,
    /// GRH needed: RoCE always, IB when the peer has a global GID.
    pub use_grh: bool,
    /// Path MTU as an `ibv_mtu` value.
    pub mtu: i32,
    /// Local initial packet sequence number.
    pub psn: u32,
    /// IB local ACK timeout exponent: 4.096 µs × 2^timeout per try.
    pub timeout: u8,
    /// Transport retries before a send fails (at most 7).
    pub retry_cnt: u8,
}

impl Qp {
    /// Creates an RC QP in the RESET state with one SGE per WR (`ibv_create_qp`).
    pub fn new_rc(
        pd: Arc<Pd>,
        send_cq: Arc<Cq>,
        recv_cq: Arc<Cq>,
        max_send_wr: u32,
        max_recv_wr: u32,
        max_inline: u32,
    ) -> Result<Self, VerbsError> {
        let mut init = ibv_qp_init_attr {
            qp_context: std::ptr::null_mut(),
            send_cq: send_cq.ptr.as_ptr(),
            recv_cq: recv_cq.ptr.as_ptr(),
            srq: std::ptr::null_mut(),
            cap: ibv_qp_cap {
                max_send_wr,
                max_recv_wr,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: max_inline,
            },
            qp_type: IBV_QPT_RC,
            sq_sig_all: 0,
        };
        // SAFETY: pd and CQs are live; init is a valid attribute struct.
        let qp = unsafe { (pd.ctx.verbs.create_qp)(pd.ptr.as_ptr(), &mut init) };
        let ptr = NonNull::new(qp).ok_or_else(|| VerbsError::call("ibv_create_qp"))?;
        Ok(Qp {
            pd,
            _send_cq: send_cq,
            _recv_cq: recv_cq,
            ptr,
            max_inline: init.cap.max_inline_data,
        })
    }

    /// This QP's number.
    pub fn qp_num(&self) -> u32 {
        // SAFETY: ptr is a live QP.
        unsafe { self.ptr.as_ref() }.qp_num
    }

    fn modify(
        &self,
        attr: &mut ibv_qp_attr,
        mask: c_int,
        what: &'static str,
    ) -> Result<(), VerbsError> {
        // SAFETY: ptr is a live QP; attr is a valid attribute struct.
        let rc = unsafe { (self.pd.ctx.verbs.modify_qp)(self.ptr.as_ptr(), attr, mask) };
        if rc != 0 {
            return Err(VerbsError::call_rc(what, rc));
        }
        Ok(())
    }

    /// RESET → INIT → RTR → RTS against `remote`.
    pub fn connect(
        &self,
        local: &PathParams,
        remote: &RemoteQp,
        access: c_int,
    ) -> Result<(), VerbsError> {
        let mut a = ibv_qp_attr {
            qp_state: IBV_QPS_INIT,
            pkey_index: 0,
            port_num: local.port,
            qp_access_flags: access as u32,
            ..Default::default()
        };
        self.modify(
            &mut a,
            IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
            "ibv_modify_qp(INIT)",
        )?;
        let mut a = ibv_qp_attr {
            qp_state: IBV_QPS_RTR,
            path_mtu: local.mtu,
            dest_qp_num: remote.qpn,
            rq_psn: remote.psn,
            max_dest_rd_atomic: 16,
            min_rnr_timer: 12,
            ..Default::default()
        };
        a.ah_attr.dlid = remote.lid;
        a.ah_attr.port_num = local.port;
        if local.use_grh {
            a.ah_attr.is_global = 1;
            a.ah_attr.grh.dgid.raw = remote.gid;
            a.ah_attr.grh.sgid_index = local.gid_index;
            a.ah_attr.grh.hop_limit = 64;
        }
        self.modify(
            &mut a,
            IBV_QP_STATE
                | IBV_QP_AV
                | IBV_QP_PATH_MTU
                | IBV_QP_DEST_QPN
                | IBV_QP_RQ_PSN
                | IBV_QP_MAX_DEST_RD_ATOMIC
                | IBV_QP_MIN_RNR_TIMER,
            "ibv_modify_qp(RTR)",
        )?;
        let mut a = ibv_qp_attr {
            qp_state: IBV_QPS_RTS,
            sq_psn: local.psn,
            timeout: local.timeout,
            retry_cnt: local.retry_cnt,
            rnr_retry: 7,
            max_rd_atomic: 16,
            ..Default::default()
        };
        self.modify(
            &mut a,
            IBV_QP_STATE
                | IBV_QP_SQ_PSN
                | IBV_QP_TIMEOUT
                | IBV_QP_RETRY_CNT
                | IBV_QP_RNR_RETRY
                | IBV_QP_MAX_QP_RD_ATOMIC,
            "ibv_modify_qp(RTS)",
        )
    }

    /// `ibv_post_send`, which verbs.h defines inline as `qp->context->ops.post_send(...)`.
    ///
    /// # Safety
    /// Every SGE in `wr` must name memory inside a live MR of this QP's PD, and for RDMA ops
    /// `remote_addr`/`rkey` must name the peer's registered memory.
    pub unsafe fn post_send(&mut self, wr: &mut ibv_send_wr) -> Result<(), VerbsError> {
        // SAFETY: the QP and its context are live.
        let ctx = unsafe { &*self.ptr.as_ref().context };
        let Some(post) = ctx.ops.post_send else {
            return Err(VerbsError::Unsupported("provider has no post_send".into()));
        };
        let mut bad: *mut ibv_send_wr = std::ptr::null_mut();
        // SAFETY: wr and its SGEs are valid for the duration of the call (the provider copies
        // them into the send queue); the caller vouches for the memory they name.
        let rc = unsafe { post(self.ptr.as_ptr(), wr, &mut bad) };
        if rc != 0 {
            return Err(VerbsError::call_rc("ibv_post_send", rc));
        }
        Ok(())
    }

    /// `ibv_post_recv`, inline in verbs.h as `qp->context->ops.post_recv(...)`.
    ///
    /// # Safety
    /// As for `post_send`: the SGE must name memory inside a live local MR.
    pub unsafe fn post_recv(&mut self, wr: &mut ibv_recv_wr) -> Result<(), VerbsError> {
        // SAFETY: the QP and its context are live.
        let ctx = unsafe { &*self.ptr.as_ref().context };
        let Some(post) = ctx.ops.post_recv else {
            return Err(VerbsError::Unsupported("provider has no post_recv".into()));
        };
        let mut bad: *mut ibv_recv_wr = std::ptr::null_mut();
        // SAFETY: as in post_send.
        let rc = unsafe { post(self.ptr.as_ptr(), wr, &mut bad) };
        if rc != 0 {
            return Err(VerbsError::call_rc("ibv_post_recv", rc));
        }
        Ok(())
    }
}

impl Drop for Qp {
    fn drop(&mut self) {
        // SAFETY: ptr is a live QP; its CQs and PD outlive it through the Arcs.
        unsafe { (self.pd.ctx.verbs.destroy_qp)(self.ptr.as_ptr()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mtu_round_trip() {
        for b in [256, 512, 1024, 2048, 4096] {
            let e = mtu_bytes_to_enum(b);
            assert_eq!(e.map(mtu_enum_to_bytes), Some(b));
        }
        assert_eq!(mtu_bytes_to_enum(1500), None);
        assert_eq!(mtu_enum_to_bytes(0), 0);
    }
}
