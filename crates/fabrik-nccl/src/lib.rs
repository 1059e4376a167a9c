//! NCCL knowledge: environment generation and platform profiles
