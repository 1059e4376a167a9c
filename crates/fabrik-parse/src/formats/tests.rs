//! The parsers on real-format text and arbitrary input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::Ipv4Addr;

use super::*;
use fabrik_model::{LinkRate, MemlockLimit, Pfc};
use proptest::prelude::*;
use std::collections::BTreeMap;

// The formats by the names these tests were written with.
fn parse_rate(t: &str) -> Option<LinkRate> {
    IbRate::parse(t)
}
fn parse_pci_speed(t: &str) -> Option<f64> {
    PciSpeed::parse(t)
}
fn parse_numa(t: &str) -> Option<Option<i32>> {
    NumaNode::parse(t)
}
fn parse_int_auto(t: &str) -> Option<u64> {
    DecimalOrHex::parse(t)
}
fn parse_mlnx_qos(t: &str, source: &str) -> Option<Pfc> {
    mlnx_qos::MlnxQos::parse(t).and_then(|q| q.pfc(source))
}
fn parse_lspci_acs(t: &str) -> BTreeMap<String, Vec<String>> {
    lspci::Lspci::parse(t).map(|l| l.acs()).unwrap_or_default()
}
fn parse_proc_modules(t: &str) -> Vec<(String, Option<u32>)> {
    ProcModules::parse(t).unwrap_or_default()
}
fn parse_memlock(t: &str) -> Option<MemlockLimit> {
    ProcLimits::parse(t)
}
fn parse_fib_trie_local(t: &str) -> Vec<Ipv4Addr> {
    FibTrieLocal::parse(t).unwrap_or_default()
}
fn parse_proc_route(t: &str) -> Vec<RouteEntry> {
    ProcRoute::parse(t).unwrap_or_default()
}
fn parse_if_inet6(t: &str) -> Vec<(String, String)> {
    IfInet6::parse(t).unwrap_or_default()
}
fn parse_ip_o_addr(t: &str) -> Vec<(String, String, String)> {
    IpOAddr::parse(t).unwrap_or_default()
}
fn parse_addresses_file(t: &str) -> Vec<(String, String, String)> {
    AddressesFile::parse(t).unwrap_or_default()
}
fn parse_nvidia_smi_topo(t: &str) -> BTreeMap<(usize, String), String> {
    nvidia_smi_topo::NvidiaSmiTopo::parse(t)
        .map(|f| f.gpu_nic_cells())
        .unwrap_or_default()
}
fn parse_os_release(t: &str, key: &str) -> Option<String> {
    OsRelease::parse(t).and_then(|m| m.get(key).cloned())
}
fn parse_ibv_devinfo_mtu(t: &str) -> BTreeMap<(String, u32), (Option<u32>, Option<u32>)> {
    ibv_devinfo::IbvDevinfo::parse(t)
        .map(|d| d.mtus())
        .unwrap_or_default()
}
fn parse_ofed_info(t: &str) -> Option<String> {
    OfedInfo::parse(t)
}
fn parse_nvidia_version(t: &str) -> Option<String> {
    NvidiaVersion::parse(t).and_then(|v| v.version)
}
fn parse_nvidia_open_module(t: &str) -> Option<bool> {
    NvidiaVersion::parse(t).and_then(|v| v.open_module)
}
fn parse_nvidia_gpu_information(t: &str) -> (Option<String>, Option<String>, Option<u32>) {
    NvidiaGpuInformation::parse(t).unwrap_or_default()
}
fn iommu_cmdline_flags(t: &str) -> Vec<String> {
    IommuCmdline::parse(t).unwrap_or_default()
}
use fabrik_model::gid::{ipv4_of_text as gid_ipv4, is_zero_text as gid_is_zero};

#[test]
fn rates_as_the_kernel_prints_them() {
    let r = parse_rate("400 Gb/sec (4X NDR)\n").unwrap();
    assert_eq!(r.gbps, Some(400.0));
    assert_eq!(r.width, Some(4));
    assert_eq!(r.speed.as_deref(), Some("NDR"));
    let sdr = parse_rate("2.5 Gb/sec (1X)").unwrap();
    assert_eq!(sdr.gbps, Some(2.5));
    assert_eq!(sdr.speed.as_deref(), Some("SDR"));
    let fdr10 = parse_rate("40 Gb/sec (4X FDR10)").unwrap();
    assert_eq!(fdr10.speed.as_deref(), Some("FDR10"));
    let junk = parse_rate("fast").unwrap();
    assert_eq!(junk.gbps, None);
    assert_eq!(junk.text, "fast");
    assert!(parse_rate("  \n").is_none());
}

