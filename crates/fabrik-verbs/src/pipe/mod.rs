//! A reliable, ordered byte pipe between two processes over one RC queue pair, for the
//! collectives' `rdma` backend.
//!
//! Data travels as SENDs of at most one chunk into receive slots the peer keeps posted; the
//! receiver hands slots back (credits) by RDMA-writing its running count of consumed slots into
//! a word of the sender's memory, so credits never take a receive away from the other
//! direction's data. Several chunks are in flight at once (one staging buffer each), so a large
//! transfer streams. Host memory only: bytes are copied into staging and out of the slots.
//!
//! One thread may send while another receives: each direction has its own lock and CQ; the
//! queue pair (posting) and the send CQ (reaped by whichever direction needs room) have their
//! own short-held locks. Every wait gives up after the configured timeout with an error naming
//! the peer and what was awaited.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::bench::{open_port, LocalOptions, PortChoice};
use crate::device::{mtu_bytes_to_enum, Context, Cq, Mr, PathParams, Pd, PortInfo, Qp, RemoteQp};
use crate::error::VerbsError;
use crate::ffi::*;
use crate::gid::format_gid;
use crate::loader::Verbs;
use crate::mem::{Buffer, MemKind};

mod credits;
mod setup;

pub use credits::*;
pub use setup::*;

/// Sizes of the pipe: `slots` receive slots (and as many staging buffers) of `chunk_bytes`.
#[derive(Debug, Clone)]
pub struct PipeConfig {
    /// Bytes per chunk: the largest message one send carries.
    pub chunk_bytes: usize,
    /// Receive slots each end keeps posted.
    pub slots: u32,
    /// Longest wait for any one completion, credit or set-up message.
    pub timeout: Duration,
}

impl Default for PipeConfig {
    fn default() -> Self {
        PipeConfig {
            chunk_bytes: 256 << 10,
            slots: 8,
            timeout: Duration::from_secs(30),
        }
    }
}

/// Smallest `chunk_bytes` accepted.
pub const MIN_CHUNK: usize = 4096;
/// Largest `chunk_bytes` accepted.
pub const MAX_CHUNK: usize = 64 << 20;
/// Most `slots` accepted.
pub const MAX_SLOTS: u32 = 256;

