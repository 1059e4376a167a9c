//! What a failed perftest run printed, and why it failed. The patterns are the literal start of
//! perftest's own stderr format strings (`data/perftest-messages.tsv`, regenerated from a perftest
//! checkout by `scripts/perftest-messages.sh`; every pattern here is tested to occur there).

use std::sync::OnceLock;

use fabrik_model::{Evidence, Finding, Rule, Scope, Severity, Source};

/// The failure lines and their classes are model types: every renderer reads them.
pub use fabrik_model::perftest::{FailureClass, PerftestFailure};

/// One line for the rule's page.
pub fn title(c: FailureClass) -> &'static str {
    match c {
        FailureClass::Device => "perftest found no usable RDMA device",
        FailureClass::Port => "perftest's RDMA port is not ACTIVE",
        FailureClass::Gid => "perftest's two sides use GIDs of different types",
        FailureClass::Mtu => "perftest was given an MTU the port does not allow",
        FailureClass::Connect => "perftest's client could not connect to its server",
        FailureClass::Exchange => "perftest's key exchange between the two sides broke off",
        FailureClass::OptionsMismatch => "perftest's two sides run with different parameters",
        FailureClass::QpState => "the device refused a QP state change in perftest",
        FailureClass::Memory => "perftest could not register or allocate its buffers",
        FailureClass::Resources => "the device refused perftest's PD, CQ, QP or SRQ",
        FailureClass::Gpu => "perftest could not set up GPU memory",
        FailureClass::RdmaCm => "perftest's RDMA CM connection failed",
        FailureClass::Completion => "a perftest work request completed with an error",
        FailureClass::Timeout => "perftest's server heard nothing from the client",
        FailureClass::Usage => "perftest refused its command line",
        FailureClass::BelowLimit => "perftest's result was below the given limit",
    }
}

/// The rule pages of the failure classes (`fabrik rules`, `fabrik explain FAB-BENCH-PT-QP`),
/// made from the classes themselves so that a finding and its page say the same.
pub fn rules() -> &'static [Rule] {
    static SOURCES: [Source; 1] = [Source {
        title: "linux-rdma/perftest: the failure messages of every release (data/perftest-messages.tsv)",
        url: "https://github.com/linux-rdma/perftest",
    }];
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES.get_or_init(|| {
        FailureClass::ALL
            .iter()
            .map(|&c| Rule {
                id: c.rule(),
                severity: Severity::Error,
                scope: Scope::Log,
                title: title(c),
                checks: "The failure messages a perftest run (ib_write_bw, ib_send_lat, ...) printed, matched by the literal start of perftest's own format strings; generic follow-up lines count as evidence of the cause before them.",
                why: cause(c),
                evidence: "The failure lines perftest printed, with how often each repeated.",
                fix: fix(c),
                sources: &SOURCES,
            })
            .collect()
    })
}

/// What the failure means, for the finding's message.
pub fn cause(c: FailureClass) -> &'static str {
    match c {
        FailureClass::Device => "perftest found no usable RDMA device: none is registered, the one named with -d does not exist, or its context could not be opened (driver not loaded, /dev/infiniband not visible in the container)",
        FailureClass::Port => "the RDMA port perftest was given is not ACTIVE (cable, switch port, subnet manager for InfiniBand, or the netdev is down for RoCE)",
        FailureClass::Gid => "the GIDs of the two sides are of different types (RoCE v1 against v2, or IPv4 against IPv6), so no path can be built between them",
        FailureClass::Mtu => "the MTU asked for is not one the port or the transport allows",
        FailureClass::Connect => "the client could not open perftest's TCP connection to the server (server not started, wrong address or port, a firewall, or a host name that does not resolve)",
        FailureClass::Exchange => "the TCP exchange of QP numbers, keys and addresses broke off: the other side exited (often with its own error) or runs a different test or perftest version",
        FailureClass::OptionsMismatch => "client and server were started with different parameters, which perftest compares before the run",
        FailureClass::QpState => "the device refused a QP state change (INIT/RTR/RTS): the path to the peer is wrong, most often a GID index that carries no address or the wrong RoCE version, an MTU above the port's, or a port that is down",
        FailureClass::Memory => "registering or allocating the test buffers failed: locked memory (ulimit -l) too small, hugepages not configured, or GPU memory that the NIC cannot register (no nvidia-peermem / dma-buf)",
        FailureClass::Resources => "the device refused to create a PD, CQ, QP or SRQ: queue depths above the device's limits, resources exhausted, or locked memory too small",
        FailureClass::Gpu => "GPU memory for GPUDirect could not be set up: the CUDA/ROCm runtime did not load or the device could not be opened",
        FailureClass::RdmaCm => "RDMA CM (-R) could not resolve or connect the peer: the address is not on an RDMA-capable interface, rdma_cm/rdma_ucm is not loaded, or the peer is not listening",
        FailureClass::Completion => "a work request completed with an error during the run: the peer stopped, the path drops packets (transport retry exceeded), or the remote buffer was not accessible",
        FailureClass::Timeout => "the server got no message from the client within perftest's wait and gave up",
        FailureClass::Usage => "perftest rejected its command line or the combination of options",
        FailureClass::BelowLimit => "the measured result was below the limit given on the command line",
    }
}

