//! Launch files (shell, docker, k8s, slurm, torchrun, hostfile) rendered from an NCCL environment
