//! RDMA point-to-point benchmarks over RC queue pairs: bandwidth (many WRs in flight, a
//! completion every `cq_mod`) and latency (ping-pong), for write, read and send, measured as
//! perftest's ib_*_bw / ib_*_lat measure them. The client drives; the server follows its lead over
//! the control channel.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fabrik_model::{P2pReport, P2pRows, P2pTest, ResultSource, SCHEMA_VERSION};
use fabrik_wire::Channel;

use crate::clock::Ticker;
use crate::device::{
    device_names, mtu_bytes_to_enum, port_state_name, Context, Cq, Mr, PathParams, Pd, PortInfo,
    Qp, RemoteQp,
};
use crate::error::VerbsError;
use crate::ffi::*;
use crate::gid::{format_gid, parse_gid, roce_gid_index};
use crate::gpuref::{self, Registration};
use crate::loader::Verbs;
use crate::mem::{pattern, Buffer, Cuda, MemKind};
use crate::proto::{Ctrl, Endpoint, Op, QpEndpoint, TestParams, PROTOCOL_VERSION};
use crate::stats::{bw_row, lat_row};
use crate::watch::PeerWatch;
use fabrik_nccl::gid::GidSettings;

/// How this end uses its hardware (not negotiated: each end picks its own).
#[derive(Debug, Clone)]
pub struct LocalOptions {
    pub device: Option<String>,
    pub port: u8,
    pub gid_index: Option<u32>,
    pub mtu: Option<u32>,
    pub mem: MemKind,
    pub cuda_device: i32,
    pub relaxed_ordering: bool,
    /// With GPU memory, also run the bandwidth test from a host buffer (same QPs, sizes) and
    /// compare.
    pub host_reference: bool,
    /// Warn when GPU memory's bandwidth is below this fraction of host memory's.
    pub warn_below: f64,
    /// Longest wait for any completion or control message.
    pub timeout: Duration,
    /// Where sysfs is read for the GID table (`/` live).
    pub root: PathBuf,
}

impl Default for LocalOptions {
    fn default() -> Self {
        LocalOptions {
            device: None,
            port: 1,
            gid_index: None,
            mtu: None,
            mem: MemKind::Host,
            cuda_device: 0,
            relaxed_ordering: false,
            host_reference: true,
            warn_below: gpuref::DEFAULT_WARN_BELOW,
            timeout: Duration::from_secs(30),
            root: PathBuf::from("/"),
        }
    }
}

/// A registered host buffer; the MR drops before the memory under it.
struct HostRegion {
    mr: Mr,
    buf: Buffer,
}

/// Receive slots for send bandwidth, cycled as perftest cycles its buffers.
const RX_SLOTS: u64 = 16;

/// Everything one end holds. Fields drop in declaration order: QPs before the MR, the MR before
/// the memory under it, and the CQs/PD/context (behind Arcs) last.
struct Resources {
    qps: Vec<Qp>,
    mr: Mr,
    /// A host buffer beside a GPU one, for the host-memory reference pass (client only).
    host_ref: Option<HostRegion>,
    /// Whether the local side of posted WRs is `host_ref` rather than `mr`/`buf`.
    use_host_ref: bool,
    registration: Registration,
    buf: Buffer,
    send_cq: Arc<Cq>,
    recv_cq: Arc<Cq>,
    ctx: Arc<Context>,
    port: u8,
    port_info: PortInfo,
    gid_index: u32,
    gid: [u8; 16],
    mtu: u32,
    psns: Vec<u32>,
    max_size: u64,
    rx_depth: u32,
    access: i32,
    inline_cap: u32,
    notes: Vec<String>,
    /// The control connection, looked at while the data moves (set once connected).
    watch: Option<PeerWatch>,
    /// Receives posted and not yet completed, per QP.
    rx_posted: Vec<u32>,
    rx_next_slot: u64,
}

fn access_names(access: i32) -> String {
    let mut v = Vec::new();
    for (bit, name) in [
        (IBV_ACCESS_LOCAL_WRITE, "LOCAL_WRITE"),
        (IBV_ACCESS_REMOTE_WRITE, "REMOTE_WRITE"),
        (IBV_ACCESS_REMOTE_READ, "REMOTE_READ"),
        (IBV_ACCESS_RELAXED_ORDERING, "RELAXED_ORDERING"),
    ] {
        if access & bit != 0 {
            v.push(name);
        }
    }
    v.join("|")
}

/// Opens `name`, or when `None` the first device whose `port` is ACTIVE.
pub(crate) fn open_device(
    verbs: &Arc<Verbs>,
    name: Option<&str>,
    port: u8,
) -> Result<Arc<Context>, VerbsError> {
    if name.is_some() {
        return Context::open(verbs.clone(), name);
    }
    let names = device_names(verbs)?;
    if names.is_empty() {
        return Err(VerbsError::NoDevices);
    }
    for n in &names {
        let ctx = Context::open(verbs.clone(), Some(n))?;
        if ctx
            .query_port(port)
            .map(|p| p.state == IBV_PORT_ACTIVE)
            .unwrap_or(false)
        {
            return Ok(ctx);
        }
    }
    // None is active: open the first, and let the port check say why.
    Context::open(verbs.clone(), names.first().map(String::as_str))
}

/// The device, port, GID and MTU a test or pipe runs on, checked to be usable.
pub(crate) struct PortChoice {
    pub(crate) ctx: Arc<Context>,
    pub(crate) port_info: PortInfo,
    pub(crate) gid_index: u32,
    pub(crate) gid: [u8; 16],
    pub(crate) mtu: u32,
}

