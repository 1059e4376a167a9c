//! The collectives' names and the choices among their algorithms: the operations as
//! nccl-tests names them, the `--algo` choice, the algorithm one call runs, and the sizes up to
//! which `auto` prefers a latency-bound algorithm. [`super::Comm::algorithm`] applies them.

use serde::{Deserialize, Serialize};

use crate::ClusterError;

/// The collective operations, named as nccl-tests names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CollOp {
    /// `all_reduce`.
    AllReduce,
    /// `all_gather`.
    AllGather,
    /// `reduce_scatter`.
    ReduceScatter,
    /// `broadcast`.
    Broadcast,
    /// `reduce`.
    Reduce,
    /// `alltoall`.
    Alltoall,
}

impl CollOp {
    /// Every operation, in the order sweeps run them.
    pub const ALL: [CollOp; 6] = [
        CollOp::AllReduce,
        CollOp::AllGather,
        CollOp::ReduceScatter,
        CollOp::Broadcast,
        CollOp::Reduce,
        CollOp::Alltoall,
    ];

    /// nccl-tests' name (`all_reduce`).
    pub fn name(self) -> &'static str {
        match self {
            CollOp::AllReduce => "all_reduce",
            CollOp::AllGather => "all_gather",
            CollOp::ReduceScatter => "reduce_scatter",
            CollOp::Broadcast => "broadcast",
            CollOp::Reduce => "reduce",
            CollOp::Alltoall => "alltoall",
        }
    }

    /// Whether the operation combines values with a reduction operator.
    pub fn reduces(self) -> bool {
        matches!(
            self,
            CollOp::AllReduce | CollOp::ReduceScatter | CollOp::Reduce
        )
    }

    /// Whether the operation has a root rank.
    pub fn rooted(self) -> bool {
        matches!(self, CollOp::Broadcast | CollOp::Reduce)
    }
}

impl std::str::FromStr for CollOp {
    type Err = ClusterError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim_end_matches("_perf").replace('-', "_");
        CollOp::ALL
            .into_iter()
            .find(|o| o.name() == s || o.name().replace('_', "") == s)
            .ok_or_else(|| ClusterError::Unknown {
                what: "collective",
                value: s.to_string(),
                known: "all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall",
            })
    }
}

/// Which algorithm family the collectives use: `Auto` picks by size and rank count; the others
/// force one (`rd` and `tree` fall back to the latency-bound algorithm each operation has; see
/// [`super::Comm::algorithm`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlgoChoice {
    /// By size and rank count, with the thresholds below.
    #[default]
    Auto,
    /// Rings (chains for broadcast and reduce), on every channel.
    Ring,
    /// Recursive doubling (Bruck for all_gather and alltoall, binomial trees for broadcast and
    /// reduce).
    Rd,
    /// Binomial trees (all_reduce as reduce then broadcast; Bruck for all_gather and alltoall).
    Tree,
}

impl std::str::FromStr for AlgoChoice {
    type Err = ClusterError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(AlgoChoice::Auto),
            "ring" => Ok(AlgoChoice::Ring),
            "rd" => Ok(AlgoChoice::Rd),
            "tree" => Ok(AlgoChoice::Tree),
            _ => Err(ClusterError::Unknown {
                what: "algorithm",
                value: s.to_string(),
                known: "ring, rd, tree or auto",
            }),
        }
    }
}

impl AlgoChoice {
    /// The name `--algo` takes (`auto`).
    pub fn name(self) -> &'static str {
        match self {
            AlgoChoice::Auto => "auto",
            AlgoChoice::Ring => "ring",
            AlgoChoice::Rd => "rd",
            AlgoChoice::Tree => "tree",
        }
    }

    /// Whether the choice may pick an algorithm that talks to non-neighbours, so the
    /// communicator needs the mesh.
    pub fn needs_mesh(self) -> bool {
        self != AlgoChoice::Ring
    }
}

/// The algorithm one collective call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Algorithm {
    /// Ring reduce-scatter / all-gather, or a pipelined chain for broadcast and reduce.
    Ring,
    /// Recursive doubling, with the non-power-of-two fold.
    Rd,
    /// Binomial trees.
    Tree,
    /// Bruck's all_gather and alltoall.
    Bruck,
    /// Pairwise exchange over the mesh (alltoall).
    Pairwise,
}

impl Algorithm {
    /// The name reports print.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Ring => "ring",
            Algorithm::Rd => "rd",
            Algorithm::Tree => "tree",
            Algorithm::Bruck => "bruck",
            Algorithm::Pairwise => "pairwise",
        }
    }
}

/// Up to this many bytes, `auto` runs recursive doubling for all_reduce (and reduce_scatter,
/// as an all_reduce of the whole buffer): ⌈log2 n⌉ steps of the whole buffer beat the ring's
/// 2(n-1) steps of 1/n of it until the bytes cost more than the step latency.
/// Measured with `bench collective` over loopback TCP (docs/benchmarks/collectives.md).
pub const RD_MAX_BYTES: usize = 64 << 10;
/// Up to this many bytes, `auto` runs Bruck's all_gather instead of the ring (measured as
/// [`RD_MAX_BYTES`]).
pub const BRUCK_MAX_BYTES: usize = 64 << 10;
/// Up to this many bytes, `auto` runs binomial trees for broadcast and reduce instead of the
/// pipelined chain (measured as [`RD_MAX_BYTES`]).
pub const TREE_MAX_BYTES: usize = 64 << 10;
/// Up to this many bytes per block (per destination rank), `auto` runs Bruck's alltoall
/// instead of the pairwise exchange, from 4 ranks up (with 2 or 3 ranks both take the same
/// number of steps). Measured with `bench collective alltoall` over loopback TCP
/// (docs/benchmarks/collectives.md): at 4 ranks the two meet at 1 KiB blocks, at 8 ranks Bruck
/// is still ahead at 8 KiB; MPICH's bound for the same choice is 256 bytes.
pub const BRUCK_ALLTOALL_MAX_BLOCK: usize = 1 << 10;
/// Below this many bytes a ring runs on one channel, on the calling thread: another lane's
/// thread and its extra step latency cost more than the bandwidth it adds (measured as
/// [`RD_MAX_BYTES`]).
pub const ONE_LANE_BELOW: usize = 256 << 10;