#[test]
fn every_rate_form_of_rate_show() {
    // rate_show: deci-Gb/s per lane (SDR 25, DDR 50, QDR/FDR10 100, FDR 140, EDR 250,
    // HDR 500, NDR 1000, XDR 2000) × width, printed as `N[.5] Gb/sec (WX NAME)`.
    for (text, gbps, width, speed) in [
        ("2.5 Gb/sec (1X SDR)", 2.5, 1, "SDR"),
        ("10 Gb/sec (4X)", 10.0, 4, "SDR"),
        ("5 Gb/sec (1X DDR)", 5.0, 1, "DDR"),
        ("20 Gb/sec (4X DDR)", 20.0, 4, "DDR"),
        ("40 Gb/sec (4X QDR)", 40.0, 4, "QDR"),
        ("40 Gb/sec (4X FDR10)", 40.0, 4, "FDR10"),
        ("14 Gb/sec (1X FDR)", 14.0, 1, "FDR"),
        ("56 Gb/sec (4X FDR)", 56.0, 4, "FDR"),
        ("25 Gb/sec (1X EDR)", 25.0, 1, "EDR"),
        ("50 Gb/sec (2X EDR)", 50.0, 2, "EDR"),
        ("100 Gb/sec (4X EDR)", 100.0, 4, "EDR"),
        ("300 Gb/sec (12X EDR)", 300.0, 12, "EDR"),
        ("100 Gb/sec (2X HDR)", 100.0, 2, "HDR"),
        ("200 Gb/sec (4X HDR)", 200.0, 4, "HDR"),
        ("400 Gb/sec (8X HDR)", 400.0, 8, "HDR"),
        ("200 Gb/sec (2X NDR)", 200.0, 2, "NDR"),
        ("400 Gb/sec (4X NDR)", 400.0, 4, "NDR"),
        ("800 Gb/sec (4X XDR)", 800.0, 4, "XDR"),
    ] {
        let r = parse_rate(&format!("{text}\n")).unwrap();
        assert_eq!(r.gbps, Some(gbps), "{text}");
        assert_eq!(r.width, Some(width), "{text}");
        assert_eq!(r.speed.as_deref(), Some(speed), "{text}");
    }
    assert_eq!(parse_rate("Unknown\n").unwrap().gbps, None);
}

#[test]
fn topo_header_without_leading_whitespace() {
    let t = "GPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV12\tPIX\t0-23\t0\nGPU1\tNV12\t X \tSYS\t24-47\t1\n\nNIC Legend:\n\n  NIC0: mlx5_0\n";
    let m = parse_nvidia_smi_topo(t);
    assert_eq!(m[&(0, "mlx5_0".to_string())], "PIX");
    assert_eq!(m[&(1, "mlx5_0".to_string())], "SYS");
    assert_eq!(m.len(), 2);
}

#[test]
fn pci_speeds() {
    assert_eq!(parse_pci_speed("16.0 GT/s PCIe\n"), Some(16.0));
    assert_eq!(parse_pci_speed("8 GT/s"), Some(8.0));
    assert_eq!(parse_pci_speed("2.5 GT/s PCIe"), Some(2.5));
    assert_eq!(parse_pci_speed("Unknown"), None);
    assert_eq!(parse_numa("-1\n"), Some(None));
    assert_eq!(parse_numa("1"), Some(Some(1)));
    assert_eq!(parse_numa("x"), None);
}