/// Opens `opts`' device and port and picks the GID index (the one NCCL would use under this
/// process's NCCL_IB_* variables, unless `--gid-index` names one) and the MTU (the active one, or `--mtu` capped by it): the
/// defaults every RDMA user of fabrik shares, each refusal a typed error naming the device.
pub(crate) fn open_port(verbs: &Arc<Verbs>, opts: &LocalOptions) -> Result<PortChoice, VerbsError> {
    let ctx = open_device(verbs, opts.device.as_deref(), opts.port)?;
    let count = ctx.phys_port_cnt()?;
    if opts.port == 0 || opts.port > count {
        return Err(VerbsError::PortNotFound {
            device: ctx.name.clone(),
            port: opts.port,
            count,
        });
    }
    let port_info = ctx.query_port(opts.port)?;
    if port_info.state != IBV_PORT_ACTIVE {
        return Err(VerbsError::PortNotActive {
            device: ctx.name.clone(),
            port: opts.port,
            state: port_state_name(port_info.state).to_string(),
        });
    }
    let gid_index = match opts.gid_index {
        Some(i) => i,
        None if !port_info.is_ethernet() => 0,
        None => roce_gid_index(
            &opts.root,
            &ctx.name,
            u32::from(opts.port),
            &GidSettings::from_env(|k| std::env::var(k).ok()),
        ),
    };
    let tbl = u32::try_from(port_info.gid_tbl_len).unwrap_or(0);
    if gid_index >= tbl {
        return Err(VerbsError::GidIndexOutOfRange {
            device: ctx.name.clone(),
            port: opts.port,
            index: gid_index,
            len: tbl,
        });
    }
    let gid = ctx.query_gid(opts.port, gid_index)?;
    if port_info.is_ethernet() && gid.iter().all(|b| *b == 0) {
        return Err(VerbsError::GidEmpty {
            device: ctx.name.clone(),
            port: opts.port,
            index: gid_index,
        });
    }
    let active = port_info.active_mtu_bytes();
    let mtu = match opts.mtu {
        Some(m) => {
            if mtu_bytes_to_enum(m).is_none() {
                return Err(VerbsError::Unsupported(format!(
                    "MTU {m}: RDMA MTUs are 256, 512, 1024, 2048 or 4096"
                )));
            }
            m.min(active)
        }
        None => active,
    };
    Ok(PortChoice {
        ctx,
        port_info,
        gid_index,
        gid,
        mtu,
    })
}

fn psn_seed(i: usize) -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    (t.wrapping_mul(2654435761).wrapping_add(i as u32 * 7919)) & 0xff_ffff
}

impl Resources {
    fn new(
        verbs: &Arc<Verbs>,
        opts: &LocalOptions,
        params: &TestParams,
    ) -> Result<Self, VerbsError> {
        // The GPU first: on a node without one, `--mem cuda` says so before any RDMA detail.
        let cuda = match opts.mem {
            MemKind::Host => None,
            MemKind::Cuda | MemKind::Managed => Some(Cuda::open(opts.cuda_device)?),
        };
        let PortChoice {
            ctx,
            port_info,
            gid_index,
            gid,
            mtu,
        } = open_port(verbs, opts)?;

        let pd = Pd::new(ctx.clone())?;
        let max_size = params.max_size();
        let slots = if params.op == Op::Send && params.test == P2pTest::Bw {
            RX_SLOTS
        } else {
            1
        };
        let len = usize::try_from(max_size * (1 + slots))
            .map_err(|_| VerbsError::Unsupported("buffer too large".into()))?;
        let buf = Buffer::new(opts.mem, len, cuda.as_ref())?;
        let mut access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
        if opts.relaxed_ordering {
            access |= IBV_ACCESS_RELAXED_ORDERING;
        }
        let mut notes = vec![
            format!("memory: {}", opts.mem.as_str()),
            format!("access flags: {}", access_names(access)),
            format!(
                "relaxed ordering: {}",
                if opts.relaxed_ordering { "on" } else { "off" }
            ),
        ];
        let (mr, registration) = register(&pd, &buf, access, &mut notes)?;

        let rx_depth = if params.op == Op::Send {
            if params.test == P2pTest::Bw {
                params.tx_depth.max(128)
            } else {
                4
            }
        } else {
            1
        };
        let send_cq = Cq::new(ctx.clone(), params.qps * params.tx_depth + 16)?;
        let recv_cq = Cq::new(ctx.clone(), params.qps * rx_depth + 16)?;
        let mut qps = Vec::new();
        let mut inline_cap = params.inline_size;
        for _ in 0..params.qps {
            let qp = match Qp::new_rc(
                pd.clone(),
                send_cq.clone(),
                recv_cq.clone(),
                params.tx_depth,
                rx_depth,
                inline_cap,
            ) {
                Ok(q) => q,
                Err(e) if inline_cap > 0 => {
                    notes.push(format!("inline {inline_cap} refused ({e}); inline off"));
                    inline_cap = 0;
                    Qp::new_rc(
                        pd.clone(),
                        send_cq.clone(),
                        recv_cq.clone(),
                        params.tx_depth,
                        rx_depth,
                        0,
                    )?
                }
                Err(e) => return Err(e),
            };
            inline_cap = inline_cap.min(qp.max_inline);
            qps.push(qp);
        }
        let psns = (0..qps.len()).map(psn_seed).collect();
        let n = qps.len();
        Ok(Resources {
            qps,
            mr,
            host_ref: None,
            use_host_ref: false,
            registration,
            buf,
            send_cq,
            recv_cq,
            ctx,
            port: opts.port,
            port_info,
            gid_index,
            gid,
            mtu,
            psns,
            max_size,
            rx_depth,
            access,
            inline_cap,
            notes,
            watch: None,
            rx_posted: vec![0; n],
            rx_next_slot: 0,
        })
    }

    /// Allocates and registers the host buffer of the reference pass, as large as `buf`.
    fn add_host_reference(&mut self) -> Result<(), VerbsError> {
        let buf = Buffer::new(MemKind::Host, self.buf.len, None)?;
        let pd = self.mr.pd();
        // SAFETY: the buffer moves into the same HostRegion as the MR, which drops first.
        let mr = unsafe { Mr::register(pd, buf.as_mut_ptr(), buf.len, self.access)? };
        self.host_ref = Some(HostRegion { mr, buf });
        self.notes
            .push("host-memory reference: a host buffer on the same QPs, same sizes".into());
        Ok(())
    }