/// What to do about a failure of this class.
pub fn fix(c: FailureClass) -> &'static str {
    match c {
        FailureClass::Device => "List the devices with `ibv_devices`/`ibv_devinfo`; load the driver (`modprobe mlx5_ib`), pass an existing device with `-d`, and in a container expose /dev/infiniband and the RDMA device plugin resource.",
        FailureClass::Port => "Check `ibstat`/`ibv_devinfo` for State Active and LinkUp; reseat the cable or fix the switch port; on InfiniBand make sure a subnet manager runs; on RoCE bring the netdev up; or pick an active port with `-i`.",
        FailureClass::Gid => "Use the same GID type on both sides: pick on each host the RoCE v2 GID index that carries an IPv4 address (`show_gids`) and pass it with `-x`.",
        FailureClass::Mtu => "Pass an MTU the port supports with `-m` (256-4096 for IB verbs; check `ibv_devinfo` active_mtu) or leave it to the port default.",
        FailureClass::Connect => "Start the server first, then the client with the server's address; use the same `-p` port on both; open that TCP port in the firewall; check that the host name resolves.",
        FailureClass::Exchange => "Read the other side's output for its own error first; run the same test and perftest version with the same options on both sides.",
        FailureClass::OptionsMismatch => "Start both sides with the same options (test, size, connection type, queue pairs, MTU) as named in the mismatch line.",
        FailureClass::QpState => "On RoCE pass `-x` with the RoCE v2 GID index that carries the host's IPv4 address (`show_gids`), on both sides; keep `-m` at or below the port's active MTU; check that both ports are Active and can reach each other (same subnet/VLAN, or routed with RoCE v2).",
        FailureClass::Memory => "Raise the locked-memory limit (`ulimit -l unlimited`, limits.conf, or `--ulimit memlock=-1` in containers); for `--use_cuda` load nvidia-peermem or use `--use_cuda_dmabuf`; configure hugepages if asked for.",
        FailureClass::Resources => "Lower `-t`/`-r` queue depths or `-q` QPs to what `ibv_devinfo -v` reports; raise the locked-memory limit; check that no stale processes hold the device's resources.",
        FailureClass::Gpu => "Check that the CUDA/ROCm runtime loads (nvidia-smi / rocm-smi work, the library path is set) and that the GPU index given exists.",
        FailureClass::RdmaCm => "With `-R`, give the server the IP address of the RDMA netdev (`ibdev2netdev`), load rdma_cm and rdma_ucm, and start the server first.",
        FailureClass::Completion => "Read the status: RETRY_EXC_ERR (12) means packets are lost on the path (cable, PFC/ECN, wrong GID or a peer that died), REM_ACCESS_ERR (10) a buffer the peer did not register, WR_FLUSH_ERR (5) errors after the first one; check the link and the peer's output.",
        FailureClass::Timeout => "Check that the client runs and reaches the server; read the client's output for its own error.",
        FailureClass::Usage => "Correct the options as the message says (`ib_write_bw --help` lists them for this version).",
        FailureClass::BelowLimit => "Investigate the link (rate, errors, PCIe placement) or adjust the limit.",
    }
}