impl PipeConfig {
    /// Refuses a chunk size or slot count outside the bounds above.
    pub fn validate(&self) -> Result<(), VerbsError> {
        if !(MIN_CHUNK..=MAX_CHUNK).contains(&self.chunk_bytes) {
            return Err(VerbsError::Unsupported(format!(
                "pipe chunk of {} bytes outside {MIN_CHUNK}..={MAX_CHUNK}",
                self.chunk_bytes
            )));
        }
        if !(1..=MAX_SLOTS).contains(&self.slots) {
            return Err(VerbsError::Unsupported(format!(
                "pipe slots {} outside 1..={MAX_SLOTS}",
                self.slots
            )));
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// The device end shared by every pipe of a process

/// An opened device, port and GID, shared by all the pipes of one process.
pub struct PipeDevice {
    pd: Arc<Pd>,
    ctx: Arc<Context>,
    port: u8,
    port_info: PortInfo,
    gid_index: u32,
    gid: [u8; 16],
    mtu: u32,
}

impl std::fmt::Debug for PipeDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl PipeDevice {
    /// Opens the device, port, GID index and MTU of `opts` (the defaults of `bench p2p`: the
    /// first ACTIVE device, the GID NCCL would pick). Host memory only.
    pub fn open(verbs: &Arc<Verbs>, opts: &LocalOptions) -> Result<Arc<Self>, VerbsError> {
        if opts.mem != MemKind::Host {
            return Err(VerbsError::Unsupported(
                "the RDMA pipe of the collectives uses host memory only".into(),
            ));
        }
        let PortChoice {
            ctx,
            port_info,
            gid_index,
            gid,
            mtu,
        } = open_port(verbs, opts)?;
        let pd = Pd::new(ctx.clone())?;
        Ok(Arc::new(PipeDevice {
            pd,
            ctx,
            port: opts.port,
            port_info,
            gid_index,
            gid,
            mtu,
        }))
    }

    /// The RDMA device name.
    pub fn name(&self) -> &str {
        &self.ctx.name
    }
    /// The port, from 1.
    pub fn port(&self) -> u8 {
        self.port
    }
    /// The GID index in use.
    pub fn gid_index(&self) -> u32 {
        self.gid_index
    }
    /// The GID in use, as text.
    pub fn gid(&self) -> String {
        format_gid(&self.gid)
    }
    /// Active MTU in bytes.
    pub fn mtu(&self) -> u32 {
        self.mtu
    }
    /// Whether the link layer is Ethernet (RoCE).
    pub fn is_ethernet(&self) -> bool {
        self.port_info.is_ethernet()
    }
    /// `rxe0:1`, as `--device` takes it.
    pub fn device_port(&self) -> String {
        format!("{}:{}", self.ctx.name, self.port)
    }
    /// `device:port GID index N (gid), MTU M`, for messages.
    pub fn describe(&self) -> String {
        format!(
            "{} GID index {} ({}), MTU {}",
            self.device_port(),
            self.gid_index,
            self.gid(),
            self.mtu
        )
    }
}

// ---------------------------------------------------------------------------------------------
// The pipe

/// Credit writes that may be in flight at once; each has its own 8-byte source word so that a
/// non-inline write never reads a word being rewritten.
const CREDIT_RING: u64 = 16;
const TAG_CREDIT: u64 = 1 << 63;
const INLINE_WANTED: u32 = 64;

/// Where each region lives in the pipe's one registered buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    chunk: usize,
    slots: usize,
    rx_off: usize,
    credit_off: usize,
    credit_src_off: usize,
    len: usize,
}

impl Layout {
    fn new(chunk: usize, slots: usize) -> Layout {
        let rx_off = chunk * slots;
        let credit_off = rx_off + chunk * slots;
        let credit_src_off = credit_off + 64;
        Layout {
            chunk,
            slots,
            rx_off,
            credit_off,
            credit_src_off,
            len: credit_src_off + 8 * CREDIT_RING as usize,
        }
    }
    fn tx_slot(&self, seq: u64) -> usize {
        (seq % self.slots as u64) as usize * self.chunk
    }
    fn rx_slot(&self, slot: u64) -> usize {
        self.rx_off + slot as usize * self.chunk
    }
}

/// A failed send-queue completion, kept so that the other direction reports it too.
#[derive(Debug, Clone)]
struct Failure {
    op: String,
    qp_num: u32,
    status: i32,
    status_str: String,
    vendor_err: u32,
}

impl Failure {
    fn error(&self) -> VerbsError {
        VerbsError::Completion {
            op: self.op.clone(),
            qp_num: self.qp_num,
            status: self.status,
            status_str: self.status_str.clone(),
            vendor_err: self.vendor_err,
        }
    }
}

#[derive(Debug, Default)]
struct SqState {
    data_done: u64,
    credit_done: u64,
    failed: Option<Failure>,
    /// Where send completions are polled into: kept here, under the lock every reaper takes,
    /// so that a reap (one or more per message) clears no array of its own.
    wcs: [ibv_wc; 16],
}

#[derive(Debug)]
struct TxState {
    credits: TxCredits,
    /// Largest chunk the peer's slots take.
    chunk: usize,
}

#[derive(Debug)]
struct RxState {
    credits: RxCredits,
    /// Slot of the next chunk to arrive.
    next_seq: u64,
    /// The slot being read: (slot, bytes read, bytes in it).
    cur: Option<(u64, usize, usize)>,
    credit_posted: u64,
}

/// One end of an RDMA byte pipe. Fields drop in declaration order: the QP first, then the MR,
/// then the memory under it, then the CQs and the device.
pub struct VerbsPipe {
    qp: Mutex<Qp>,
    sq: Mutex<SqState>,
    tx: Mutex<TxState>,
    rx: Mutex<RxState>,
    mr: Mr,
    buf: Buffer,
    send_cq: Arc<Cq>,
    recv_cq: Arc<Cq>,
    dev: Arc<PipeDevice>,
    layout: Layout,
    remote: SetupFrame,
    inline_cap: u32,
    qp_num: u32,
    peer: String,
    timeout: Duration,
}

// SAFETY: the buffer is split into regions each touched under one lock only: staging under `tx`,
// receive slots and credit sources under `rx`; the credit word is written by the NIC and read
// volatile. Verbs objects are thread-safe as noted in `device`, and the QP is posted to under
// its mutex.
unsafe impl Sync for VerbsPipe {}

impl std::fmt::Debug for VerbsPipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerbsPipe")
            .field("peer", &self.peer)
            .field("device", &self.dev.device_port())
            .field("qp_num", &self.qp_num)
            .field("remote_qpn", &self.remote.qpn)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The state behind these locks is counters that a panicking holder leaves consistent.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn psn_seed(salt: u64) -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    (t.wrapping_mul(2654435761) ^ (salt as u32).wrapping_mul(40503)) & 0xff_ffff
}

/// A bounded wait: `progress` restarts the clock; `idle` spins a while, then sleeps in short
/// naps, and gives up `timeout` after the last progress. The clock is first read at the first
/// check (256 empty polls), not when the wait starts or progresses: a small message's wait
/// usually ends before that, and a clock read can cost microseconds (a system call plus an
/// emulated device read in a VM on the `hpet` clocksource), one or more per message otherwise.
struct Waiter {
    last: Option<Instant>,
    timeout: Duration,
    spins: u32,
}

/// Empty polls spent spinning before napping: a few tens of microseconds on hardware, enough
/// for a message in flight; past that the peer is busy, and a spinning waiter would only take
/// the CPU from it (ranks and rxe share CPUs on one host or in a VM).
const SPINS_BEFORE_NAPS: u32 = 4096;
const NAP: Duration = Duration::from_micros(20);

impl Waiter {
    fn new(timeout: Duration) -> Self {
        Waiter {
            last: None,
            timeout,
            spins: 0,
        }
    }
    fn progress(&mut self) {
        self.last = None;
        self.spins = 0;
    }
    fn idle(&mut self, what: impl FnOnce() -> String) -> Result<(), VerbsError> {
        self.spins = self.spins.saturating_add(1);
        let napping = self.spins > SPINS_BEFORE_NAPS;
        if napping || self.spins % 256 == 0 {
            let now = Instant::now();
            let last = *self.last.get_or_insert(now);
            if now.duration_since(last) > self.timeout {
                return Err(VerbsError::Timeout {
                    what: what(),
                    secs: self.timeout.as_secs_f64(),
                });
            }
            if napping {
                std::thread::sleep(NAP);
            } else {
                std::thread::yield_now();
            }
        }
        std::hint::spin_loop();
        Ok(())
    }
}

impl VerbsPipe {
    /// Creates this end, exchanges set-up frames with the peer over `stream` (which the caller
    /// has authenticated and given timeouts), connects, posts the receive slots and waits for
    /// the peer to have done the same. `peer` names the other end in every error.
    pub fn connect<S: Read + Write>(
        dev: &Arc<PipeDevice>,
        stream: &mut S,
        peer: &str,
        cfg: &PipeConfig,
    ) -> Result<VerbsPipe, VerbsError> {
        cfg.validate()?;
        let layout = Layout::new(cfg.chunk_bytes, cfg.slots as usize);
        let slots = cfg.slots;
        let ctx = dev.ctx.clone();
        let max_send = slots + CREDIT_RING as u32 + 4;
        let send_cq = Cq::new(ctx.clone(), max_send + 16)?;
        let recv_cq = Cq::new(ctx.clone(), slots + 16)?;
        let qp = match Qp::new_rc(
            dev.pd.clone(),
            send_cq.clone(),
            recv_cq.clone(),
            max_send,
            slots + 1,
            INLINE_WANTED,
        ) {
            Ok(q) => q,
            Err(_) => Qp::new_rc(
                dev.pd.clone(),
                send_cq.clone(),
                recv_cq.clone(),
                max_send,
                slots + 1,
                0,
            )?,
        };
        let inline_cap = qp.max_inline;
        let buf = Buffer::new(MemKind::Host, layout.len, None)?;
        let access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
        // SAFETY: `buf` outlives the MR: both move into the pipe, whose field order drops the MR
        // first.
        let mr = unsafe { Mr::register(dev.pd.clone(), buf.as_mut_ptr(), buf.len, access)? };
        let psn = psn_seed(buf.addr());
        let local = SetupFrame {
            qpn: qp.qp_num(),
            psn,
            lid: dev.port_info.lid,
            ethernet: dev.is_ethernet(),
            mtu: dev.mtu,
            gid: dev.gid,
            recv_chunk: u32::try_from(layout.chunk).unwrap_or(u32::MAX),
            recv_slots: slots,
            credit_addr: mr.addr + layout.credit_off as u64,
            credit_rkey: mr.rkey(),
        };
        let io = |what: &str, e: std::io::Error| {
            VerbsError::Control(format!("{what} {peer} during the RDMA pipe set-up: {e}"))
        };
        stream
            .write_all(&local.encode())
            .and_then(|()| stream.flush())
            .map_err(|e| io("sending queue-pair info to", e))?;
        let mut theirs = [0u8; SETUP_LEN];
        stream
            .read_exact(&mut theirs)
            .map_err(|e| io("reading queue-pair info from", e))?;
        let remote = SetupFrame::decode(&theirs)
            .map_err(|e| VerbsError::Control(format!("{peer} sent a bad set-up frame: {e}")))?;

        let mtu = dev.mtu.min(remote.mtu);
        let path = PathParams {
            port: dev.port,
            gid_index: u8::try_from(dev.gid_index).unwrap_or(0),
            use_grh: dev.is_ethernet() || remote.ethernet,
            mtu: mtu_bytes_to_enum(mtu).unwrap_or(3),
            psn,
            timeout: 14,
            retry_cnt: 7,
        };
        let rq = RemoteQp {
            qpn: remote.qpn,
            psn: remote.psn,
            lid: remote.lid,
            gid: remote.gid,
        };
        qp.connect(&path, &rq, access)?;
        let qp_num = qp.qp_num();
        let pipe = VerbsPipe {
            qp: Mutex::new(qp),
            sq: Mutex::new(SqState::default()),
            tx: Mutex::new(TxState {
                credits: TxCredits {
                    window: u64::from(remote.recv_slots),
                    sent: 0,
                },
                chunk: layout.chunk.min(remote.recv_chunk as usize),
            }),
            rx: Mutex::new(RxState {
                credits: RxCredits::new(u64::from(slots)),
                next_seq: 0,
                cur: None,
                credit_posted: 0,
            }),
            mr,
            buf,
            send_cq,
            recv_cq,
            dev: dev.clone(),
            layout,
            remote,
            inline_cap,
            qp_num,
            peer: peer.to_string(),
            timeout: cfg.timeout,
        };
        for slot in 0..u64::from(slots) {
            pipe.post_recv(slot)?;
        }
        // The peer's credits assume our slots are posted: say so, and wait for it to say so.
        stream
            .write_all(READY)
            .and_then(|()| stream.flush())
            .map_err(|e| io("sending ready to", e))?;
        let mut ready = [0u8; 8];
        stream
            .read_exact(&mut ready)
            .map_err(|e| io("waiting for ready from", e))?;
        if &ready != READY {
            return Err(VerbsError::Control(format!(
                "{peer} sent a bad ready message during the RDMA pipe set-up"
            )));
        }
        Ok(pipe)
    }

