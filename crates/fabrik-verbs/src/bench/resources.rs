//! What one end of a benchmark holds (device, memory and its registration, queue pairs) and the
//! work requests it posts.

use std::sync::Arc;

use fabrik_model::P2pTest;

use super::port::{open_port, LocalOptions, PortChoice};
use crate::device::{mtu_bytes_to_enum, Context, Cq, Mr, PathParams, Pd, PortInfo, Qp, RemoteQp};
use crate::error::VerbsError;
use crate::ffi::*;
use crate::gid::{format_gid, parse_gid};
use crate::gpuref::Registration;
use crate::loader::Verbs;
use crate::mem::{Buffer, Cuda, MemKind};
use crate::proto::{Endpoint, Op, QpEndpoint, TestParams};
use crate::watch::PeerWatch;

/// Receives posted ahead for send latency: perftest's `DEF_RX_SEND`.
pub(super) const LAT_RX_DEPTH: u32 = 512;

/// Receives posted per QP before a send-latency run, as perftest's `ib_send_lat` posts them:
/// `DEF_RX_SEND` (512), at most one per iteration. A receive is reposted inside the loop only
/// while a later message still needs it (`rcnt + rx_depth <= iters` in `run_iter_lat_send`), so
/// the last `rx_depth` round trips carry no repost. In a 1,000-trip run that is half of them, and
/// perftest's median falls among them; reposting on every message instead put one
/// `ibv_post_recv` per end into every sample of fabrik's and none into most of perftest's.
pub(super) fn lat_rx_depth(iterations: u64) -> u32 {
    u32::try_from(iterations)
        .unwrap_or(u32::MAX)
        .clamp(1, LAT_RX_DEPTH)
}

/// A registered host buffer; the MR drops before the memory under it.
pub(super) struct HostRegion {
    pub(super) mr: Mr,
    pub(super) buf: Buffer,
}

/// Receive slots for send bandwidth, cycled as perftest cycles its buffers.
pub(super) const RX_SLOTS: u64 = 16;

/// Everything one end holds. Fields drop in declaration order: QPs before the MR, the MR before
/// the memory under it, and the CQs/PD/context (behind Arcs) last.
pub(super) struct Resources {
    pub(super) qps: Vec<Qp>,
    pub(super) mr: Mr,
    /// A host buffer beside a GPU one, for the host-memory reference pass (client only).
    pub(super) host_ref: Option<HostRegion>,
    /// Whether the local side of posted WRs is `host_ref` rather than `mr`/`buf`.
    pub(super) use_host_ref: bool,
    pub(super) registration: Registration,
    pub(super) buf: Buffer,
    pub(super) send_cq: Arc<Cq>,
    pub(super) recv_cq: Arc<Cq>,
    pub(super) ctx: Arc<Context>,
    pub(super) port: u8,
    pub(super) port_info: PortInfo,
    pub(super) gid_index: u32,
    pub(super) gid: [u8; 16],
    pub(super) mtu: u32,
    pub(super) psns: Vec<u32>,
    pub(super) max_size: u64,
    pub(super) rx_depth: u32,
    pub(super) access: i32,
    pub(super) inline_cap: u32,
    pub(super) notes: Vec<String>,
    /// The control connection, looked at while the data moves (set once connected).
    pub(super) watch: Option<PeerWatch>,
    /// Receives posted and not yet completed, per QP.
    pub(super) rx_posted: Vec<u32>,
    pub(super) rx_next_slot: u64,
}

pub(super) fn access_names(access: i32) -> String {
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

pub(super) fn psn_seed(i: usize) -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    (t.wrapping_mul(2654435761).wrapping_add(i as u32 * 7919)) & 0xff_ffff
}

impl Resources {
    pub(super) fn new(
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
                lat_rx_depth(params.iterations)
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
    pub(super) fn add_host_reference(&mut self) -> Result<(), VerbsError> {
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
    pub(super) fn local(&self) -> (&Buffer, &Mr) {
        match &self.host_ref {
            Some(h) if self.use_host_ref => (&h.buf, &h.mr),
            _ => (&self.buf, &self.mr),
        }
    }

    pub(super) fn endpoint(&self) -> Endpoint {
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

    pub(super) fn connect(&mut self, remote: &Endpoint) -> Result<(), VerbsError> {
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

    pub(super) fn dst_offset(&self, slot: u64) -> u64 {
        self.max_size * (1 + slot)
    }

    /// Tops every QP up to `rx_depth` posted receives, each a whole slot of `max_size`.
    pub(super) fn post_receives(&mut self) -> Result<(), VerbsError> {
        for q in 0..self.qps.len() {
            while self.rx_posted[q] < self.rx_depth {
                let slot = self.rx_next_slot % RX_SLOTS.min(self.buf_slots());
                self.rx_next_slot += 1;
                self.post_recv_slot(q, slot)?;
            }
        }
        Ok(())
    }

    pub(super) fn buf_slots(&self) -> u64 {
        (self.buf.len as u64 / self.max_size)
            .saturating_sub(1)
            .max(1)
    }

    pub(super) fn post_recv_slot(&mut self, q: usize, slot: u64) -> Result<(), VerbsError> {
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
    pub(super) fn post(
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

pub(super) fn register(
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