#[test]
fn mlnx_qos_pfc_and_trust() {
    let text = "DCBX mode: OS controlled\nPriority trust state: dscp\ndscp2prio mapping:\n\tprio:0 dscp:07,06,05,04,03,02,01,00,\nCable len: 7\nPFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n\tenabled     0   0   0   1   0   0   0   0   \n\tbuffer      0   0   0   1   0   0   0   0   \ntc: 0 ratelimit: unlimited, tsa: vendor\n\t priority:  1\n";
    let pfc = parse_mlnx_qos(text, "fabrik/cmd/mlnx_qos-eth2.txt").unwrap();
    assert_eq!(pfc.enabled_priorities, vec![3]);
    assert_eq!(pfc.trust.as_deref(), Some("dscp"));
    let older = "PFC configuration:\n    priority    0   1   2   3   4   5   6   7\n    enabled     1   0   1   0   0   0   1   1\n";
    assert_eq!(
        parse_mlnx_qos(older, "x").unwrap().enabled_priorities,
        vec![0, 2, 6, 7]
    );
    assert!(parse_mlnx_qos("Netlink error\n", "x").is_none());
    let colons = "Priority trust state: pcp\nPFC configuration:\n        priority:  0   1   2   3   4   5   6   7\n        enabled:   0   0   0   0   1   0   0   0\n";
    let c = parse_mlnx_qos(colons, "x").unwrap();
    assert_eq!(c.enabled_priorities, vec![4]);
    assert_eq!(c.trust.as_deref(), Some("pcp"));
    let uneven = "PFC configuration:\n priority 0 1 2\n enabled 0 1\n";
    assert!(parse_mlnx_qos(uneven, "x").is_none());
    // The later layout (written from NVIDIA's QoS docs, not a capture): padded columns, a `buffer` row, tc blocks with indented
    // `priority:` lines after the table.
    let ofed5 = "DCBX mode: OS controlled\nPriority trust mode: pcp\nReceive buffer size (bytes): 130944,130944,0,0,0,0,0,0,\nCable len: 7\nPFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n\tenabled     0   0   0   1   0   0   0   0   \n\tbuffer      0   0   0   1   0   0   0   0   \ntc: 1 ratelimit: unlimited, tsa: vendor\n\t priority:  0\ntc: 0 ratelimit: unlimited, tsa: ets, bw: 100%\n\t priority:  1\n";
    let p = parse_mlnx_qos(ofed5, "x").unwrap();
    assert_eq!(p.enabled_priorities, vec![3]);
    assert_eq!(p.trust.as_deref(), Some("pcp"));
}

#[test]
fn lspci_acs_bits() {
    let text = "00:01.0 PCI bridge: Intel Corporation Device 352a (rev 04) (prog-if 00 [Normal decode])\n\tCapabilities: [220 v1] Access Control Services\n\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n\n0001:02:00.0 PCI bridge: PLX\n\t\tACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-\n";
    let acs = parse_lspci_acs(text);
    assert_eq!(
        acs["0000:00:01.0"],
        vec!["SrcValid", "ReqRedir", "CmpltRedir", "UpstreamFwd"]
    );
    assert!(acs["0001:02:00.0"].is_empty());
    // `lspci -nn` headers, indented pastes, and an ACSCtl line cut in two.
    let pasted = "\t0000:00:1c.1 PCI bridge [0604]: Intel Corporation Device [8086:7a39] (rev 11)\n\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ \nEgressCtrl+ DirectTrans-\n\tCapabilities: [370 v1] L1 PM Substates\n";
    let acs = parse_lspci_acs(pasted);
    assert_eq!(
        acs["0000:00:1c.1"],
        vec![
            "SrcValid",
            "ReqRedir",
            "CmpltRedir",
            "UpstreamFwd",
            "EgressCtrl"
        ]
    );
}

#[test]
fn modules_limits_routes() {
    let m = parse_proc_modules(
        "mlx5_ib 446464 0 - Live 0x0000000000000000\nib_uverbs 163840 2 rdma_ucm,mlx5_ib, Live 0x0\n",
    );
    assert_eq!(m[0], ("ib_uverbs".to_string(), Some(2)));
    assert_eq!(m[1], ("mlx5_ib".to_string(), Some(0)));
    let l = parse_memlock("Limit Soft Limit Hard Limit Units\nMax locked memory         8388608              unlimited            bytes\n").unwrap();
    assert_eq!(l.soft_bytes, Some(8388608));
    assert_eq!(l.hard_bytes, None);
    let r = parse_proc_route("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\neth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\neth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n");
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].gateway, Ipv4Addr::new(192, 0, 2, 1));
    assert_eq!(r[1].prefix_len(), 24);
    assert!(r[1].contains(Ipv4Addr::new(192, 0, 2, 2)));
}