    /// The buffer and MR that posted WRs use on this end.
    fn local(&self) -> (&Buffer, &Mr) {
        match &self.host_ref {
            Some(h) if self.use_host_ref => (&h.buf, &h.mr),
            _ => (&self.buf, &self.mr),
        }
    }

    fn endpoint(&self) -> Endpoint {
        Endpoint {
            lid: self.port_info.lid,
            gid: format_gid(&self.gid),
            gid_index: self.gid_index,
            ethernet: self.port_info.is_ethernet(),
            mtu: self.mtu,
            qps: self
                .qps
                .iter()
                .zip(&self.psns)
                .map(|(q, psn)| QpEndpoint {
                    qpn: q.qp_num(),
                    psn: *psn,
                })
                .collect(),
            addr: self.mr.addr,
            rkey: self.mr.rkey(),
            len: self.buf.len as u64,
        }
    }

    fn connect(&mut self, remote: &Endpoint) -> Result<(), VerbsError> {
        if remote.qps.len() != self.qps.len() {
            return Err(VerbsError::Control(format!(
                "peer has {} QPs, this end {}",
                remote.qps.len(),
                self.qps.len()
            )));
        }
        let gid = parse_gid(&remote.gid)
            .ok_or_else(|| VerbsError::Control(format!("peer sent a bad GID `{}`", remote.gid)))?;
        self.mtu = self.mtu.min(remote.mtu);
        let mtu = mtu_bytes_to_enum(self.mtu).unwrap_or(3);
        let use_grh = self.port_info.is_ethernet() || remote.ethernet;
        for ((qp, psn), r) in self.qps.iter().zip(&self.psns).zip(&remote.qps) {
            let path = PathParams {
                port: self.port,
                gid_index: u8::try_from(self.gid_index).unwrap_or(0),
                use_grh,
                mtu,
                psn: *psn,
                timeout: 14,
                retry_cnt: 7,
            };
            let rq = RemoteQp {
                qpn: r.qpn,
                psn: r.psn,
                lid: remote.lid,
                gid,
            };
            qp.connect(&path, &rq, self.access)?;
        }
        Ok(())
    }

    fn dst_offset(&self, slot: u64) -> u64 {
        self.max_size * (1 + slot)
    }

    /// Tops every QP up to `rx_depth` posted receives, each a whole slot of `max_size`.
    fn post_receives(&mut self) -> Result<(), VerbsError> {
        for q in 0..self.qps.len() {
            while self.rx_posted[q] < self.rx_depth {
                let slot = self.rx_next_slot % RX_SLOTS.min(self.buf_slots());
                self.rx_next_slot += 1;
                self.post_recv_slot(q, slot)?;
            }
        }
        Ok(())
    }

    fn buf_slots(&self) -> u64 {
        (self.buf.len as u64 / self.max_size)
            .saturating_sub(1)
            .max(1)
    }

    fn post_recv_slot(&mut self, q: usize, slot: u64) -> Result<(), VerbsError> {
        let mut sge = ibv_sge {
            addr: self.mr.addr + self.dst_offset(slot),
            length: u32::try_from(self.max_size).unwrap_or(u32::MAX),
            lkey: self.mr.lkey(),
        };
        let mut wr = ibv_recv_wr {
            wr_id: ((q as u64) << 32) | slot,
            next: std::ptr::null_mut(),
            sg_list: &mut sge,
            num_sge: 1,
        };
        // SAFETY: the SGE names the dst slot inside our live MR.
        unsafe { self.qps[q].post_recv(&mut wr)? };
        self.rx_posted[q] += 1;
        Ok(())
    }

    /// Posts one send-queue WR of `bytes` on QP `q`.
    fn post(
        &mut self,
        q: usize,
        op: Op,
        bytes: u64,
        remote: &Endpoint,
        signaled: bool,
        wr_id: u64,
    ) -> Result<(), VerbsError> {
        let (local_off, remote_off, opcode) = match op {
            Op::Write => (0, self.max_size, IBV_WR_RDMA_WRITE),
            Op::Send => (0, 0, IBV_WR_SEND),
            Op::Read => (self.max_size, 0, IBV_WR_RDMA_READ),
        };
        let (lbuf, lmr) = self.local();
        let mut sge = ibv_sge {
            addr: lmr.addr + local_off,
            length: bytes as u32,
            lkey: lmr.lkey(),
        };
        let mut flags = if signaled { IBV_SEND_SIGNALED } else { 0 };
        if op != Op::Read && bytes <= u64::from(self.inline_cap) && lbuf.kind == MemKind::Host {
            flags |= IBV_SEND_INLINE;
        }
        let mut wr = ibv_send_wr {
            wr_id,
            sg_list: &mut sge,
            num_sge: 1,
            opcode,
            send_flags: flags,
            ..Default::default()
        };
        wr.rdma.remote_addr = remote.addr + remote_off;
        wr.rdma.rkey = remote.rkey;
        // SAFETY: the SGE lies inside our live MR; the remote range lies inside the peer's MR
        // (both ends size their buffers from the same max message size).
        unsafe { self.qps[q].post_send(&mut wr) }
    }
}

