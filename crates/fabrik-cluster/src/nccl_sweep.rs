//! The `nccl` backend of the collective sweep: the same sizes, placements, timing and checks as
//! [`crate::sweep`], with the data in GPU memory and the operations run by NCCL (both loaded at
//! run time through `fabrik-gpu`). Each rank fills its device buffers from the deterministic
//! per-rank inputs (host to device), runs the collective, and checks the result copied back
//! with the very checker the tcp backend uses.

use std::sync::Arc;
use std::time::{Duration, Instant};

use fabrik_gpu::{
    wait_stream, Cuda, DeviceBuffer, GpuError, Nccl, NcclComm, NcclDataType, NcclRedOp,
    NcclVersion, Stream, UniqueId, Watchdog, LIBCUDA, LIBNCCL,
};
use fabrik_model::{CollectiveRow, RankDevice};
use half::{bf16, f16};

use crate::collective::CollOp;
use crate::dtype::{DType, Elem, RedOp};
use crate::rendezvous::{Group, PeerInfo};
use crate::sweep::{counts, init_send, sweep_sizes, verify, RankResult, SweepConfig, WrongElement};
use crate::ClusterError;

/// NCCL's element type for a fabrik data type.
pub fn nccl_dtype(d: DType) -> NcclDataType {
    match d {
        DType::Int8 => NcclDataType::Int8,
        DType::Uint8 => NcclDataType::Uint8,
        DType::Int32 => NcclDataType::Int32,
        DType::Uint32 => NcclDataType::Uint32,
        DType::Int64 => NcclDataType::Int64,
        DType::Uint64 => NcclDataType::Uint64,
        DType::Half => NcclDataType::Float16,
        DType::Float => NcclDataType::Float32,
        DType::Double => NcclDataType::Float64,
        DType::Bfloat16 => NcclDataType::Bfloat16,
    }
}

/// NCCL's operator for `o`.
pub fn nccl_redop(o: RedOp) -> NcclRedOp {
    match o {
        RedOp::Sum => NcclRedOp::Sum,
        RedOp::Prod => NcclRedOp::Prod,
        RedOp::Max => NcclRedOp::Max,
        RedOp::Min => NcclRedOp::Min,
        RedOp::Avg => NcclRedOp::Avg,
    }
}

/// Refuses what this NCCL cannot do, before any rank starts.
pub fn check_support(v: NcclVersion, cfg: &SweepConfig) -> Result<(), ClusterError> {
    if v.has_avg_and_bf16() {
        return Ok(());
    }
    if cfg.dtype == DType::Bfloat16 {
        return Err(ClusterError::NcclTooOld {
            version: v.to_string(),
            lacks: "bfloat16",
            needs: "2.10",
        });
    }
    if cfg.op.reduces() && cfg.redop == RedOp::Avg {
        return Err(ClusterError::NcclTooOld {
            version: v.to_string(),
            lacks: "avg reduction",
            needs: "2.10",
        });
    }
    Ok(())
}

/// The GPU a rank runs on: one per local rank, round robin over the visible devices (as
/// torchrun users set `LOCAL_RANK`).
pub fn device_for(local_rank: u32, count: i32) -> Result<i32, GpuError> {
    if count <= 0 {
        return Err(GpuError::Invalid(
            "the NVIDIA driver sees no GPU (check CUDA_VISIBLE_DEVICES and nvidia-smi)".into(),
        ));
    }
    Ok((local_rank % count as u32) as i32)
}

/// This rank's index among the ranks on its host: the launcher's local rank when it sets one
/// (`LOCAL_RANK`, `OMPI_COMM_WORLD_LOCAL_RANK`, `MPI_LOCALRANKID`, `SLURM_LOCALID`), otherwise
/// counted from the joined ranks' host names, so that two ranks on one node never share a GPU.
pub fn local_index(
    env: &std::collections::BTreeMap<String, String>,
    peers: &[PeerInfo],
    rank: u32,
) -> u32 {
    if let Ok(Some(info)) = crate::ranks::discover(env) {
        if let Some(l) = info.local_rank {
            return l;
        }
    }
    let Some(me) = peers.iter().find(|p| p.rank == rank) else {
        return 0;
    };
    peers
        .iter()
        .filter(|p| p.rank < rank && p.host == me.host)
        .count() as u32
}

