//! Set-up frames (pure): what one end tells the other before connecting, in a fixed
//! little-endian layout.

use super::{MAX_CHUNK, MAX_SLOTS, MIN_CHUNK};
use crate::device::mtu_bytes_to_enum;

pub(super) const MAGIC: &[u8; 4] = b"FBKP";
pub(super) const VERSION: u16 = 1;
/// Bytes of an encoded [`SetupFrame`].
pub const SETUP_LEN: usize = 64;
pub(super) const READY: &[u8; 8] = b"FBKRDY01";
pub(super) const FLAG_ETHERNET: u16 = 1;

/// What one end tells the other before connecting: its QP, path, receive slots, and where its
/// credit word lives. Fixed 64 bytes, little-endian, so a reader never allocates on its say-so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetupFrame {
    /// This end's QP number.
    pub qpn: u32,
    /// This end's initial packet sequence number.
    pub psn: u32,
    /// This end's LID (IB).
    pub lid: u16,
    /// Whether this end's link layer is Ethernet (RoCE).
    pub ethernet: bool,
    /// Active MTU in bytes; the two ends use the smaller.
    pub mtu: u32,
    /// This end's GID (raw bytes).
    pub gid: [u8; 16],
    /// The receive slots this end keeps posted: the peer may send at most `recv_slots` chunks of
    /// at most `recv_chunk` bytes ahead of the credits.
    pub recv_chunk: u32,
    /// How many receive slots this end keeps posted.
    pub recv_slots: u32,
    /// Address of this end's credit word, for the peer's RDMA writes.
    pub credit_addr: u64,
    /// Remote key of the credit word.
    pub credit_rkey: u32,
}

impl SetupFrame {
    /// The frame in its fixed 64-byte little-endian layout.
    pub fn encode(&self) -> [u8; SETUP_LEN] {
        let mut b = [0u8; SETUP_LEN];
        b[0..4].copy_from_slice(MAGIC);
        b[4..6].copy_from_slice(&VERSION.to_le_bytes());
        let flags = if self.ethernet { FLAG_ETHERNET } else { 0 };
        b[6..8].copy_from_slice(&flags.to_le_bytes());
        b[8..12].copy_from_slice(&self.qpn.to_le_bytes());
        b[12..16].copy_from_slice(&self.psn.to_le_bytes());
        b[16..18].copy_from_slice(&self.lid.to_le_bytes());
        b[20..24].copy_from_slice(&self.mtu.to_le_bytes());
        b[24..40].copy_from_slice(&self.gid);
        b[40..44].copy_from_slice(&self.recv_chunk.to_le_bytes());
        b[44..48].copy_from_slice(&self.recv_slots.to_le_bytes());
        b[48..56].copy_from_slice(&self.credit_addr.to_le_bytes());
        b[56..60].copy_from_slice(&self.credit_rkey.to_le_bytes());
        b
    }

    /// Parses and bounds-checks a peer's frame; the message says what was wrong.
    pub fn decode(b: &[u8]) -> Result<SetupFrame, String> {
        if b.len() != SETUP_LEN {
            return Err(format!(
                "set-up frame of {} bytes, expected {SETUP_LEN}",
                b.len()
            ));
        }
        if &b[0..4] != MAGIC {
            return Err("not a fabrik RDMA pipe set-up frame (bad magic)".into());
        }
        let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let version = u16_at(4);
        if version != VERSION {
            return Err(format!(
                "pipe protocol version {version}, this end speaks {VERSION}"
            ));
        }
        let mut gid = [0u8; 16];
        gid.copy_from_slice(&b[24..40]);
        let mut addr = [0u8; 8];
        addr.copy_from_slice(&b[48..56]);
        let f = SetupFrame {
            qpn: u32_at(8),
            psn: u32_at(12),
            lid: u16_at(16),
            ethernet: u16_at(6) & FLAG_ETHERNET != 0,
            mtu: u32_at(20),
            gid,
            recv_chunk: u32_at(40),
            recv_slots: u32_at(44),
            credit_addr: u64::from_le_bytes(addr),
            credit_rkey: u32_at(56),
        };
        if f.qpn == 0 || f.qpn > 0xff_ffff {
            return Err(format!("QP number {:#x} is not a 24-bit QPN", f.qpn));
        }
        if mtu_bytes_to_enum(f.mtu).is_none() {
            return Err(format!("MTU {} is not an RDMA MTU", f.mtu));
        }
        let chunk = f.recv_chunk as usize;
        if !(MIN_CHUNK..=MAX_CHUNK).contains(&chunk) {
            return Err(format!(
                "receive chunk {chunk} outside {MIN_CHUNK}..={MAX_CHUNK}"
            ));
        }
        if !(1..=MAX_SLOTS).contains(&f.recv_slots) {
            return Err(format!(
                "receive slots {} outside 1..={MAX_SLOTS}",
                f.recv_slots
            ));
        }
        if f.credit_addr == 0 {
            return Err("null credit address".into());
        }
        Ok(f)
    }
}