/// Start of each perftest stderr message (literal text up to its first conversion) and its
/// class. Order matters only where one pattern contains another: the first match wins.
const PATTERNS: &[(&str, FailureClass)] = &[
    // Devices and contexts.
    ("No IB devices found", FailureClass::Device),
    ("IB device ", FailureClass::Device),
    (
        "Unable to find the Infiniband/RoCE device",
        FailureClass::Device,
    ),
    ("Did not detect devices", FailureClass::Device),
    (
        "If device exists, check if driver is up",
        FailureClass::Device,
    ),
    ("Failed to get IB devices list", FailureClass::Device),
    ("Couldn't get context for the device", FailureClass::Device),
    ("Couldn't open IB device ", FailureClass::Device),
    ("Couldn't get device attributes", FailureClass::Device),
    ("Failed to query device attributes", FailureClass::Device),
    ("Failed to query device capabilities", FailureClass::Device),
    ("Couldn't query device capabilities", FailureClass::Device),
    // Ports and GIDs.
    ("Port number ", FailureClass::Port),
    ("Unable to query port ", FailureClass::Port),
    ("Error when trying to query port", FailureClass::Port),
    ("Couldn't set the link layer", FailureClass::Port),
    (
        "Raw Etherent test can only run on Ethernet link",
        FailureClass::Port,
    ),
    (
        "Found Incompatibility issue with GID types",
        FailureClass::Gid,
    ),
    (
        "Please Try to use a different IP version",
        FailureClass::Gid,
    ),
    ("Unable to validata PKey Index", FailureClass::Port),
    // MTU.
    ("Invalid MTU", FailureClass::Mtu),
    ("Couldn't set Eth MTU", FailureClass::Mtu),
    ("Please choose mtu ", FailureClass::Mtu),
    (
        "Max message size in UD cannot be greater than MTU",
        FailureClass::Mtu,
    ),
    // The out-of-band TCP connection and the key exchange.
    ("Couldn't connect to ", FailureClass::Connect),
    (
        "Unable to open file descriptor for socket connection",
        FailureClass::Connect,
    ),
    (
        "Unable to init the socket connection",
        FailureClass::Connect,
    ),
    ("Unable to set up socket connection", FailureClass::Connect),
    ("Couldn't listen to port ", FailureClass::Connect),
    ("Failed to bind socket", FailureClass::Connect),
    ("Name or service not known for ", FailureClass::Connect),
    (
        "Temporary failure in name resolution for ",
        FailureClass::Connect,
    ),
    (
        "No address associated with hostname for ",
        FailureClass::Connect,
    ),
    ("Unable to read from socket/rdam_cm", FailureClass::Exchange),
    ("Unable to read from socket/rdma_cm", FailureClass::Exchange),
    ("Unable to read to socket/rdam_cm", FailureClass::Exchange),
    ("Unable to read to socket/rdma_cm", FailureClass::Exchange),
    (
        "Unable to write from socket/rdam_cm",
        FailureClass::Exchange,
    ),
    (
        "Unable to write from socket/rdma_cm",
        FailureClass::Exchange,
    ),
    ("Unable to write to socket/rdam_cm", FailureClass::Exchange),
    ("Unable to write to socket/rdma_cm", FailureClass::Exchange),
    ("Couldn't read remote address", FailureClass::Exchange),
    ("Couldn't send local address", FailureClass::Exchange),
    ("Couldn't read reports", FailureClass::Exchange),
    ("Couldn't send reports", FailureClass::Exchange),
    ("Couldn't write to socket", FailureClass::Exchange),
    (
        "Failed to exchange data between server and clients",
        FailureClass::Exchange,
    ),
    (
        "Failed to exchange negotiation parameters",
        FailureClass::Exchange,
    ),
    (
        "Failed to exchange Cache Line Size data",
        FailureClass::Exchange,
    ),
    ("Failed to exchange Page Size data", FailureClass::Exchange),
    ("Failed to negotiate parameters", FailureClass::Exchange),
    (
        "Failed to sync between server and client",
        FailureClass::Exchange,
    ),
    (
        "Failed to close connection between server and client",
        FailureClass::Exchange,
    ),
    ("Unable to send my QP number", FailureClass::Exchange),
    ("Couldn't post send my QP number", FailureClass::Exchange),
    (
        "Unable to set up my IB connection parameters",
        FailureClass::Exchange,
    ),
    (" mismatch: local=", FailureClass::OptionsMismatch),
    // QP state changes.
    ("Failed to modify QP ", FailureClass::QpState),
    (
        "Unable to Connect the HCA's through the link",
        FailureClass::QpState,
    ),
    // Memory.
    ("Couldn't allocate MR", FailureClass::Memory),
    ("Failed to create MR", FailureClass::Memory),
    ("Couldn't create null MR", FailureClass::Memory),
    ("Couldn't allocate work buf", FailureClass::Memory),
    ("Cannot Allocate", FailureClass::Memory),
    ("Failed to allocate hugepage", FailureClass::Memory),
    ("Failed to init memory", FailureClass::Memory),
    ("Failed to allocate device memory", FailureClass::Memory),
    // Verbs resources.
    ("Couldn't allocate PD", FailureClass::Resources),
    ("Couldn't create CQ", FailureClass::Resources),
    ("Failed to create CQs", FailureClass::Resources),
    ("Couldn't create SRQ", FailureClass::Resources),
    ("Couldn't create rdma QP", FailureClass::Resources),
    ("Couldn't create rdma new QP", FailureClass::Resources),
    ("Couldn't create rdma old QP", FailureClass::Resources),
    ("Failed to create QP", FailureClass::Resources),
    ("Couldn't create IB resources", FailureClass::Resources),
    (
        "Unable to create the resources needed by comm struct",
        FailureClass::Resources,
    ),
    (
        "Couldn't create completion channel",
        FailureClass::Resources,
    ),
    ("Failed to create AH", FailureClass::Resources),
    (
        "Unable to create address handler for UD QP",
        FailureClass::Resources,
    ),
    // GPU memory.
    ("Couldn't init GPU context", FailureClass::Gpu),
    ("Couldn't initialize ROCm device", FailureClass::Gpu),
    ("Failed to load CUDA", FailureClass::Gpu),
    ("DMA-BUF is not supported on this GPU", FailureClass::Gpu),
    // RDMA CM.
    ("rdma_bind_addr failed", FailureClass::RdmaCm),
    ("rdma_resolve_addr failed", FailureClass::RdmaCm),
    ("rdma_resolve_route failed", FailureClass::RdmaCm),
    ("rdma_create_id failed", FailureClass::RdmaCm),
    ("rdma_create_event_channel failed", FailureClass::RdmaCm),
    ("rdma_listen failed", FailureClass::RdmaCm),
    ("rdma_get_cm_events failed", FailureClass::RdmaCm),
    ("Function rdma_connect failed", FailureClass::RdmaCm),
    ("Function rdma_accept failed", FailureClass::RdmaCm),
    ("RDMA CM event error", FailureClass::RdmaCm),
    ("Unexpected CM event", FailureClass::RdmaCm),
    ("unexpected CM event", FailureClass::RdmaCm),
    ("Failed to connect RDMA CM events", FailureClass::RdmaCm),
    (
        "Unable to perform rdma_client function",
        FailureClass::RdmaCm,
    ),
    (
        "Unable to perform rdma_server function",
        FailureClass::RdmaCm,
    ),
    ("Unable to create RDMA_CM resources", FailureClass::RdmaCm),
    ("Unable to create rdma resources", FailureClass::RdmaCm),
    ("Unable to create the rdma_resources", FailureClass::RdmaCm),
    // The run itself.
    ("Completion with error at ", FailureClass::Completion),
    ("Failed status", FailureClass::Completion),
    ("Bad wc status", FailureClass::Completion),
    ("Couldn't post send", FailureClass::Completion),
    ("Couldn't post recv", FailureClass::Completion),
    (
        "Error occured in run_iter function",
        FailureClass::Completion,
    ),
    (
        "Error occurred in run_iter function",
        FailureClass::Completion,
    ),
    ("Error occured while running", FailureClass::Completion),
    ("Error occurred while running", FailureClass::Completion),
    ("Failed to complete run_iter", FailureClass::Completion),
    ("Did not get Message for ", FailureClass::Timeout),
    (
        "Error: BW result is below bw limit",
        FailureClass::BelowLimit,
    ),
    (
        "Error: Msg rate  is below msg_rate limit",
        FailureClass::BelowLimit,
    ),
    // The command line.
    ("Invalid Command line", FailureClass::Usage),
    ("Invalid Command or flag", FailureClass::Usage),
    ("Parser function exited with Error", FailureClass::Usage),
    ("Invalid Connection type", FailureClass::Usage),
];