    /// The peer's address.
    pub fn peer(&self) -> &str {
        &self.peer
    }
    /// The local device this pipe runs on.
    pub fn device(&self) -> &Arc<PipeDevice> {
        &self.dev
    }
    /// The local QP number.
    pub fn qp_num(&self) -> u32 {
        self.qp_num
    }

    fn post_recv(&self, slot: u64) -> Result<(), VerbsError> {
        let mut sge = ibv_sge {
            addr: self.mr.addr + self.layout.rx_slot(slot) as u64,
            length: u32::try_from(self.layout.chunk).unwrap_or(u32::MAX),
            lkey: self.mr.lkey(),
        };
        let mut wr = ibv_recv_wr {
            wr_id: slot,
            next: std::ptr::null_mut(),
            sg_list: &mut sge,
            num_sge: 1,
        };
        // SAFETY: the SGE names one receive slot inside our live MR.
        unsafe { lock(&self.qp).post_recv(&mut wr) }
    }

    /// Reaps send completions; returns how many there were, or the first failure (kept for the
    /// other direction to see too).
    fn reap_sends(&self) -> Result<usize, VerbsError> {
        let mut sq = lock(&self.sq);
        if let Some(f) = &sq.failed {
            return Err(f.error());
        }
        let n = self.send_cq.poll(&mut sq.wcs)?;
        for i in 0..n {
            let wc = sq.wcs[i];
            let credit = wc.wr_id & TAG_CREDIT != 0;
            if wc.status != IBV_WC_SUCCESS {
                let f = Failure {
                    op: if credit {
                        format!("credit write to {}", self.peer)
                    } else {
                        format!("send to {}", self.peer)
                    },
                    qp_num: wc.qp_num,
                    status: wc.status,
                    status_str: self.dev.ctx.verbs.wc_status_str(wc.status),
                    vendor_err: wc.vendor_err,
                };
                let e = f.error();
                sq.failed = Some(f);
                return Err(e);
            }
            if credit {
                sq.credit_done += 1;
            } else {
                sq.data_done += 1;
            }
        }
        Ok(n)
    }