fn register(
    pd: &Arc<Pd>,
    buf: &Buffer,
    access: i32,
    notes: &mut Vec<String>,
) -> Result<(Mr, Registration), VerbsError> {
    match buf.kind {
        MemKind::Host | MemKind::Managed => {
            // SAFETY: buf outlives the MR (Resources drops mr before buf).
            let mr = unsafe { Mr::register(pd.clone(), buf.as_mut_ptr(), buf.len, access)? };
            notes.push("registration: ibv_reg_mr (host range)".into());
            Ok((mr, Registration::Host))
        }
        MemKind::Cuda => {
            let dmabuf_err = match buf.cuda().and_then(|c| c.dmabuf_fd(buf.addr(), buf.len)) {
                Some(fd) if pd.context().verbs().has_dmabuf() => {
                    match Mr::register_dmabuf(pd.clone(), fd, 0, buf.len, buf.addr(), access) {
                        Ok(mr) => {
                            notes.push("registration: ibv_reg_dmabuf_mr (dma-buf)".into());
                            return Ok((mr, Registration::DmaBuf));
                        }
                        Err(e) => e.to_string(),
                    }
                }
                Some(_) => "libibverbs lacks ibv_reg_dmabuf_mr".to_string(),
                None => "the CUDA driver cannot export this memory as a dma-buf".to_string(),
            };
            // SAFETY: as above; with nvidia_peermem loaded the kernel pins GPU pages.
            match unsafe { Mr::register(pd.clone(), buf.as_mut_ptr(), buf.len, access) } {
                Ok(mr) => {
                    notes.push(format!(
                        "registration: ibv_reg_mr via nvidia_peermem (dma-buf: {dmabuf_err})"
                    ));
                    Ok((mr, Registration::PeerMem))
                }
                Err(e) => Err(VerbsError::Cuda(format!(
                    "cannot register GPU memory: dma-buf: {dmabuf_err}; ibv_reg_mr: {e} \
                     (load nvidia_peermem, or use a kernel ≥ 5.12 with the open GPU driver \
                     for dma-buf)"
                ))),
            }
        }
    }
}

/// Empty polls of a completion queue between two looks at the clock, the peer and the scheduler.
const POLLS_PER_CHECK: u32 = 1024;
/// The same for a spin on a byte of memory, which costs far less per round.
const READS_PER_CHECK: u32 = 16384;

/// The bookkeeping of a busy wait. Every `every` empty rounds it reads the clock (timeout), looks
/// at the peer's control connection and yields the CPU; never before, so that a wait that ends
/// within a round trip makes no system call at all, as perftest's busy polls make none. (In a VM
/// on the `hpet` clocksource every clock read is a system call plus an emulated device read,
/// several µs: one per wait was a measurable part of a 12 µs round trip.) Yielding now and then
/// matters when both ends share a CPU (oversubscribed hosts, VMs): a spinning waiter would
/// otherwise hold it until the next scheduler tick while the peer it waits for cannot run.
struct Spin {
    rounds: u32,
    every: u32,
    start: Option<Instant>,
}

impl Spin {
    fn new(every: u32) -> Self {
        Spin {
            rounds: 0,
            every: every.max(1),
            start: None,
        }
    }

    /// After an empty round: errs when `timeout` has passed (counted from the first check, one
    /// check interval late at most) or the peer is gone.
    fn idle(
        &mut self,
        timeout: Duration,
        what: &str,
        watch: Option<&PeerWatch>,
    ) -> Result<(), VerbsError> {
        self.rounds = self.rounds.wrapping_add(1);
        if self.rounds % self.every == 0 {
            let now = Instant::now();
            let start = *self.start.get_or_insert(now);
            if now.duration_since(start) > timeout {
                return Err(VerbsError::Timeout {
                    what: what.to_string(),
                    secs: timeout.as_secs_f64(),
                });
            }
            if let Some(w) = watch {
                w.check(now, what)?;
            }
            std::thread::yield_now();
        }
        std::hint::spin_loop();
        Ok(())
    }
}

/// Polls `cq` until at least one completion or `timeout` passes with none.
fn poll_some(
    cq: &Cq,
    wcs: &mut [ibv_wc],
    timeout: Duration,
    what: &str,
    watch: Option<&PeerWatch>,
) -> Result<usize, VerbsError> {
    let mut spin = Spin::new(POLLS_PER_CHECK);
    loop {
        let n = cq.poll(wcs)?;
        if n > 0 {
            return Ok(n);
        }
        spin.idle(timeout, what, watch)?;
    }
}

fn check_wc(verbs: &Verbs, wc: &ibv_wc, op: &str) -> Result<(), VerbsError> {
    if wc.status == IBV_WC_SUCCESS {
        return Ok(());
    }
    Err(VerbsError::Completion {
        op: op.to_string(),
        qp_num: wc.qp_num,
        status: wc.status,
        status_str: verbs.wc_status_str(wc.status),
        vendor_err: wc.vendor_err,
    })
}

fn secs(start: Instant) -> f64 {
    start.elapsed().as_secs_f64()
}

fn expect_ctrl(ch: &mut Channel) -> Result<Ctrl, VerbsError> {
    let m: Ctrl = ch.recv().map_err(|e| VerbsError::Control(e.to_string()))?;
    if let Ctrl::Error { message } = &m {
        return Err(VerbsError::Control(format!("the peer failed: {message}")));
    }
    Ok(m)
}

fn send_ctrl(ch: &mut Channel, m: &Ctrl) -> Result<(), VerbsError> {
    ch.send(m).map_err(|e| VerbsError::Control(e.to_string()))
}

/// What to return when a data phase failed: the peer's own report when it interrupted with one,
/// else `e`, told to the peer (which may still be there to hear it).
fn report_failure(ch: &mut Channel, e: VerbsError) -> VerbsError {
    if matches!(e, VerbsError::PeerSpoke) {
        return match expect_ctrl(ch) {
            Err(peer) => peer,
            Ok(m) => unexpected(&m, "nothing during the data phase"),
        };
    }
    if !matches!(e, VerbsError::PeerGone { .. }) {
        let _ = ch.send(&Ctrl::Error {
            message: e.to_string(),
        });
    }
    e
}

fn unexpected(m: &Ctrl, want: &str) -> VerbsError {
    VerbsError::Control(format!("expected `{want}`, got {m:?}"))
}