#[test]
fn addresses() {
    let trie = "Main:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 0.0.0.0\n        /0 universe UNICAST\n     +-- 192.0.2.0/24 2 0 2\n           |-- 192.0.2.0\n              /24 link UNICAST\n           |-- 192.0.2.2\n              /32 host LOCAL\n        |-- 192.0.2.255\n           /32 link BROADCAST\nLocal:\n           |-- 192.0.2.2\n              /32 host LOCAL\n           |-- 127.0.0.1\n              /32 host LOCAL\n";
    assert_eq!(
        parse_fib_trie_local(trie),
        vec![Ipv4Addr::new(127, 0, 0, 1), Ipv4Addr::new(192, 0, 2, 2)]
    );
    let v6 = parse_if_inet6("fe8000000000000000fc00fffe000001 04 40 20 80     eth0\n00000000000000000000000000000001 01 80 10 80       lo\n");
    assert_eq!(
        v6[0],
        ("eth0".to_string(), "fe80::fc:ff:fe00:1/64".to_string())
    );
    assert_eq!(v6[1], ("lo".to_string(), "::1/128".to_string()));
    let ip = parse_ip_o_addr("1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever\n3: eth0@if7    inet6 fd00::2/64 scope global \\       valid_lft forever\n");
    assert_eq!(ip[0], ("eth0".into(), "inet6".into(), "fd00::2/64".into()));
    assert_eq!(ip[1], ("lo".into(), "inet".into(), "127.0.0.1/8".into()));
    let f = parse_addresses_file("eth0 inet 10.128.0.5/32\nbad line\nlo inet6 ::1/128\n");
    assert_eq!(f.len(), 2);
    assert_eq!(f[0], ("eth0".into(), "inet".into(), "10.128.0.5/32".into()));
}

#[test]
fn tool_outputs() {
    let dev = "hca_id:\tmlx5_0\n\ttransport:\t\t\tInfiniBand (0)\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tmax_mtu:\t\t4096 (5)\n\t\t\tactive_mtu:\t\t1024 (3)\n";
    let m = parse_ibv_devinfo_mtu(dev);
    assert_eq!(m[&("mlx5_0".to_string(), 1)], (Some(1024), Some(4096)));
    assert_eq!(
        parse_ofed_info("MLNX_OFED_LINUX-5.8-3.0.7.0:\n").as_deref(),
        Some("MLNX_OFED_LINUX-5.8-3.0.7.0")
    );
    assert_eq!(parse_ofed_info("sh: ofed_info: not found"), None);
    assert_eq!(
        parse_nvidia_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\nGCC version:  gcc version 12.2.0\n").as_deref(),
        Some("535.104.05")
    );
    assert_eq!(
        parse_nvidia_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue Mar  5 22:15:33 UTC 2024\n").as_deref(),
        Some("550.54.15")
    );
    assert_eq!(
        parse_nvidia_open_module("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  Thu Oct 19 18:56:32 UTC 2023\n"),
        Some(false)
    );
    assert_eq!(
        parse_nvidia_open_module("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue Mar  5 22:15:33 UTC 2024\n"),
        Some(true)
    );
    assert_eq!(
        parse_nvidia_open_module(
            "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  560.35.03  Release Build\n"
        ),
        Some(true)
    );
    assert_eq!(
        parse_nvidia_open_module("GCC version:  gcc version 12.2.0\n"),
        None
    );
    let info = parse_nvidia_gpu_information("Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 50\nGPU UUID: \t GPU-11111111-2222-3333-4444-555555555555\nDevice Minor: \t 3\n");
    assert_eq!(info.0.as_deref(), Some("NVIDIA H100 80GB HBM3"));
    assert_eq!(info.2, Some(3));
    assert_eq!(
        iommu_cmdline_flags("BOOT_IMAGE=/vmlinuz intel_iommu=on iommu=pt quiet -- iommu=off"),
        vec!["intel_iommu=on", "iommu=pt"]
    );
    assert_eq!(
        gid_ipv4("0000:0000:0000:0000:0000:ffff:c0a8:6401").as_deref(),
        Some("192.168.100.1")
    );
    assert_eq!(gid_ipv4("fe80:0000:0000:0000:0000:5eff:fe00:0001"), None);
    assert!(gid_is_zero("0000:0000:0000:0000:0000:0000:0000:0000\n"));
    assert_eq!(normalize_bdf("17:00.0").as_deref(), Some("0000:17:00.0"));
    assert!(!is_bdf("virtio2"));
    assert!(!is_bdf("pci0000:00"));
}

