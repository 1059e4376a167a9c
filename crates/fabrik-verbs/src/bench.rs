//! RDMA point-to-point benchmarks over RC queue pairs: bandwidth (many WRs in flight, a
//! completion every `cq_mod`) and latency (ping-pong), for write, read and send, measured as
//! perftest's ib_*_bw / ib_*_lat measure them. The client drives; the server follows its lead over
//! the control channel.

use std::net::IpAddr;
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
use crate::gid::{format_gid, parse_gid, read_gid_table, select_gid};
use crate::loader::Verbs;
use crate::mem::{pattern, Buffer, Cuda, MemKind};
use crate::proto::{Ctrl, Endpoint, Op, QpEndpoint, TestParams, PROTOCOL_VERSION};
use crate::stats::{bw_row, lat_row};

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
            timeout: Duration::from_secs(30),
            root: PathBuf::from("/"),
        }
    }
}

/// Receive slots for send bandwidth, cycled as perftest cycles its buffers.
const RX_SLOTS: u64 = 16;

/// Everything one end holds. Fields drop in declaration order: QPs before the MR, the MR before
/// the memory under it, and the CQs/PD/context (behind Arcs) last.
struct Resources {
    qps: Vec<Qp>,
    mr: Mr,
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
        local_ip: Option<IpAddr>,
    ) -> Result<Self, VerbsError> {
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
            None => {
                let table = read_gid_table(&opts.root, &ctx.name, u32::from(opts.port));
                let ips: Vec<String> = local_ip
                    .filter(IpAddr::is_ipv4)
                    .map(|a| a.to_string())
                    .into_iter()
                    .collect();
                select_gid(&table, &ips).unwrap_or(0)
            }
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

        let pd = Pd::new(ctx.clone())?;
        let cuda = match opts.mem {
            MemKind::Host => None,
            MemKind::Cuda | MemKind::Managed => Some(Cuda::open(opts.cuda_device)?),
        };
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
        let mr = register(&pd, &buf, access, &mut notes)?;

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
            rx_posted: vec![0; n],
            rx_next_slot: 0,
        })
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
        let mut sge = ibv_sge {
            addr: self.mr.addr + local_off,
            length: bytes as u32,
            lkey: self.mr.lkey(),
        };
        let mut flags = if signaled { IBV_SEND_SIGNALED } else { 0 };
        if op != Op::Read && bytes <= u64::from(self.inline_cap) && self.buf.kind == MemKind::Host {
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
) -> Result<Mr, VerbsError> {
    match buf.kind {
        MemKind::Host | MemKind::Managed => {
            // SAFETY: buf outlives the MR (Resources drops mr before buf).
            let mr = unsafe { Mr::register(pd.clone(), buf.as_mut_ptr(), buf.len, access)? };
            notes.push("registration: ibv_reg_mr".into());
            Ok(mr)
        }
        MemKind::Cuda => {
            let dmabuf_err = match buf.cuda().and_then(|c| c.dmabuf_fd(buf.addr(), buf.len)) {
                Some(fd) if pd.context().verbs().has_dmabuf() => {
                    match Mr::register_dmabuf(pd.clone(), fd, 0, buf.len, buf.addr(), access) {
                        Ok(mr) => {
                            notes.push("registration: ibv_reg_dmabuf_mr (dma-buf)".into());
                            return Ok(mr);
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
                    Ok(mr)
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

/// Polls `cq` until at least one completion or `timeout` passes with none.
fn poll_some(
    cq: &Cq,
    wcs: &mut [ibv_wc],
    timeout: Duration,
    what: &str,
) -> Result<usize, VerbsError> {
    let start = Instant::now();
    let mut spins = 0u32;
    loop {
        let n = cq.poll(wcs)?;
        if n > 0 {
            return Ok(n);
        }
        spins = spins.wrapping_add(1);
        if spins % 256 == 0 {
            if start.elapsed() > timeout {
                return Err(VerbsError::Timeout {
                    what: what.to_string(),
                    secs: timeout.as_secs_f64(),
                });
            }
            // When both ends share a CPU (oversubscribed hosts, VMs), a spinning waiter would
            // hold it until the next tick while the peer it waits for cannot run; yielding now
            // and then costs nothing when the CPU is ours alone.
            std::thread::yield_now();
        }
        std::hint::spin_loop();
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
            if idle_spins % 1024 == 0 && last_progress.elapsed() > timeout {
                return Err(VerbsError::Timeout {
                    what: format!("{} completions ({completed} of {n} done)", p.op.as_str()),
                    secs: timeout.as_secs_f64(),
                });
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
        let got = poll_some(&res.recv_cq, &mut wcs, timeout, "send data from the peer")?;
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
    poll_some(&res.recv_cq, &mut wcs, timeout, "a ping from the peer")?;
    check_wc(&res.ctx.verbs.clone(), &wcs[0], "receive")?;
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
    let mut wcs = [ibv_wc::default(); 16];
    let verbs = res.ctx.verbs.clone();
    loop {
        let got = if *outstanding >= limit {
            poll_some(&res.send_cq, &mut wcs, timeout, "send completions")?
        } else {
            res.send_cq.poll(&mut wcs)?
        };
        for wc in &wcs[..got] {
            check_wc(&verbs, wc, op)?;
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
    let start = Instant::now();
    let mut spins = 0u32;
    loop {
        if res.buf.read_volatile_byte(off) == Some(marker) {
            return Ok(());
        }
        spins = spins.wrapping_add(1);
        if spins % 256 == 0 {
            if start.elapsed() > timeout {
                return Err(VerbsError::Timeout {
                    what: "the peer's RDMA write".into(),
                    secs: timeout.as_secs_f64(),
                });
            }
            // See poll_some.
            std::thread::yield_now();
        }
        std::hint::spin_loop();
    }
}

fn marker(i: u64) -> u8 {
    (i % 250 + 1) as u8
}

/// Latency ping-pong; `initiator` is the client. Returns one-way latencies (µs) on the client.
fn lat_loop(
    res: &mut Resources,
    p: &TestParams,
    remote: &Endpoint,
    bytes: u64,
    initiator: bool,
    timeout: Duration,
) -> Result<Vec<f64>, VerbsError> {
    let n = p.iterations;
    let mut samples = Vec::with_capacity(if initiator { n as usize } else { 0 });
    let mut outstanding = 0usize;
    let op = p.op.as_str();
    let src_last = (bytes - 1) as usize;
    let cq_mod = u64::from(p.cq_mod.max(1));
    let clock = Ticker::start();
    // Raw tick counts per sample: one-way (halved) for send/write, whole for read.
    let mut raw: Vec<(u64, bool)> = Vec::with_capacity(samples.capacity());
    for i in 0..n {
        // As perftest: only every cq_mod-th send is signaled (and then waited for), which keeps
        // the send queue from filling without a completion per round trip.
        let signaled = (i + 1) % cq_mod == 0 || i + 1 == n;
        match p.op {
            Op::Send => {
                if initiator {
                    let t0 = clock.now();
                    res.post(0, Op::Send, bytes, remote, signaled, 1)?;
                    recv_one(res, bytes, timeout)?;
                    raw.push((clock.now().wrapping_sub(t0), true));
                } else {
                    recv_one(res, bytes, timeout)?;
                    res.post(0, Op::Send, bytes, remote, signaled, 1)?;
                }
            }
            Op::Write => {
                let m = marker(i);
                if initiator {
                    let t0 = clock.now();
                    res.buf.write(src_last, &[m])?;
                    res.post(0, Op::Write, bytes, remote, signaled, 1)?;
                    wait_marker(res, bytes, m, timeout)?;
                    raw.push((clock.now().wrapping_sub(t0), true));
                } else {
                    wait_marker(res, bytes, m, timeout)?;
                    res.buf.write(src_last, &[m])?;
                    res.post(0, Op::Write, bytes, remote, signaled, 1)?;
                }
            }
            Op::Read => {
                if !initiator {
                    return Ok(samples);
                }
                let t0 = clock.now();
                res.post(0, Op::Read, bytes, remote, true, 1)?;
                outstanding += 1;
                reap_sends(res, &mut outstanding, 1, timeout, op)?;
                // perftest's ib_read_lat reports the whole round trip of a read.
                raw.push((clock.now().wrapping_sub(t0), false));
                continue;
            }
        }
        if signaled {
            outstanding += 1;
            reap_sends(res, &mut outstanding, 1, timeout, op)?;
        }
    }
    let start = Instant::now();
    while outstanding > 0 {
        reap_sends(res, &mut outstanding, 1, timeout, op)?;
        if start.elapsed() > timeout {
            break;
        }
    }
    if !raw.is_empty() {
        let rate = clock
            .ticks_per_us()
            .ok_or_else(|| VerbsError::Control("the cycle counter did not advance".into()))?;
        samples.extend(
            raw.iter()
                .map(|&(t, halve)| t as f64 / rate / if halve { 2.0 } else { 1.0 }),
        );
    }
    Ok(samples)
}

/// Fills the source region with the pattern of `bytes` and clears the destination message.
fn prepare_buffers(res: &Resources, bytes: u64) -> Result<(), VerbsError> {
    res.buf.write(0, &pattern(bytes))?;
    res.buf
        .write(res.max_size as usize, &vec![0u8; bytes as usize])
}

/// Mismatching bytes of the message in the dst region; for write latency the last byte is the
/// ping-pong marker, so it is left out.
fn check_dst(res: &Resources, p: &TestParams, bytes: u64) -> Result<u64, VerbsError> {
    let len = if p.op == Op::Write && p.test == P2pTest::Lat {
        bytes - 1
    } else {
        bytes
    };
    res.buf
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

/// Runs the test as the client over an authenticated channel and returns the report.
pub fn run_client(
    verbs: &Arc<Verbs>,
    ch: &mut Channel,
    opts: &LocalOptions,
    params: &TestParams,
) -> Result<P2pReport, VerbsError> {
    params.validate().map_err(VerbsError::Unsupported)?;
    validate_for_memory(params, opts.mem)?;
    let local_ip = ch.stream().local_addr().ok().map(|a| a.ip());
    let mut res = Resources::new(verbs, opts, params, local_ip)?;
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
    if params.op == Op::Send {
        res.post_receives()?;
    }
    let mut bw_rows = Vec::new();
    let mut lat_rows = Vec::new();
    let mut verified = 0usize;
    for &bytes in &params.sizes {
        prepare_buffers(&res, bytes)?;
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
                bw_sender(&mut res, params, &remote, bytes, opts.timeout).map(|r| bw_rows.push(r))
            }
            P2pTest::Lat => lat_loop(&mut res, params, &remote, bytes, true, opts.timeout)
                .and_then(|s| {
                    lat_rows.push(
                        lat_row(bytes, &s)
                            .ok_or_else(|| VerbsError::Control("no samples".into()))?,
                    );
                    Ok(())
                }),
        };
        if let Err(e) = result {
            let _ = ch.send(&Ctrl::Error {
                message: e.to_string(),
            });
            return Err(e);
        }
        send_ctrl(ch, &Ctrl::Done { bytes })?;
        let remote_bad = match expect_ctrl(ch)? {
            Ctrl::Verified {
                mismatches,
                checked,
                ..
            } => {
                if checked {
                    verified += 1;
                }
                mismatches
            }
            m => return Err(unexpected(&m, "verified")),
        };
        let mut local_bad = 0;
        let client_checks =
            params.op == Op::Read || (params.test == P2pTest::Lat && params.op != Op::Read);
        if params.verify && client_checks {
            local_bad = check_dst(&res, params, bytes)?;
            verified += 1;
        }
        if remote_bad + local_bad > 0 {
            let _ = ch.send(&Ctrl::Bye);
            return Err(VerbsError::Control(format!(
                "payload check failed at {bytes} bytes: {} bytes differ here, {remote_bad} at the \
                 peer",
                local_bad
            )));
        }
    }
    send_ctrl(ch, &Ctrl::Bye)?;
    let mut notes = res.notes.clone();
    notes.push(format!(
        "tx depth: {}, cq-mod: {}",
        params.tx_depth, params.cq_mod
    ));
    notes.push(format!("inline: {}", res.inline_cap));
    if params.verify {
        notes.push(format!(
            "verify: payloads checked, {verified} checks passed"
        ));
    }
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
            P2pTest::Bw => P2pRows::Bw(bw_rows),
            P2pTest::Lat => P2pRows::Lat(lat_rows),
        },
        per_stream: vec![],
        notes,
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
    let result = serve_inner(verbs, ch, opts, &params, &remote);
    if let Err(e) = &result {
        let _ = ch.send(&Ctrl::Error {
            message: e.to_string(),
        });
    }
    result
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
    let local_ip = ch.stream().local_addr().ok().map(|a| a.ip());
    let mut res = Resources::new(verbs, opts, params, local_ip)?;
    res.connect(remote)?;
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