/// At most this many distinct failure lines are kept; repeats are counted on the first.
pub const MAX_FAILURES: usize = 64;

/// The class of a perftest stderr line, if it is one of perftest's failure messages.
pub fn classify(line: &str) -> Option<FailureClass> {
    let t = line.trim();
    // Every perftest message begins with a letter (after an optional `func: ` prefix), so
    // table rows and blank lines cost one byte test.
    if !t.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return None;
    }
    PATTERNS
        .iter()
        .find(|(p, _)| t.contains(p.trim_start()))
        .map(|(_, c)| *c)
}

/// `ibv_wc_status` names (rdma-core `libibverbs/verbs.h`, enum ibv_wc_status).
const WC_STATUS: &[&str] = &[
    "IBV_WC_SUCCESS",
    "IBV_WC_LOC_LEN_ERR",
    "IBV_WC_LOC_QP_OP_ERR",
    "IBV_WC_LOC_EEC_OP_ERR",
    "IBV_WC_LOC_PROT_ERR",
    "IBV_WC_WR_FLUSH_ERR",
    "IBV_WC_MW_BIND_ERR",
    "IBV_WC_BAD_RESP_ERR",
    "IBV_WC_LOC_ACCESS_ERR",
    "IBV_WC_REM_INV_REQ_ERR",
    "IBV_WC_REM_ACCESS_ERR",
    "IBV_WC_REM_OP_ERR",
    "IBV_WC_RETRY_EXC_ERR",
    "IBV_WC_RNR_RETRY_EXC_ERR",
    "IBV_WC_LOC_RDD_VIOL_ERR",
    "IBV_WC_REM_INV_RD_REQ_ERR",
    "IBV_WC_REM_ABORT_ERR",
    "IBV_WC_INV_EECN_ERR",
    "IBV_WC_INV_EEC_STATE_ERR",
    "IBV_WC_FATAL_ERR",
    "IBV_WC_RESP_TIMEOUT_ERR",
    "IBV_WC_GENERAL_ERR",
];

