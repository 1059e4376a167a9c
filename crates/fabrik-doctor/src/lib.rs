//! fabrik's rule catalog: nodes and planned NCCL environments to explained findings