    /// The peer's running count of consumed chunks, as its RDMA writes left it.
    fn peer_consumed(&self) -> u64 {
        let p = self.mr.addr as usize + self.layout.credit_off;
        // SAFETY: the credit word is 8-byte aligned inside our live buffer; volatile because the
        // NIC writes it behind the compiler's back.
        unsafe { std::ptr::read_volatile(p as *const u64) }
    }

    /// Sends all of `data`, in order, blocking while the peer's slots are full.
    pub fn send_all(&self, data: &[u8]) -> Result<(), VerbsError> {
        let mut tx = lock(&self.tx);
        let mut off = 0;
        for len in chunk_lengths(data.len(), tx.chunk) {
            let seq = tx.credits.sent;
            let mut w = Waiter::new(self.timeout);
            loop {
                if self.reap_sends()? > 0 {
                    w.progress();
                }
                let staging_free = seq - lock(&self.sq).data_done < self.layout.slots as u64;
                let credits = tx
                    .credits
                    .available(self.peer_consumed())
                    .map_err(|e| VerbsError::Control(format!("{}: {e}", self.peer)))?;
                if staging_free && credits > 0 {
                    break;
                }
                w.idle(|| {
                    if staging_free {
                        format!(
                            "credits from {} (it has not read chunk {} of this pipe)",
                            self.peer,
                            seq.saturating_sub(tx.credits.window) + 1
                        )
                    } else {
                        format!("send completions to {}", self.peer)
                    }
                })?;
            }
            let st = self.layout.tx_slot(seq);
            self.buf.write(st, &data[off..off + len])?;
            let mut sge = ibv_sge {
                addr: self.mr.addr + st as u64,
                length: len as u32,
                lkey: self.mr.lkey(),
            };
            let mut flags = IBV_SEND_SIGNALED;
            if len <= self.inline_cap as usize {
                flags |= IBV_SEND_INLINE;
            }
            let mut wr = ibv_send_wr {
                wr_id: seq,
                sg_list: &mut sge,
                num_sge: 1,
                opcode: IBV_WR_SEND,
                send_flags: flags,
                ..Default::default()
            };
            // SAFETY: the SGE names the staging slot just filled, inside our live MR; it is not
            // rewritten until this send's completion is reaped (staging_free above).
            unsafe { lock(&self.qp).post_send(&mut wr)? };
            tx.credits.sent += 1;
            off += len;
        }
        Ok(())
    }

