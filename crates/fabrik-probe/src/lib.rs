//! Reads a node's fabric from a root directory (live / or a snapshot) and captures snapshots