/// Everything a rank holds for the nccl backend.
pub struct GpuRank {
    cuda: Arc<Cuda>,
    nccl: Arc<Nccl>,
    /// CUDA device ordinal.
    pub ordinal: i32,
    /// Device model name.
    pub name: String,
    /// PCI bus id (`0000:18:00.0`).
    pub bus_id: String,
    /// The loaded NCCL's version.
    pub version: NcclVersion,
    /// CUDA driver version (`cuDriverGetVersion`: 12040 is 12.4).
    pub driver_version: i32,
    watchdog: Watchdog,
    timeout: Duration,
    stream: Option<Stream>,
    comm: Option<NcclComm>,
}

impl GpuRank {
    /// Loads the CUDA driver and NCCL, and makes this rank's GPU current.
    pub fn open(local_rank: u32) -> Result<Self, GpuError> {
        let cuda = Arc::new(Cuda::load_from(LIBCUDA)?);
        let ordinal = device_for(local_rank, cuda.device_count()?)?;
        cuda.use_device(ordinal)?;
        let nccl = Nccl::load_from(LIBNCCL)?;
        let version = nccl.version()?;
        Ok(GpuRank {
            name: cuda.device_name(ordinal)?,
            bus_id: cuda.pci_bus_id(ordinal)?,
            driver_version: cuda.driver_version()?,
            cuda,
            nccl,
            ordinal,
            version,
            watchdog: Watchdog::start(),
            timeout: Duration::from_secs(60),
            stream: None,
            comm: None,
        })
    }

    /// This rank's line of the header.
    pub fn device(&self, group: &Group) -> RankDevice {
        RankDevice {
            rank: group.rank(),
            group: Some(0),
            pid: Some(u64::from(std::process::id())),
            host: group.peers()[group.rank() as usize].host.clone(),
            device: Some(self.ordinal as u32),
            bus_id: Some(self.bus_id.clone()),
            name: Some(self.name.clone()),
        }
    }

    /// Rank 0 makes the NCCL unique id and sends its 128 bytes to every rank over the
    /// authenticated rendezvous; then every rank joins the communicator. A rank that cannot
    /// makes the whole job fail naming it, within the job's timeout.
    pub fn connect(&mut self, group: &mut Group) -> Result<(), ClusterError> {
        let id = if group.rank() == 0 {
            match self.nccl.unique_id() {
                Ok(id) => Some(id.internal.to_vec()),
                Err(e) => return Err(group.fail(&ClusterError::Gpu(e))),
            }
        } else {
            None
        };
        let bytes: Vec<u8> = group.broadcast(id)?;
        let id = match UniqueId::from_bytes(&bytes) {
            Ok(id) => id,
            Err(e) => return Err(group.fail(&ClusterError::Gpu(e))),
        };
        let limit = group.timeout();
        self.timeout = limit;
        self.watchdog.arm(
            format!("ncclCommInitRank on rank {}", group.rank()),
            limit + Duration::from_secs(5),
        );
        let comm = NcclComm::init_rank(&self.nccl, group.size(), &id, group.rank());
        self.watchdog.disarm();
        let stream = Stream::new(&self.cuda);
        match (comm, stream) {
            (Ok(c), Ok(s)) => {
                self.comm = Some(c);
                self.stream = Some(s);
            }
            (Err(e), _) | (_, Err(e)) => return Err(group.fail(&ClusterError::Gpu(e))),
        }
        // Everyone joined: the communicator is usable on every rank.
        group.barrier()
    }