    /// Fills `out` with the next bytes from the peer.
    pub fn recv_exact(&self, out: &mut [u8]) -> Result<(), VerbsError> {
        let mut rx = lock(&self.rx);
        let mut filled = 0;
        while filled < out.len() {
            let (slot, read, len) = match rx.cur {
                Some(c) => c,
                None => {
                    let c = self.wait_chunk(&mut rx)?;
                    rx.cur = Some(c);
                    c
                }
            };
            let take = (len - read).min(out.len() - filled);
            let src = self.layout.rx_slot(slot) + read;
            // SAFETY: the range lies inside the receive slot, whose completion was reaped, so the
            // NIC is done with it until the slot is reposted below.
            let bytes = unsafe {
                std::slice::from_raw_parts((self.mr.addr as usize + src) as *const u8, take)
            };
            out[filled..filled + take].copy_from_slice(bytes);
            filled += take;
            if read + take < len {
                rx.cur = Some((slot, read + take, len));
                continue;
            }
            rx.cur = None;
            self.post_recv(slot)?;
            if rx.credits.consume() {
                self.send_credit(&mut rx)?;
            }
        }
        // Hand back the rest of the batch too: the peer may next send a whole window at once
        // and wait for it to fit before it reads anything itself, so credits held back here
        // could leave both ends waiting on each other.
        if rx.credits.consumed > rx.credits.reported {
            self.send_credit(&mut rx)?;
        }
        Ok(())
    }

    /// Bytes `send_all` accepts while the peer is not reading, once the peer has read what
    /// was sent before.
    pub fn window_bytes(&self) -> usize {
        let tx = lock(&self.tx);
        tx.chunk * tx.credits.window.min(self.layout.slots as u64) as usize
    }