/// Bandwidth, sending side: `iterations` WRs round-robin over the QPs, at most `tx_depth` in
/// flight per QP, one signaled every `cq_mod`.
fn bw_sender(
    res: &mut Resources,
    p: &TestParams,
    remote: &Endpoint,
    bytes: u64,
    timeout: Duration,
) -> Result<fabrik_model::BwRow, VerbsError> {
    let n = p.iterations as usize;
    let nq = res.qps.len();
    let depth = p.tx_depth as usize;
    let cq_mod = p.cq_mod as usize;
    let mut posted_at = Vec::with_capacity(n);
    let mut completed_at = Vec::with_capacity(n);
    let mut outstanding = vec![0usize; nq];
    let mut since_signal = vec![0usize; nq];
    let (mut posted, mut completed) = (0usize, 0usize);
    let mut wcs = [ibv_wc::default(); 16];
    let verbs = res.ctx.verbs.clone();
    let start = Instant::now();
    let mut last_progress = Instant::now();
    let mut idle_spins = 0u32;
    while completed < n {
        while posted < n {
            let q = posted % nq;
            if outstanding[q] >= depth {
                break;
            }
            since_signal[q] += 1;
            let signaled = since_signal[q] >= cq_mod || posted + nq >= n;
            let wr_id = ((q as u64) << 32) | since_signal[q] as u64;
            // Stamped before posting, as perftest does: on software providers (rxe) the post
            // itself can run the whole transfer.
            posted_at.push(secs(start));
            res.post(q, p.op, bytes, remote, signaled, wr_id)?;
            outstanding[q] += 1;
            posted += 1;
            if signaled {
                since_signal[q] = 0;
            }
        }
        let got = res.send_cq.poll(&mut wcs)?;
        if got == 0 {
            // Reading the clock on every empty poll costs more than the poll where the guest
            // clocksource is emulated; look every 1024.
            idle_spins = idle_spins.wrapping_add(1);
            if idle_spins % 1024 == 0 {
                std::thread::yield_now();
            }
            if idle_spins % 1024 == 0 {
                let now = Instant::now();
                if now.duration_since(last_progress) > timeout {
                    return Err(VerbsError::Timeout {
                        what: format!("{} completions ({completed} of {n} done)", p.op.as_str()),
                        secs: timeout.as_secs_f64(),
                    });
                }
                if let Some(w) = &res.watch {
                    w.check(now, "completions")?;
                }
            }
            std::hint::spin_loop();
            continue;
        }
        let t = secs(start);
        last_progress = Instant::now();
        for wc in &wcs[..got] {
            check_wc(&verbs, wc, p.op.as_str())?;
            let q = (wc.wr_id >> 32) as usize;
            let covered = (wc.wr_id & 0xffff_ffff) as usize;
            if q >= nq {
                return Err(VerbsError::Control(format!(
                    "stray completion wr_id {:#x}",
                    wc.wr_id
                )));
            }
            outstanding[q] = outstanding[q].saturating_sub(covered);
            completed += covered;
            completed_at.extend(std::iter::repeat_n(t, covered));
        }
    }
    completed_at.truncate(n);
    bw_row(bytes, &posted_at, &completed_at)
        .ok_or_else(|| VerbsError::Control("no time elapsed: too few iterations".into()))
}

/// Send bandwidth, receiving side: reap `iterations` receives, reposting each slot, checking
/// payloads when asked. Returns the number of mismatching bytes.
fn bw_receiver(
    res: &mut Resources,
    p: &TestParams,
    bytes: u64,
    timeout: Duration,
) -> Result<u64, VerbsError> {
    let mut wcs = [ibv_wc::default(); 16];
    let verbs = res.ctx.verbs.clone();
    let mut received = 0u64;
    let mut mismatches = 0u64;
    let expected = pattern(bytes);
    while received < p.iterations {
        let got = poll_some(
            &res.recv_cq,
            &mut wcs,
            timeout,
            "send data from the peer",
            res.watch.as_ref(),
        )?;
        for wc in &wcs[..got] {
            check_wc(&verbs, wc, "receive")?;
            let q = (wc.wr_id >> 32) as usize;
            let slot = wc.wr_id & 0xffff_ffff;
            if q >= res.qps.len() {
                return Err(VerbsError::Control(format!(
                    "stray receive wr_id {:#x}",
                    wc.wr_id
                )));
            }
            res.rx_posted[q] = res.rx_posted[q].saturating_sub(1);
            if u64::from(wc.byte_len) != bytes {
                mismatches += bytes.abs_diff(u64::from(wc.byte_len));
            } else if p.verify {
                mismatches += res
                    .buf
                    .mismatches(res.dst_offset(slot) as usize, &expected)?;
            }
            res.post_recv_slot(q, slot)?;
            received += 1;
        }
    }
    Ok(mismatches)
}

/// Waits for one receive on QP 0 and reposts its slot.
fn recv_one(res: &mut Resources, bytes: u64, timeout: Duration) -> Result<(), VerbsError> {
    let mut wcs = [ibv_wc::default(); 1];
    poll_some(
        &res.recv_cq,
        &mut wcs,
        timeout,
        "a ping from the peer",
        res.watch.as_ref(),
    )?;
    check_wc(&res.ctx.verbs, &wcs[0], "receive")?;
    if u64::from(wcs[0].byte_len) != bytes {
        return Err(VerbsError::Control(format!(
            "received {} bytes, expected {bytes}",
            wcs[0].byte_len
        )));
    }
    res.rx_posted[0] = res.rx_posted[0].saturating_sub(1);
    res.post_recv_slot(0, wcs[0].wr_id & 0xffff_ffff)
}

/// Reaps send completions; blocks only while `outstanding` is at `limit`.
fn reap_sends(
    res: &mut Resources,
    outstanding: &mut usize,
    limit: usize,
    timeout: Duration,
    op: &str,
) -> Result<(), VerbsError> {
    // Latency loops have one send in flight at a time; a one-entry array and a borrowed
    // `Verbs` keep the per-message work (an Arc count, a 768-byte clear) out of the timed
    // round trip, which matters under qemu's TCG where every instruction is emulated.
    let mut wcs = [ibv_wc::default(); 1];
    let verbs: &Verbs = &res.ctx.verbs;
    loop {
        let got = if *outstanding >= limit {
            poll_some(
                &res.send_cq,
                &mut wcs,
                timeout,
                "send completions",
                res.watch.as_ref(),
            )?
        } else {
            res.send_cq.poll(&mut wcs)?
        };
        for wc in &wcs[..got] {
            check_wc(verbs, wc, op)?;
            *outstanding = outstanding.saturating_sub(1);
        }
        if got == 0 || *outstanding == 0 {
            return Ok(());
        }
    }
}