    /// Runs the sweep; rank 0 gets each row through `on_row` as in [`crate::sweep::run_sweep`].
    pub fn run_sweep(
        &mut self,
        group: &mut Group,
        cfg: &SweepConfig,
        on_row: &mut dyn FnMut(&CollectiveRow, Option<&WrongElement>),
    ) -> Result<(), ClusterError> {
        sweep_sizes(group, cfg, on_row, |group, size| match cfg.dtype {
            DType::Int8 => self.run_size::<i8>(group, cfg, size),
            DType::Uint8 => self.run_size::<u8>(group, cfg, size),
            DType::Int32 => self.run_size::<i32>(group, cfg, size),
            DType::Uint32 => self.run_size::<u32>(group, cfg, size),
            DType::Int64 => self.run_size::<i64>(group, cfg, size),
            DType::Uint64 => self.run_size::<u64>(group, cfg, size),
            DType::Half => self.run_size::<f16>(group, cfg, size),
            DType::Float => self.run_size::<f32>(group, cfg, size),
            DType::Double => self.run_size::<f64>(group, cfg, size),
            DType::Bfloat16 => self.run_size::<bf16>(group, cfg, size),
        })
    }

    fn run_size<T: Elem>(
        &mut self,
        group: &mut Group,
        cfg: &SweepConfig,
        size: u64,
    ) -> Result<RankResult, ClusterError> {
        let (rank, n) = (group.rank(), group.size());
        let limit = group.timeout();
        let (_, send_len, recv_len, _) = counts(cfg.op, cfg.dtype, size, n);
        let elt = std::mem::size_of::<T>();
        let bufs = Bufs {
            send: DeviceBuffer::new(&self.cuda, send_len as usize * elt).map_err(gpu)?,
            recv: DeviceBuffer::new(&self.cuda, recv_len as usize * elt).map_err(gpu)?,
            // Only the in-place reduce_scatter input and the alltoall staging copy live here.
            scratch: DeviceBuffer::new(
                &self.cuda,
                if matches!(cfg.op, CollOp::ReduceScatter | CollOp::Alltoall) {
                    send_len.max(recv_len) as usize * elt
                } else {
                    0
                },
            )
            .map_err(gpu)?,
            send_len: send_len as usize,
            recv_len: recv_len as usize,
            elt,
        };
        let mut send = vec![T::zeroed(); send_len as usize];
        init_send(cfg, rank, n, &mut send);
        let send_bytes: &[u8] = bytemuck::cast_slice(&send);
        bufs.send.write(0, send_bytes).map_err(gpu)?;

        let mut times = [0.0f64; 2];
        for (k, in_place) in [false, true].into_iter().enumerate() {
            if in_place {
                bufs.load_in_place(cfg.op, rank, send_bytes).map_err(gpu)?;
            }
            for _ in 0..cfg.warmup {
                self.launch(cfg, &bufs, rank, n, in_place)?;
            }
            self.finish(limit, "the warm-up iterations", size)?;
            group.barrier()?;
            let t0 = Instant::now();
            for _ in 0..cfg.iters {
                self.launch(cfg, &bufs, rank, n, in_place)?;
            }
            self.finish(limit, "the timed iterations", size)?;
            times[k] = t0.elapsed().as_secs_f64() * 1e6 / f64::from(cfg.iters.max(1));
        }

        let mut checked = [(0, None), (0, None)];
        if cfg.check {
            let zeros = vec![0u8; bufs.recv.len()];
            for (k, in_place) in [false, true].into_iter().enumerate() {
                bufs.send.write(0, send_bytes).map_err(gpu)?;
                bufs.recv.write(0, &zeros).map_err(gpu)?;
                if in_place {
                    bufs.load_in_place(cfg.op, rank, send_bytes).map_err(gpu)?;
                }
                group.barrier()?;
                self.launch(cfg, &bufs, rank, n, in_place)?;
                self.finish(limit, "the checked iteration", size)?;
                let (buf, off) = bufs.result(cfg.op, rank, in_place);
                let mut got = vec![T::zeroed(); recv_len as usize];
                buf.read(off, bytemuck::cast_slice_mut(&mut got))
                    .map_err(gpu)?;
                checked[k] = verify(cfg, rank, n, &got, in_place, size);
            }
        }
        Ok(RankResult::new(times, checked))
    }

    fn parts(&mut self) -> Result<(&mut NcclComm, &Stream), ClusterError> {
        match (self.comm.as_mut(), self.stream.as_ref()) {
            (Some(c), Some(s)) => Ok((c, s)),
            _ => Err(ClusterError::Misuse(
                "the NCCL communicator is not set up (connect first)",
            )),
        }
    }