#[test]
fn nvidia_smi_topo_both_layouts() {
    let new_style = "\tGPU0\tGPU1\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \tNV18\tPIX\tSYS\t0-55,112-167\t0\t\tN/A\nGPU1\tNV18\t X \tSYS\tPXB\t56-111,168-223\t1\t\tN/A\nNIC0\tPIX\tSYS\t X \tSYS\t\t\t\t\nNIC1\tSYS\tPXB\tSYS\t X \t\t\t\t\n\nLegend:\n\n  X    = Self\n  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n\nNIC Legend:\n\n  NIC0: mlx5_0\n  NIC1: mlx5_1\n";
    let m = parse_nvidia_smi_topo(new_style);
    assert_eq!(m[&(0, "mlx5_0".to_string())], "PIX");
    assert_eq!(m[&(1, "mlx5_1".to_string())], "PXB");
    assert_eq!(m[&(0, "mlx5_1".to_string())], "SYS");
    assert_eq!(m.len(), 4);
    let old_style = "        GPU0    GPU1    mlx5_0  mlx5_1  CPU Affinity\nGPU0     X      NV6     PIX     PXB     0-23,48-71\nGPU1    NV6      X      PXB     PIX     0-23,48-71\nmlx5_0  PIX     PXB      X      PIX\n";
    let m = parse_nvidia_smi_topo(old_style);
    assert_eq!(m[&(1, "mlx5_1".to_string())], "PIX");
    assert_eq!(m[&(0, "mlx5_1".to_string())], "PXB");
    assert!(parse_nvidia_smi_topo("NVIDIA-SMI has failed").is_empty());
}