/// Spins until the last byte of the message in the dst region reads `marker`.
fn wait_marker(
    res: &Resources,
    bytes: u64,
    marker: u8,
    timeout: Duration,
) -> Result<(), VerbsError> {
    let off = (res.max_size + bytes - 1) as usize;
    let mut spin = Spin::new(READS_PER_CHECK);
    loop {
        if res.buf.read_volatile_byte(off) == Some(marker) {
            return Ok(());
        }
        spin.idle(timeout, "the peer's RDMA write", res.watch.as_ref())?;
    }
}

fn marker(i: u64) -> u8 {
    (i % 250 + 1) as u8
}

/// Waits for the peer's `i`-th ping-pong message: a receive completion (send) or the marker of
/// message `i` landing in the destination region (write).
fn wait_ping(
    res: &mut Resources,
    op: Op,
    bytes: u64,
    i: u64,
    timeout: Duration,
) -> Result<(), VerbsError> {
    match op {
        Op::Send => recv_one(res, bytes, timeout),
        Op::Write => wait_marker(res, bytes, marker(i), timeout),
        Op::Read => Ok(()),
    }
}

/// Latency ping-pong as perftest's `run_iter_lat_send` / `run_iter_lat_write` / `run_iter_lat`
/// run it; `initiator` is the client. Each end: wait for the peer's message (the client skips
/// this before its first), stamp the cycle counter, post, and when the post is signaled (every
/// `cq_mod`-th, every one at perftest's latency default of tx depth 1) spin on its send
/// completion. Samples are the intervals between consecutive stamps, halved for send and write
/// (a round trip is two one-way trips), whole for read: perftest's `tposted[i+1] - tposted[i]`.
/// Returns the one-way times (µs) and the measured counter rate (ticks/µs) on the client.
fn lat_loop(
    res: &mut Resources,
    p: &TestParams,
    remote: &Endpoint,
    bytes: u64,
    initiator: bool,
    timeout: Duration,
) -> Result<(Vec<f64>, Option<f64>), VerbsError> {
    let n = p.iterations;
    if p.op == Op::Read && !initiator {
        return Ok((Vec::new(), None));
    }
    let mut outstanding = 0usize;
    let op = p.op.as_str();
    let src_last = (bytes - 1) as usize;
    let cq_mod = u64::from(p.cq_mod.max(1));
    let clock = Ticker::start();
    let mut stamps: Vec<u64> = Vec::with_capacity(if initiator {
        n.min(1 << 20) as usize
    } else {
        0
    });
    for i in 0..n {
        // The client's message i answers the server's i-1; the server's i answers the client's i.
        if initiator && i > 0 {
            wait_ping(res, p.op, bytes, i - 1, timeout)?;
        } else if !initiator {
            wait_ping(res, p.op, bytes, i, timeout)?;
        }
        let signaled = p.op == Op::Read || (i + 1) % cq_mod == 0 || i + 1 == n;
        if initiator {
            stamps.push(clock.now());
        }
        if p.op == Op::Write {
            res.buf.write(src_last, &[marker(i)])?;
        }
        res.post(0, p.op, bytes, remote, signaled, 1)?;
        if signaled {
            outstanding += 1;
            if !initiator && i + 1 == n {
                // The client may already have answered this last message with `done` on the
                // control connection, which the watch would take for an interruption.
                let watch = res.watch.take();
                let reaped = reap_sends(res, &mut outstanding, 1, timeout, op);
                res.watch = watch;
                reaped?;
            } else {
                reap_sends(res, &mut outstanding, 1, timeout, op)?;
            }
        }
    }
    if initiator && n > 0 {
        // The answer to the last message, so that both ends end in step.
        wait_ping(res, p.op, bytes, n - 1, timeout)?;
    }
    if stamps.len() < 2 {
        return Ok((Vec::new(), None));
    }
    let rate = clock
        .ticks_per_us()
        .ok_or_else(|| VerbsError::Control("the cycle counter did not advance".into()))?;
    let factor = if p.op == Op::Read { 1.0 } else { 2.0 };
    let samples = stamps
        .windows(2)
        .map(|w| w[1].wrapping_sub(w[0]) as f64 / rate / factor)
        .collect();
    Ok((samples, Some(rate)))
}

/// Fills the source region with the pattern of `bytes` and clears the destination message.
fn prepare_buffers(res: &Resources, bytes: u64) -> Result<(), VerbsError> {
    let (buf, _) = res.local();
    buf.write(0, &pattern(bytes))?;
    buf.write(res.max_size as usize, &vec![0u8; bytes as usize])
}

/// Mismatching bytes of the message in the dst region; for write latency the last byte is the
/// ping-pong marker, so it is left out.
fn check_dst(res: &Resources, p: &TestParams, bytes: u64) -> Result<u64, VerbsError> {
    let len = if p.op == Op::Write && p.test == P2pTest::Lat {
        bytes - 1
    } else {
        bytes
    };
    res.local()
        .0
        .mismatches(res.max_size as usize, &pattern(bytes)[..len as usize])
}

fn validate_for_memory(p: &TestParams, mem: MemKind) -> Result<(), VerbsError> {
    if mem != MemKind::Host && p.op == Op::Write && p.test == P2pTest::Lat {
        return Err(VerbsError::Unsupported(
            "write latency polls the buffer from the CPU, so it needs --mem host; use --op send \
             for GPU-memory latency"
                .into(),
        ));
    }
    Ok(())
}