    /// Queues one operation. Enqueueing can block (a group end opening connections), so it
    /// runs under the watchdog.
    fn launch(
        &mut self,
        cfg: &SweepConfig,
        b: &Bufs,
        rank: u32,
        n: u32,
        in_place: bool,
    ) -> Result<(), ClusterError> {
        // The job's timeout, plus a margin for NCCL's own error handling to speak first.
        let limit = self.timeout + Duration::from_secs(5);
        self.watchdog.arm(
            format!("enqueueing {} on rank {rank}", cfg.op.name()),
            limit,
        );
        let r = self.launch_inner(cfg, b, rank, n, in_place);
        self.watchdog.disarm();
        r
    }

    fn launch_inner(
        &mut self,
        cfg: &SweepConfig,
        b: &Bufs,
        rank: u32,
        n: u32,
        in_place: bool,
    ) -> Result<(), ClusterError> {
        let dt = nccl_dtype(cfg.dtype);
        let op = nccl_redop(cfg.redop);
        let r = rank as usize;
        let (send, recv, scratch) = (
            b.send.addr(0).map_err(gpu)?,
            b.recv.addr(0).map_err(gpu)?,
            b.scratch.addr(0).map_err(gpu)?,
        );
        let (comm, stream) = self.parts()?;
        let res = match (cfg.op, in_place) {
            (CollOp::AllReduce, false) => comm.all_reduce(send, recv, b.send_len, dt, op, stream),
            (CollOp::AllReduce, true) => comm.all_reduce(recv, recv, b.recv_len, dt, op, stream),
            (CollOp::Broadcast, false) => {
                comm.broadcast(send, recv, b.send_len, dt, cfg.root, stream)
            }
            (CollOp::Broadcast, true) => {
                comm.broadcast(recv, recv, b.recv_len, dt, cfg.root, stream)
            }
            (CollOp::Reduce, false) => {
                comm.reduce(send, recv, b.send_len, dt, op, cfg.root, stream)
            }
            (CollOp::Reduce, true) => comm.reduce(recv, recv, b.recv_len, dt, op, cfg.root, stream),
            (CollOp::AllGather, false) => comm.all_gather(send, recv, b.send_len, dt, stream),
            (CollOp::AllGather, true) => {
                // nccl-tests: sendbuff = recvbuff + rank * sendcount.
                let mine = b.recv.addr(r * b.send_len * b.elt).map_err(gpu)?;
                comm.all_gather(mine, recv, b.send_len, dt, stream)
            }
            (CollOp::ReduceScatter, false) => {
                comm.reduce_scatter(send, recv, b.recv_len, dt, op, stream)
            }
            (CollOp::ReduceScatter, true) => {
                // nccl-tests: recvbuff = sendbuff + rank * recvcount (here in `scratch`).
                let mine = b.scratch.addr(r * b.recv_len * b.elt).map_err(gpu)?;
                comm.reduce_scatter(scratch, mine, b.recv_len, dt, op, stream)
            }
            (CollOp::Alltoall, false) => comm.alltoall(
                send,
                recv,
                b.recv_len / n.max(1) as usize,
                b.elt,
                dt,
                n,
                stream,
            ),
            (CollOp::Alltoall, true) => {
                // Send and receive blocks overlap in place; as the tcp backend does, the input
                // is staged in `scratch` (in stream order) and exchanged into `recv`.
                let len = b.recv_len * b.elt;
                b.scratch
                    .copy_from_async(0, &b.recv, 0, len, stream)
                    .and_then(|()| {
                        comm.alltoall(
                            scratch,
                            recv,
                            b.recv_len / n.max(1) as usize,
                            b.elt,
                            dt,
                            n,
                            stream,
                        )
                    })
            }
        };
        res.map_err(gpu)
    }

    /// Waits for the queued work, bounded by the job's timeout.
    fn finish(&mut self, limit: Duration, what: &str, size: u64) -> Result<(), ClusterError> {
        let (comm, stream) = self.parts()?;
        wait_stream(comm, stream, limit, &format!("{what} at {size} B")).map_err(gpu)
    }
}

fn gpu(e: GpuError) -> ClusterError {
    ClusterError::Gpu(e)
}

