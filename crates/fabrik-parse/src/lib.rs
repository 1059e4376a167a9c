//! Parsers for NCCL_DEBUG logs, nccl-tests tables and perftest reports