    /// Waits for the next chunk; returns (slot, 0, bytes).
    fn wait_chunk(&self, rx: &mut RxState) -> Result<(u64, usize, usize), VerbsError> {
        let mut w = Waiter::new(self.timeout);
        let mut wcs = [ibv_wc::default(); 1];
        loop {
            let n = self.recv_cq.poll(&mut wcs)?;
            if n == 1 {
                let wc = wcs[0];
                if wc.status != IBV_WC_SUCCESS {
                    return Err(VerbsError::Completion {
                        op: format!("receive from {}", self.peer),
                        qp_num: wc.qp_num,
                        status: wc.status,
                        status_str: self.dev.ctx.verbs.wc_status_str(wc.status),
                        vendor_err: wc.vendor_err,
                    });
                }
                let want = rx.next_seq % self.layout.slots as u64;
                if wc.wr_id != want {
                    return Err(VerbsError::Control(format!(
                        "{}: chunk arrived in slot {}, expected slot {want}",
                        self.peer, wc.wr_id
                    )));
                }
                rx.next_seq += 1;
                let len = wc.byte_len as usize;
                if len > self.layout.chunk {
                    return Err(VerbsError::Control(format!(
                        "{}: a chunk of {len} bytes overran a slot of {}",
                        self.peer, self.layout.chunk
                    )));
                }
                return Ok((wc.wr_id, 0, len));
            }
            // A send failure (the peer gone) is news for the receiving side too.
            if self.reap_sends()? > 0 {
                w.progress();
            }
            w.idle(|| {
                format!(
                    "data from {} (chunk {} of this pipe)",
                    self.peer,
                    rx.next_seq + 1
                )
            })?;
        }
    }

    /// RDMA-writes the consumed count into the peer's credit word.
    fn send_credit(&self, rx: &mut RxState) -> Result<(), VerbsError> {
        let mut w = Waiter::new(self.timeout);
        loop {
            if self.reap_sends()? > 0 {
                w.progress();
            }
            if rx.credit_posted - lock(&self.sq).credit_done < CREDIT_RING {
                break;
            }
            w.idle(|| format!("credit-write completions to {}", self.peer))?;
        }
        let src = self.layout.credit_src_off + 8 * (rx.credit_posted % CREDIT_RING) as usize;
        self.buf.write(src, &rx.credits.consumed.to_le_bytes())?;
        let mut sge = ibv_sge {
            addr: self.mr.addr + src as u64,
            length: 8,
            lkey: self.mr.lkey(),
        };
        let mut flags = IBV_SEND_SIGNALED;
        if self.inline_cap >= 8 {
            flags |= IBV_SEND_INLINE;
        }
        let mut wr = ibv_send_wr {
            wr_id: TAG_CREDIT | rx.credit_posted,
            sg_list: &mut sge,
            num_sge: 1,
            opcode: IBV_WR_RDMA_WRITE,
            send_flags: flags,
            ..Default::default()
        };
        wr.rdma.remote_addr = self.remote.credit_addr;
        wr.rdma.rkey = self.remote.credit_rkey;
        // SAFETY: the SGE names a credit source word inside our live MR, not rewritten until
        // CREDIT_RING later writes; the remote address and key are the peer's credit word,
        // registered for remote write.
        unsafe { lock(&self.qp).post_send(&mut wr)? };
        rx.credit_posted += 1;
        rx.credits.mark_reported();
        Ok(())
    }

    /// Waits until every chunk sent so far has been acknowledged by the peer's NIC.
    pub fn flush(&self) -> Result<(), VerbsError> {
        let sent = lock(&self.tx).credits.sent;
        let mut w = Waiter::new(self.timeout);
        while lock(&self.sq).data_done < sent {
            if self.reap_sends()? > 0 {
                w.progress();
            }
            w.idle(|| format!("send completions to {}", self.peer))?;
        }
        Ok(())
    }
}

/// How long dropping a pipe waits for its last chunks: a live peer acknowledges them in
/// milliseconds, and a dead one must not hold up the error path for a whole timeout.
const DRAIN_ON_DROP: Duration = Duration::from_secs(2);

impl Drop for VerbsPipe {
    fn drop(&mut self) {
        // Destroying the QP drops what is still queued: let the last chunks reach the peer (a
        // failure was already, or will be, reported elsewhere).
        self.timeout = self.timeout.min(DRAIN_ON_DROP);
        if let Err(e) = self.flush() {
            tracing::debug!("RDMA pipe to {}: {e}", self.peer);
        }
    }
}

#[cfg(test)]
mod tests;
