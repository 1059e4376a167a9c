//! Writes a synthetic multi-host, multi-rank NCCL_DEBUG=INFO job log of about N bytes to stdout,
//! for the `fabrik logs` throughput benchmark (docs/benchmarks/logs.md). The lines follow the
//! formats of the real logs under fixtures/nccl-logs (2.18-2.2x style), interleaved across
//! ranks the way a launcher merges them, with some program output mixed in.
//!
//! Usage: cargo run --release -p fabrik-parse --example gen_synthetic_log -- BYTES [HOSTS] [GPUS]

use std::io::{self, BufWriter, Write};

fn main() -> io::Result<()> {
    let mut args = std::env::args().skip(1);
    let target: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1 << 30);
    let hosts: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(16);
    let gpus: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(8);
    let nranks = hosts * gpus;
    let out = io::stdout();
    let mut w = BufWriter::with_capacity(1 << 20, out.lock());
    let mut written: u64 = 0;
    // A small xorshift keeps the output deterministic without a dependency.
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut line = String::with_capacity(256);
    // Init block of every rank first, as NCCL prints it.
    for h in 0..hosts {
        for g in 0..gpus {
            let pid = 1000 + g;
            let rank = h * gpus + g;
            let p = format!("gpu-node-{h:03}:{pid}:{pid} [{g}]");
            for msg in [
                String::from("NCCL INFO cudaDriverVersion 12040"),
                format!("NCCL INFO Bootstrap : Using eth0:10.0.{h}.{}<0>", 10 + g),
                String::from("NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin."),
                String::from("NCCL INFO NCCL_IB_HCA set by environment to mlx5"),
                format!("NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB [RO]; OOB eth0:10.0.{h}.{}<0>", 10 + g),
                String::from("NCCL INFO Using network IB"),
                String::from("NCCL INFO NCCL version 2.21.5+cuda12.4"),
                format!("NCCL INFO comm 0x55f90cbfd740 rank {rank} nranks {nranks} cudaDev {g} nvmlDev {g} busId {:x}000 commId 0x795b968dc454cfee - Init START", 0x18 + g * 0x10),
            ] {
                line.clear();
                line.push_str(&p);
                line.push(' ');
                line.push_str(&msg);
                line.push('\n');
                w.write_all(line.as_bytes())?;
                written += line.len() as u64;
            }
        }
    }
    let mut ch = 0u32;
    while written < target {
        let r = (next() % u64::from(nranks)) as u32;
        let (h, g) = (r / gpus, r % gpus);
        let pid = 1000 + g;
        let tid = 2000 + (next() % 64) as u32;
        let peer = (r + gpus) % nranks;
        let kind = next() % 100;
        line.clear();
        use std::fmt::Write as _;
        let _ = match kind {
            0..=54 => writeln!(
                line,
                "gpu-node-{h:03}:{pid}:{tid} [{g}] NCCL INFO Channel {:02}/0 : {r}[{g}] -> {peer}[{}] [send] via NET/IB/{}/GDRDMA",
                ch % 32,
                peer % gpus,
                g / 2
            ),
            55..=79 => writeln!(
                line,
                "gpu-node-{h:03}:{pid}:{tid} [{g}] NCCL INFO Channel {:02}/0 : {r}[{g}] -> {}[{}] via P2P/CUMEM/read",
                ch % 32,
                h * gpus + (g + 1) % gpus,
                (g + 1) % gpus
            ),
            80..=89 => writeln!(
                line,
                "gpu-node-{h:03}:{pid}:{tid} [{g}] NCCL INFO Connected all rings, use ring PXN 0 GDR 1"
            ),
            90..=95 => writeln!(
                line,
                "[rank{r}]:[I1122 22:30:{:02}.{:06} ProcessGroupNCCL.cpp:2035] step {} loss {:.4}",
                next() % 60,
                next() % 1_000_000,
                next() % 100_000,
                (next() % 10_000) as f64 / 1000.0
            ),
            96..=98 => writeln!(
                line,
                "gpu-node-{h:03}:{pid}:{tid} [{g}] NCCL INFO 32 coll channels, 32 collnet channels, 16 nvls channels, 32 p2p channels, 32 p2p channels per peer"
            ),
            _ => writeln!(
                line,
                "gpu-node-{h:03}:{pid}:{tid} [{g}] transport/net_ib.cc:2126 NCCL WARN NET/IB : Got completion from peer 10.0.{}.{}<{}> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.{h}.{} remoteGids::ffff:10.0.{}.{}",
                peer / gpus,
                10 + peer % gpus,
                40000 + next() % 20000,
                10 + g,
                peer / gpus,
                10 + peer % gpus
            ),
        };
        ch = ch.wrapping_add(1);
        w.write_all(line.as_bytes())?;
        written += line.len() as u64;
    }
    w.flush()
}