/// `Failed status 12: wr_id 0 syndrom 0x81`, `Failed status-transport retry counter exceeded (12): ...`
/// and `Bad wc status -- 12 -- 0` → `12 (IBV_WC_RETRY_EXC_ERR)`.
fn wc_status(line: &str) -> Option<String> {
    let rest = if let Some(r) = line.split("Failed status").nth(1) {
        match r.find('(') {
            Some(open) if r.starts_with('-') => &r[open + 1..],
            _ => r,
        }
    } else {
        line.split("Bad wc status").nth(1)?
    };
    let digits: String = rest
        .trim_start_matches([' ', '-'])
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let n: usize = digits.parse().ok()?;
    Some(match WC_STATUS.get(n) {
        Some(name) => format!("{n} ({name})"),
        None => n.to_string(),
    })
}

/// Collects failure lines with bounded memory.
#[derive(Debug, Default)]
pub struct FailureLog {
    /// The distinct failure lines, in the order first seen.
    pub failures: Vec<PerftestFailure>,
    /// Failure lines beyond [`MAX_FAILURES`] distinct ones.
    pub dropped: u64,
}

impl FailureLog {
    /// Records `line` if it is a perftest failure message; returns whether it was.
    pub fn line(&mut self, line: &str) -> bool {
        let Some(class) = classify(line) else {
            return false;
        };
        let t = line.trim();
        if let Some(f) = self.failures.iter_mut().find(|f| f.line == t) {
            f.count += 1;
            return true;
        }
        if self.failures.len() >= MAX_FAILURES {
            self.dropped += 1;
            return true;
        }
        let wc = (class == FailureClass::Completion)
            .then(|| wc_status(t))
            .flatten();
        self.failures.push(PerftestFailure {
            class,
            line: t.chars().take(512).collect(),
            wc_status: wc,
            count: 1,
        });
        true
    }
}

/// Messages perftest prints after another one as the generic end of a failed step: `Couldn't
/// get context for the device` also follows a failed parameter or port check
/// (`verify_params_with_device_context`), `Couldn't set the link layer` a port that is not
/// ACTIVE, `Failed to complete run_iter_*` a failed completion. Alone they are the cause;
/// after a specific message they are evidence of it.
const FOLLOW_UPS: &[&str] = &[
    "Couldn't get context for the device",
    "Couldn't set the link layer",
    "Failed to complete run_iter",
    "Error occured in run_iter function",
    "Error occurred in run_iter function",
    "Error occured while running",
    "Error occurred while running",
];

fn is_follow_up(f: &PerftestFailure) -> bool {
    FOLLOW_UPS.iter().any(|p| f.line.contains(p))
}

