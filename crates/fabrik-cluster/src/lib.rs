//! Ranks, rendezvous, collectives, all-pairs scheduling and reports