/// What one pass over the sizes measured.
#[derive(Default)]
struct Pass {
    bw_rows: Vec<fabrik_model::BwRow>,
    lat_rows: Vec<fabrik_model::LatRow>,
    verified: usize,
    tick_rate: Option<f64>,
}

/// Runs every size once, driving the server through Start/Ready/Done/Verified.
fn run_sizes(
    res: &mut Resources,
    ch: &mut Channel,
    params: &TestParams,
    remote: &Endpoint,
    timeout: Duration,
) -> Result<Pass, VerbsError> {
    let mut pass = Pass::default();
    for &bytes in &params.sizes {
        prepare_buffers(res, bytes)?;
        if params.op == Op::Send {
            res.post_receives()?;
        }
        send_ctrl(ch, &Ctrl::Start { bytes })?;
        match expect_ctrl(ch)? {
            Ctrl::Ready => {}
            m => return Err(unexpected(&m, "ready")),
        }
        let result = match params.test {
            P2pTest::Bw => {
                bw_sender(res, params, remote, bytes, timeout).map(|r| pass.bw_rows.push(r))
            }
            P2pTest::Lat => {
                lat_loop(res, params, remote, bytes, true, timeout).and_then(|(s, rate)| {
                    pass.lat_rows
                        .push(lat_row(bytes, params.iterations, &s).ok_or_else(|| {
                            VerbsError::Control(
                                "no samples: latency needs 2 or more iterations".into(),
                            )
                        })?);
                    pass.tick_rate = rate.or(pass.tick_rate);
                    Ok(())
                })
            }
        };
        if let Err(e) = result {
            return Err(report_failure(ch, e));
        }
        send_ctrl(ch, &Ctrl::Done { bytes })?;
        let remote_bad = match expect_ctrl(ch)? {
            Ctrl::Verified {
                mismatches,
                checked,
                ..
            } => {
                if checked {
                    pass.verified += 1;
                }
                mismatches
            }
            m => return Err(unexpected(&m, "verified")),
        };
        let mut local_bad = 0;
        let client_checks =
            params.op == Op::Read || (params.test == P2pTest::Lat && params.op != Op::Read);
        if params.verify && client_checks {
            local_bad = check_dst(res, params, bytes)?;
            pass.verified += 1;
        }
        if remote_bad + local_bad > 0 {
            let _ = ch.send(&Ctrl::Bye);
            return Err(VerbsError::Control(format!(
                "payload check failed at {bytes} bytes: {local_bad} bytes differ here, \
                 {remote_bad} at the peer{}",
                if res.use_host_ref {
                    " (host-memory reference pass)"
                } else {
                    ""
                }
            )));
        }
    }
    Ok(pass)
}

/// Runs the test as the client over an authenticated channel and returns the report.
pub fn run_client(
    verbs: &Arc<Verbs>,
    ch: &mut Channel,
    opts: &LocalOptions,
    params: &TestParams,
) -> Result<P2pReport, VerbsError> {
    params.validate().map_err(VerbsError::Unsupported)?;
    validate_for_memory(params, opts.mem)?;
    let mut res = Resources::new(verbs, opts, params)?;
    // GPU memory is compared with host memory on this same link: a host buffer of the same
    // size, registered the same way, used by the same QPs against the same peer buffer.
    let want_ref = opts.mem != MemKind::Host && opts.host_reference && params.test == P2pTest::Bw;
    if want_ref {
        res.add_host_reference()?;
    }
    send_ctrl(
        ch,
        &Ctrl::Hello {
            version: PROTOCOL_VERSION,
            params: params.clone(),
            endpoint: res.endpoint(),
        },
    )?;
    let remote = match expect_ctrl(ch)? {
        Ctrl::Welcome { endpoint } => endpoint,
        m => return Err(unexpected(&m, "welcome")),
    };
    res.connect(&remote)?;
    res.watch = PeerWatch::new(ch.stream());
    if params.op == Op::Send {
        res.post_receives()?;
    }
    let main = run_sizes(&mut res, ch, params, &remote, opts.timeout)?;
    let host_ref = if want_ref {
        res.use_host_ref = true;
        let r = run_sizes(&mut res, ch, params, &remote, opts.timeout)?;
        res.use_host_ref = false;
        Some(r)
    } else {
        None
    };
    send_ctrl(ch, &Ctrl::Bye)?;
    let mut notes = res.notes.clone();
    notes.push(format!(
        "tx depth: {}, cq-mod: {}",
        params.tx_depth, params.cq_mod
    ));
    notes.push(format!("inline: {}", res.inline_cap));
    if let Some(rate) = main.tick_rate {
        // perftest converts with /proc/cpuinfo's MHz; this says what fabrik measured, so that
        // the two can be compared in cycles too.
        notes.push(format!(
            "cycle counter: {rate:.2} ticks/usec, measured over the run"
        ));
    }
    let verified = main.verified + host_ref.as_ref().map_or(0, |r| r.verified);
    if params.verify {
        notes.push(format!(
            "verify: payloads checked, {verified} checks passed"
        ));
    }
    let host_rows = host_ref.map(|r| r.bw_rows).unwrap_or_default();
    let ratio = gpuref::ratio_to_host(&main.bw_rows, &host_rows);
    let warning = ratio.and_then(|r| {
        gpuref::warning(
            opts.mem,
            res.registration,
            opts.relaxed_ordering,
            r,
            opts.warn_below,
        )
    });
    if opts.mem != MemKind::Host && !want_ref {
        notes.push(
            if params.test == P2pTest::Lat {
                "host-memory reference: bandwidth tests only"
            } else {
                "host-memory reference: off"
            }
            .into(),
        );
    }
    let memory = fabrik_model::P2pMemory {
        kind: opts.mem.as_str().into(),
        registration: res.registration.as_str().into(),
        access_flags: access_names(res.access)
            .split('|')
            .map(String::from)
            .collect(),
        relaxed_ordering: opts.relaxed_ordering,
        host_reference: host_rows,
        ratio_to_host: ratio,
        warn_below: want_ref.then_some(opts.warn_below),
        warning,
    };
    Ok(P2pReport {
        schema_version: SCHEMA_VERSION,
        source: ResultSource::Fabrik,
        test: params.test,
        transport: "rdma".into(),
        op: Some(params.op.as_str().into()),
        streams: params.qps,
        interfaces: vec![res.ctx.name.clone()],
        device: Some(format!("{}:{}", res.ctx.name, res.port)),
        link_type: Some(
            if res.port_info.is_ethernet() {
                "Ethernet"
            } else {
                "IB"
            }
            .into(),
        ),
        mtu: Some(res.mtu),
        gid_index: Some(res.gid_index),
        results: match params.test {
            P2pTest::Bw => P2pRows::Bw(main.bw_rows),
            P2pTest::Lat => P2pRows::Lat(main.lat_rows),
        },
        per_stream: vec![],
        notes,
        memory: Some(memory),
    })
}