proptest! {
    #[test]
    fn parsers_never_panic(s in "\\PC*") {
        let _ = parse_rate(&s);
        let _ = parse_pci_speed(&s);
        let _ = parse_numa(&s);
        let _ = parse_int_auto(&s);
        let _ = parse_mlnx_qos(&s, "x");
        let _ = parse_lspci_acs(&s);
        let _ = parse_proc_modules(&s);
        let _ = parse_memlock(&s);
        let _ = parse_fib_trie_local(&s);
        let _ = parse_proc_route(&s);
        let _ = parse_if_inet6(&s);
        let _ = parse_ip_o_addr(&s);
        let _ = parse_addresses_file(&s);
        let _ = parse_nvidia_smi_topo(&s);
        let _ = parse_os_release(&s, "PRETTY_NAME");
        let _ = parse_ibv_devinfo_mtu(&s);
        let _ = parse_ofed_info(&s);
        let _ = parse_nvidia_version(&s);
        let _ = parse_nvidia_open_module(&s);
        let _ = parse_nvidia_gpu_information(&s);
        let _ = iommu_cmdline_flags(&s);
        let _ = gid_ipv4(&s);
        let _ = normalize_bdf(&s);
    }

    #[test]
    fn structured_inputs_never_panic(
        lines in proptest::collection::vec(
            prop_oneof![
                Just("PFC configuration:".to_string()),
                "\tpriority( +[0-9]{1,3}){0,9}",
                "\tenabled( +[0-9x]){0,9}",
                "[0-9a-f:.]{0,14} PCI bridge",
                "\t\tACSCtl:\t([A-Za-z]{0,8}[+-] ?){0,8}",
                "Max locked memory +[0-9a-z]{0,12} +[0-9a-z]{0,12}",
                " *\\|-- [0-9.]{0,16}",
                " */[0-9]{0,3} host LOCAL",
                "[a-z0-9]{0,6}\t[0-9A-F]{0,9}\t[0-9A-F]{0,9}\t[0-9A-F]{0,5}\t0\t0\t0\t[0-9A-F]{0,9}",
                "[a-z_0-9]{0,8} [0-9]{0,6} [0-9-]{0,4} [-a-z_,]{0,10} Live 0x0",
                "[ \t]*(rate|port|hca_id|active_mtu): *[0-9a-z_ ()]{0,10}",
            ],
            0..24,
        )
    ) {
        let s = lines.join("\n");
        let _ = parse_mlnx_qos(&s, "x");
        let _ = parse_lspci_acs(&s);
        let _ = parse_memlock(&s);
        let _ = parse_fib_trie_local(&s);
        let _ = parse_proc_route(&format!("header\n{s}"));
        let _ = parse_proc_modules(&s);
        let _ = parse_ibv_devinfo_mtu(&s);
    }

    /// `nvidia-smi topo -m` as drivers print it (tabs, or space padding), with or without
    /// a NIC legend and the header's leading whitespace: every GPU×NIC cell comes back.
    #[test]
    fn topo_matrices_roundtrip(
        cells in proptest::collection::vec(
            proptest::collection::vec(
                prop_oneof![Just("PIX"), Just("PXB"), Just("PHB"), Just("NODE"), Just("SYS")],
                0..10,
            ),
            1..9,
        ),
        tabs in proptest::bool::ANY,
        legend in proptest::bool::ANY,
        indent in proptest::bool::ANY,
    ) {
        let gpus = cells.len();
        let nics = cells.iter().map(Vec::len).min().unwrap_or(0);
        let sep = if tabs { "\t" } else { "    " };
        let nic_col = |j: usize| if legend { format!("NIC{j}") } else { format!("mlx5_{j}") };
        let mut head: Vec<String> = (0..gpus).map(|i| format!("GPU{i}")).collect();
        head.extend((0..nics).map(nic_col));
        head.push("CPU Affinity".into());
        head.push("NUMA Affinity".into());
        let mut text = format!("{}{}\n", if indent { sep } else { "" }, head.join(sep));
        for (i, row) in cells.iter().enumerate() {
            let mut words = vec![format!("GPU{i}")];
            words.extend((0..gpus).map(|k| if k == i { " X ".to_string() } else { "NV18".to_string() }));
            words.extend(row.iter().take(nics).map(|c| c.to_string()));
            words.push("0-47,96-143".into());
            words.push("0".into());
            text.push_str(&words.join(sep));
            text.push('\n');
        }
        if legend {
            text.push_str("\nLegend:\n\n  X    = Self\n\nNIC Legend:\n\n");
            for j in 0..nics {
                text.push_str(&format!("  NIC{j}: mlx5_{j}\n"));
            }
        }
        let m = parse_nvidia_smi_topo(&text);
        prop_assert_eq!(m.len(), gpus * nics);
        for (i, row) in cells.iter().enumerate() {
            for (j, c) in row.iter().take(nics).enumerate() {
                prop_assert_eq!(m.get(&(i, format!("mlx5_{j}"))).map(String::as_str), Some(*c));
            }
        }
    }

    #[test]
    fn open_module_line_roundtrip(
        arch in prop_oneof![Just("x86_64"), Just("aarch64"), Just("ppc64le")],
        v in (100u32..999, 0u32..200, proptest::option::of(0u32..99)),
        open in proptest::bool::ANY,
    ) {
        let ver = match v.2 {
            Some(p) => format!("{}.{}.{p:02}", v.0, v.1),
            None => format!("{}.{}", v.0, v.1),
        };
        let line = if open {
            format!("NVRM version: NVIDIA UNIX Open Kernel Module for {arch}  {ver}  Release Build  (dvs-builder@U16)  Tue Mar  5 22:15:33 UTC 2024\n")
        } else {
            format!("NVRM version: NVIDIA UNIX {arch} Kernel Module  {ver}  Thu Oct 19 18:56:32 UTC 2023\n")
        };
        prop_assert_eq!(parse_nvidia_open_module(&line), Some(open));
        prop_assert_eq!(parse_nvidia_version(&line), Some(ver));
    }

    #[test]
    fn rate_numbers_roundtrip(g in 0u32..2000, w in 1u32..32) {
        let r = parse_rate(&format!("{g} Gb/sec ({w}X HDR)")).expect("text");
        prop_assert_eq!(r.gbps, Some(f64::from(g)));
        prop_assert_eq!(r.width, Some(w));
    }
}