/// One error finding per cause class, in the order the run met them, quoting its lines; the
/// generic follow-up lines go with the first specific cause when there is one.
pub fn findings(failures: &[PerftestFailure]) -> Vec<Finding> {
    let has_root = failures.iter().any(|f| !is_follow_up(f));
    let mut classes: Vec<FailureClass> = Vec::new();
    for f in failures {
        if has_root && is_follow_up(f) {
            continue;
        }
        if !classes.contains(&f.class) {
            classes.push(f.class);
        }
    }
    let first = classes.first().copied();
    classes
        .into_iter()
        .map(|class| {
            let lines: Vec<&PerftestFailure> = failures
                .iter()
                .filter(|f| {
                    if has_root && is_follow_up(f) {
                        Some(class) == first
                    } else {
                        f.class == class
                    }
                })
                .collect();
            let mut message = format!("perftest failed: {}", cause(class));
            if let Some(wc) = lines.iter().find_map(|f| f.wc_status.as_deref()) {
                message.push_str(&format!("; completion status {wc}"));
            }
            Finding {
                rule: class.rule().to_string(),
                severity: Severity::Error,
                subject: "perftest".to_string(),
                message,
                evidence: lines
                    .iter()
                    .map(|f| Evidence {
                        path: "perftest output".to_string(),
                        value: if f.count > 1 {
                            format!("{} (x{})", f.line, f.count)
                        } else {
                            f.line.clone()
                        },
                    })
                    .collect(),
                fix: fix(class).to_string(),
            }
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    const MESSAGES: &str = include_str!("../data/perftest-messages.tsv");

    /// Every pattern is the start of one of perftest's own messages, as its source writes it.
    #[test]
    fn every_pattern_is_a_perftest_message() {
        let gai = [
            "Name or service not known",
            "Temporary failure",
            "No address",
        ];
        for (p, _) in PATTERNS {
            if gai.iter().any(|g| p.starts_with(g)) {
                // gai_strerror text printed through perftest's `%s for %s:%d`.
                assert!(MESSAGES.contains("%s for %s:%d"));
                continue;
            }
            let p = p.trim();
            assert!(
                MESSAGES.lines().any(|m| m.contains(p)),
                "pattern {p:?} is in no perftest message"
            );
        }
    }

    /// Messages rendered from their format strings are classified.
    #[test]
    fn rendered_messages_classify() {
        let cases = [
            (
                " Couldn't connect to 192.168.1.2:18515",
                FailureClass::Connect,
            ),
            ("Failed to modify QP 1234 to RTR", FailureClass::QpState),
            (
                " Unable to Connect the HCA's through the link",
                FailureClass::QpState,
            ),
            (" Port number 1 state is Down", FailureClass::Port),
            ("No IB devices found", FailureClass::Device),
            ("IB device mlx5_9 not found", FailureClass::Device),
            (" Couldn't get context for the device", FailureClass::Device),
            (
                "ethernet_read_keys: Couldn't read remote address",
                FailureClass::Exchange,
            ),
            (" Unable to read to socket/rdma_cm", FailureClass::Exchange),
            (" Completion with error at client", FailureClass::Completion),
            (
                " Failed status 12: wr_id 0 syndrom 0x81",
                FailureClass::Completion,
            ),
            ("Couldn't allocate MR", FailureClass::Memory),
            (
                " MTU mismatch: local=4096, remote=1024",
                FailureClass::OptionsMismatch,
            ),
            (
                "Name or service not known for nodeb:18515",
                FailureClass::Connect,
            ),
        ];
        for (line, want) in cases {
            assert_eq!(classify(line), Some(want), "{line}");
        }
        assert_eq!(classify(" 65536      5000  11000.00  10000.00  0.16"), None);
        assert_eq!(classify(" Device         : mlx5_0"), None);
    }

    #[test]
    fn completion_status_is_named() {
        assert_eq!(
            wc_status("Failed status 12: wr_id 0 syndrom 0x81").as_deref(),
            Some("12 (IBV_WC_RETRY_EXC_ERR)")
        );
        assert_eq!(
            wc_status("Failed status-transport retry counter exceeded (12): wr_id 0 syndrom 0x81")
                .as_deref(),
            Some("12 (IBV_WC_RETRY_EXC_ERR)")
        );
        assert_eq!(
            wc_status("Bad wc status -- 5 -- 0").as_deref(),
            Some("5 (IBV_WC_WR_FLUSH_ERR)")
        );
    }

    #[test]
    fn repeats_are_counted_and_distinct_lines_capped() {
        let mut log = FailureLog::default();
        for _ in 0..1000 {
            log.line(" Completion with error at client");
        }
        for i in 0..1000 {
            log.line(&format!("Couldn't post send: qp {i} scnt=1"));
        }
        assert_eq!(log.failures[0].count, 1000);
        assert_eq!(log.failures.len(), MAX_FAILURES);
        assert_eq!(log.dropped, 1000 - (MAX_FAILURES as u64 - 1));
    }
}
