//! Port and netdev counters over time: rates, top, Prometheus exporter, counter findings