/// Serves one client over an authenticated channel until it says `bye`.
pub fn serve(verbs: &Arc<Verbs>, ch: &mut Channel, opts: &LocalOptions) -> Result<(), VerbsError> {
    let (params, remote) = match expect_ctrl(ch)? {
        Ctrl::Hello {
            version,
            params,
            endpoint,
        } => {
            if version != PROTOCOL_VERSION {
                let msg =
                    format!("protocol version {version}, this server speaks {PROTOCOL_VERSION}");
                let _ = ch.send(&Ctrl::Error {
                    message: msg.clone(),
                });
                return Err(VerbsError::Control(msg));
            }
            (params, endpoint)
        }
        m => return Err(unexpected(&m, "hello")),
    };
    serve_inner(verbs, ch, opts, &params, &remote).map_err(|e| report_failure(ch, e))
}

fn serve_inner(
    verbs: &Arc<Verbs>,
    ch: &mut Channel,
    opts: &LocalOptions,
    params: &TestParams,
    remote: &Endpoint,
) -> Result<(), VerbsError> {
    params.validate().map_err(VerbsError::Unsupported)?;
    validate_for_memory(params, opts.mem)?;
    let mut res = Resources::new(verbs, opts, params)?;
    res.connect(remote)?;
    res.watch = PeerWatch::new(ch.stream());
    if params.op == Op::Send {
        res.post_receives()?;
    }
    send_ctrl(
        ch,
        &Ctrl::Welcome {
            endpoint: res.endpoint(),
        },
    )?;
    loop {
        let bytes = match expect_ctrl(ch)? {
            Ctrl::Start { bytes } if params.sizes.contains(&bytes) => bytes,
            Ctrl::Bye => return Ok(()),
            m => return Err(unexpected(&m, "start or bye")),
        };
        prepare_buffers(&res, bytes)?;
        if params.op == Op::Send {
            res.post_receives()?;
        }
        send_ctrl(ch, &Ctrl::Ready)?;
        let mut mismatches = 0;
        let mut checked = false;
        match (params.test, params.op) {
            (P2pTest::Bw, Op::Send) => {
                mismatches = bw_receiver(&mut res, params, bytes, opts.timeout)?;
                checked = params.verify;
            }
            (P2pTest::Lat, Op::Send | Op::Write) => {
                lat_loop(&mut res, params, remote, bytes, false, opts.timeout)?;
            }
            _ => {}
        }
        match expect_ctrl(ch)? {
            Ctrl::Done { bytes: b } if b == bytes => {}
            m => return Err(unexpected(&m, "done")),
        }
        let server_checks =
            params.op != Op::Read && !(params.test == P2pTest::Bw && params.op == Op::Send);
        if params.verify && server_checks {
            mismatches = check_dst(&res, params, bytes)?;
            checked = true;
        }
        send_ctrl(
            ch,
            &Ctrl::Verified {
                bytes,
                checked,
                mismatches,
            },
        )?;
    }
}

/// Whether this node has an RDMA device with an ACTIVE port (for `--transport auto`).
pub fn usable_device(verbs: &Arc<Verbs>) -> Option<String> {
    let names = device_names(verbs).ok()?;
    names.into_iter().find(|n| {
        Context::open(verbs.clone(), Some(n))
            .and_then(|c| c.query_port(1))
            .map(|p| p.state == IBV_PORT_ACTIVE)
            .unwrap_or(false)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn spin_looks_at_the_clock_only_every_n_rounds() {
        // A zero timeout cannot fire before the first check: no clock is read before it.
        let mut s = Spin::new(1000);
        for _ in 0..999 {
            s.idle(Duration::ZERO, "x", None).unwrap();
        }
        // The first check starts the clock; a later one sees the timeout.
        s.idle(Duration::ZERO, "x", None).unwrap();
        std::thread::sleep(Duration::from_millis(2));
        let e = (0..1000)
            .find_map(|_| s.idle(Duration::ZERO, "the ping", None).err())
            .unwrap()
            .to_string();
        assert!(e.contains("timed out") && e.contains("the ping"), "{e}");
    }

    #[test]
    fn spin_reports_a_closed_peer() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let a = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        let w = PeerWatch::new(&b).unwrap();
        drop(a);
        std::thread::sleep(crate::watch::WATCH_EVERY + Duration::from_millis(20));
        let mut s = Spin::new(1);
        let e = s
            .idle(Duration::from_secs(60), "send completions", Some(&w))
            .unwrap_err();
        assert!(matches!(e, VerbsError::PeerGone { .. }), "{e}");
    }

    #[test]
    fn gpu_memory_write_latency_is_refused_up_front() {
        let p = TestParams {
            op: Op::Write,
            test: P2pTest::Lat,
            sizes: vec![2],
            iterations: 10,
            tx_depth: 1,
            cq_mod: 1,
            qps: 1,
            inline_size: 0,
            verify: false,
        };
        assert!(validate_for_memory(&p, MemKind::Host).is_ok());
        let e = validate_for_memory(&p, MemKind::Cuda)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--op send"), "{e}");
    }
}