/// One size's device buffers (element counts as [`counts`] gives them).
struct Bufs {
    send: DeviceBuffer,
    recv: DeviceBuffer,
    scratch: DeviceBuffer,
    send_len: usize,
    recv_len: usize,
    elt: usize,
}

impl Bufs {
    /// Puts this rank's input where the in-place call reads it (as the tcp backend does).
    fn load_in_place(&self, op: CollOp, rank: u32, send: &[u8]) -> Result<(), GpuError> {
        let r = rank as usize;
        match op {
            CollOp::AllGather => self.recv.write(r * send.len(), send),
            CollOp::ReduceScatter => self.scratch.write(0, send),
            _ => {
                let len = send.len().min(self.recv_len * self.elt);
                self.recv.write(0, &send[..len])
            }
        }
    }

    /// Where the result of a placement lies: (buffer, byte offset); `recv_len` elements.
    fn result(&self, op: CollOp, rank: u32, in_place: bool) -> (&DeviceBuffer, usize) {
        if in_place && op == CollOp::ReduceScatter {
            (&self.scratch, rank as usize * self.recv_len * self.elt)
        } else {
            (&self.recv, 0)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn every_dtype_maps_to_nccl_h_values() {
        let values: Vec<i32> = DType::ALL.iter().map(|d| nccl_dtype(*d) as i32).collect();
        // nccl.h.in: ncclInt8 0 ... ncclFloat64 8, ncclBfloat16 9; fabrik's order matches.
        assert_eq!(values, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(nccl_dtype(DType::Half) as i32, 6);
        assert_eq!(nccl_dtype(DType::Bfloat16) as i32, 9);
        assert_eq!(nccl_redop(RedOp::Sum) as i32, 0);
        assert_eq!(nccl_redop(RedOp::Min) as i32, 3);
        assert_eq!(nccl_redop(RedOp::Avg) as i32, 4);
    }

    fn cfg(dtype: DType, redop: RedOp) -> SweepConfig {
        SweepConfig {
            op: CollOp::AllReduce,
            dtype,
            redop,
            root: 0,
            sizes: vec![8],
            warmup: 0,
            iters: 1,
            check: true,
        }
    }

    #[test]
    fn old_nccl_refuses_bf16_and_avg() {
        let old = NcclVersion::from_code(2708);
        let e = check_support(old, &cfg(DType::Bfloat16, RedOp::Sum)).unwrap_err();
        assert!(e.to_string().contains("no bfloat16"), "{e}");
        let e = check_support(old, &cfg(DType::Float, RedOp::Avg)).unwrap_err();
        assert!(e.to_string().contains("no avg"), "{e}");
        assert!(check_support(old, &cfg(DType::Half, RedOp::Max)).is_ok());
        let new = NcclVersion::from_code(22105);
        assert!(check_support(new, &cfg(DType::Bfloat16, RedOp::Avg)).is_ok());
    }

    #[test]
    fn local_index_from_the_launcher_or_the_host_names() {
        let peer = |rank, host: &str| PeerInfo {
            rank,
            host: host.into(),
            pid: 1,
            data_addrs: vec![],
        };
        let peers = [
            peer(0, "a"),
            peer(1, "b"),
            peer(2, "a"),
            peer(3, "b"),
            peer(4, "a"),
        ];
        let none = std::collections::BTreeMap::new();
        assert_eq!(local_index(&none, &peers, 0), 0);
        assert_eq!(local_index(&none, &peers, 3), 1);
        assert_eq!(local_index(&none, &peers, 4), 2);
        assert_eq!(local_index(&none, &peers, 9), 0);
        let env: std::collections::BTreeMap<String, String> = [
            ("OMPI_COMM_WORLD_RANK", "4"),
            ("OMPI_COMM_WORLD_SIZE", "8"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "3"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(local_index(&env, &peers, 4), 3);
    }

    #[test]
    fn devices_round_robin_over_local_ranks() {
        assert_eq!(device_for(0, 8).unwrap(), 0);
        assert_eq!(device_for(9, 8).unwrap(), 1);
        assert_eq!(device_for(3, 1).unwrap(), 0);
        let e = device_for(0, 0).unwrap_err().to_string();
        assert!(e.contains("no GPU"), "{e}");
    }
}
