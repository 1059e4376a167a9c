//! `fabrik doctor` on probed roots whose evidence below the link state comes from real captures
//! (fixtures/commands pastes copied into a node fixture's capture directory, as `fabrik
//! snapshot` would save them; ground truth in fixtures/commands/README.md): the single-node
//! rules fire on a probed node, the cross-node rules name the node and port that differ, and
//! the unchanged trees stay quiet.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

mod support;

use fabrik_testbed::fixtures::repo;

/// A copy of node fixture `name` under `dir/as_name`, its hostname set to `as_name`.
fn tree(dir: &Path, name: &str, as_name: &str) -> PathBuf {
    let dst = dir.join(as_name);
    let ok = std::process::Command::new("cp")
        .arg("-a")
        .arg(repo().join("fixtures/nodes").join(name))
        .arg(&dst)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let host = dst.join("proc/sys/kernel/hostname");
    std::fs::create_dir_all(host.parent().unwrap()).unwrap();
    std::fs::write(host, format!("{as_name}\n")).unwrap();
    dst
}

fn capture(root: &Path, name: &str, text: &str) {
    let cmd = root.join("fabrik/cmd");
    std::fs::create_dir_all(&cmd).unwrap();
    std::fs::write(cmd.join(format!("{name}.txt")), text).unwrap();
}

fn paste(file: &str) -> String {
    std::fs::read_to_string(repo().join("fixtures/commands").join(file)).unwrap()
}

fn doctor(roots: &[&Path]) -> Value {
    let mut args: Vec<String> = vec!["doctor".into()];
    for r in roots {
        args.push("--root".into());
        args.push(r.to_string_lossy().into_owned());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    support::json_of(&args).1
}

fn findings<'a>(report: &'a Value, rule: &str) -> Vec<&'a Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == rule)
        .collect()
}

fn rules(report: &Value) -> BTreeSet<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_probed_kernel_log_fires_the_kernel_log_rules() {
    let dir = tempfile::tempdir().unwrap();
    let root = tree(dir.path(), "roce-dualport", "gpu01");
    let quiet = doctor(&[&root]);
    assert!(
        !rules(&quiet).iter().any(|r| r.starts_with("FAB-KLOG-")),
        "{quiet}"
    );
    capture(
        &root,
        "dmesg",
        &paste("dmesg/02-mlx5-vdpa-firmware-health-compromised-six-functions-email.txt"),
    );
    let report = doctor(&[&root]);
    let health = findings(&report, "FAB-KLOG-002");
    assert_eq!(health.len(), 6, "{report}");
}

#[test]
fn a_probed_link_capture_fires_the_link_rules_on_an_injected_fault() {
    let dir = tempfile::tempdir().unwrap();
    let root = tree(dir.path(), "roce-dualport", "gpu01");
    // A real mlxlink run of two BlueField-3 ports, both clean.
    let text = paste("mstlink/01-bluefield3-two-ports-module-and-counters-prompts.txt");
    capture(&root, "mstlink-0000:3b:00.0", &text);
    let report = doctor(&[&root]);
    assert!(
        !rules(&report).iter().any(|r| r.starts_with("FAB-LINK-00")),
        "a healthy link is quiet: {report}"
    );
    // The first port's errors left after FEC.
    let line = "Effective Physical Errors          : 0";
    assert!(text.contains(line));
    let faulty = text.replacen(line, "Effective Physical Errors          : 12", 1);
    capture(&root, "mstlink-0000:3b:00.0", &faulty);
    let report = doctor(&[&root]);
    let f = findings(&report, "FAB-LINK-001");
    assert_eq!(f.len(), 1, "{report}");
    assert_eq!(f[0]["severity"], "error");
    assert!(
        f[0]["subject"]
            .as_str()
            .unwrap()
            .contains("mt41692_pciconf0"),
        "{}",
        f[0]
    );
}

/// Four nodes of one ConnectX model: one has relaxed ordering left at `per_mkey` in its
/// firmware where the others force it; one has a port whose raw BER is three decades above its
/// peers'.
#[test]
fn cross_node_firmware_drift_and_a_ber_outlier_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let fw = paste("mstconfig/01-cx4lx-full-query-next-boot-fenced.txt");
    let link =
        paste("mstlink/03-cx4-riser-forum-blank-line-after-every-line-counters-then-eye.txt");
    let roots: Vec<PathBuf> = (1..=4)
        .map(|i| {
            let r = tree(dir.path(), "roce-dualport", &format!("gpu0{i}"));
            let mine = if i == 3 {
                fw.replace(
                    "PCI_WR_ORDERING                             per_mkey(0)",
                    "PCI_WR_ORDERING                             force_relax(1)",
                )
            } else {
                fw.clone()
            };
            assert!(i != 3 || mine != fw, "the setting line is in the paste");
            capture(&r, "mstconfig-0000:3b:00.0", &mine);
            capture(&r, "mstlink-0000:3b:00.0", &link);
            capture(&r, "mstlink-0000:3b:00.1", &link);
            r
        })
        .collect();
    let refs: Vec<&Path> = roots.iter().map(PathBuf::as_path).collect();
    let quiet_ber = doctor(&refs);
    assert!(findings(&quiet_ber, "FAB-X-013").is_empty(), "{quiet_ber}");
    let drift = findings(&quiet_ber, "FAB-X-012");
    assert_eq!(drift.len(), 1, "{quiet_ber}");
    assert_eq!(drift[0]["subject"], "gpu03");
    let m = drift[0]["message"].as_str().unwrap();
    assert!(
        m.contains("PCI_WR_ORDERING `force_relax(1)` (`per_mkey(0)` on 3 of 4 nodes)"),
        "{m}"
    );
    // gpu02's second port: raw BER 3E-9 where its 7 peers read 3E-12.
    capture(
        &roots[1],
        "mstlink-0000:3b:00.1",
        &link.replace("Raw Physical BER : 3E-12", "Raw Physical BER : 3E-9"),
    );
    let report = doctor(&refs);
    let out = findings(&report, "FAB-X-013");
    assert_eq!(out.len(), 1, "{report}");
    assert!(
        out[0]["subject"].as_str().unwrap().starts_with("gpu02/"),
        "{}",
        out[0]
    );
}

fn run_ok(args: &[&str]) {
    support::fabrik().args(args).assert().success();
}

/// `fabrik expect --from-root` writes the evidence below the link state of a known-good node
/// (firmware settings, the PCIe link of its NICs, FEC and BER bounds, the kernel log classes
/// it is free of); `doctor --expect` is quiet on that node, and names each difference on a node
/// whose firmware forces relaxed ordering where the good one leaves it `per_mkey`, whose NIC
/// trained at x8, whose port's raw BER rose past the bound and whose log holds an Xid.
#[test]
fn expectations_carry_firmware_pcie_link_quality_and_kernel_log() {
    let dir = tempfile::tempdir().unwrap();
    let fw = paste("mstconfig/01-cx4lx-full-query-next-boot-fenced.txt");
    let link =
        paste("mstlink/03-cx4-riser-forum-blank-line-after-every-line-counters-then-eye.txt");
    let quiet_log = paste("dmesg/05-r8169-link-up-repeating-lowercase-forum.txt");
    let good = tree(dir.path(), "roce-dualport", "gpu01");
    capture(&good, "mstconfig-0000:3b:00.0", &fw);
    capture(&good, "mstlink-0000:3b:00.0", &link);
    capture(&good, "dmesg", &quiet_log);
    let file = dir.path().join("cluster.toml");
    let file_s = file.to_string_lossy().into_owned();
    run_ok(&[
        "expect",
        "--from-root",
        &good.to_string_lossy(),
        "-o",
        &file_s,
    ]);
    let text = std::fs::read_to_string(&file).unwrap();
    let e = fabrik_doctor::Expectations::parse("cluster.toml", &text).unwrap();
    let nic = e.nic.as_ref().expect("[nic] written");
    assert_eq!(
        nic.firmware.get("PCI_WR_ORDERING").map(String::as_str),
        Some("per_mkey(0)"),
        "{text}"
    );
    assert_eq!(
        nic.fec.as_deref(),
        Some("Standard RS-FEC - RS(528,514)"),
        "{text}"
    );
    assert_eq!(nic.max_raw_ber, Some(1e-5), "{text}");
    assert_eq!(nic.max_effective_ber, Some(1e-12), "{text}");
    let pcie = e.pcie.as_ref().expect("[pcie] written");
    assert_eq!(pcie.nic_speed_gts, Some(16.0), "{text}");
    assert_eq!(pcie.nic_width, Some(16), "{text}");
    let absent = &e.kernel_log.as_ref().expect("[kernel_log] written").absent;
    assert!(
        absent.iter().any(|c| c == "xid") && absent.iter().any(|c| c == "mlx5_health"),
        "{text}"
    );

    let with = |root: &Path| {
        let args = [
            "doctor",
            "--root",
            &root.to_string_lossy(),
            "--expect",
            &file_s,
        ];
        support::json_of(&args).1
    };
    let quiet = with(&good);
    let exp: Vec<&Value> = quiet["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"].as_str().unwrap().starts_with("FAB-EXP-01"))
        .collect();
    assert!(exp.is_empty(), "{exp:#?}");

    let bad = tree(dir.path(), "roce-dualport", "gpu02");
    let relaxed = fw.replace(
        "PCI_WR_ORDERING                             per_mkey(0)",
        "PCI_WR_ORDERING                             force_relax(1)",
    );
    assert_ne!(relaxed, fw);
    capture(&bad, "mstconfig-0000:3b:00.0", &relaxed);
    let noisy = link.replacen("Raw Physical BER : 3E-12", "Raw Physical BER : 2E-5", 1);
    assert_ne!(noisy, link);
    capture(&bad, "mstlink-0000:3b:00.0", &noisy);
    capture(
        &bad,
        "dmesg",
        &paste("dmesg/01-desktop-xid-32-twice-forum-fence.txt"),
    );
    let width = bad.join("sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/current_link_width");
    assert_eq!(std::fs::read_to_string(&width).unwrap().trim(), "16");
    std::fs::write(&width, "8\n").unwrap();
    let report = with(&bad);
    let f = findings(&report, "FAB-EXP-011");
    assert_eq!(f.len(), 1, "{report:#}");
    assert!(
        f[0]["message"]
            .as_str()
            .unwrap()
            .contains("`force_relax(1)` where `per_mkey(0)`"),
        "{}",
        f[0]
    );
    let f = findings(&report, "FAB-EXP-012");
    assert_eq!(f.len(), 1, "{report:#}");
    assert!(
        f[0]["subject"].as_str().unwrap().contains("0000:3b:00.0"),
        "{}",
        f[0]
    );
    assert!(
        f[0]["message"].as_str().unwrap().contains("x8 where x16"),
        "{}",
        f[0]
    );
    let f = findings(&report, "FAB-EXP-013");
    assert_eq!(f.len(), 1, "{report:#}");
    assert_eq!(f[0]["severity"], "warning");
    assert!(
        f[0]["message"]
            .as_str()
            .unwrap()
            .contains("raw (pre-FEC) BER is 2E-5"),
        "{}",
        f[0]
    );
    let f = findings(&report, "FAB-EXP-014");
    assert_eq!(f.len(), 1, "{report:#}");
    // `check`, the live health check, judges the same file the same way.
    let (_, checked) = support::json_of(&[
        "check",
        "--root",
        &bad.to_string_lossy(),
        "--expect",
        &file_s,
    ]);
    for rule in ["FAB-EXP-011", "FAB-EXP-012", "FAB-EXP-013", "FAB-EXP-014"] {
        assert_eq!(findings(&checked, rule).len(), 1, "{rule}: {checked:#}");
    }
    assert!(
        f[0]["message"]
            .as_str()
            .unwrap()
            .contains("2 kernel log event(s) of class `xid`"),
        "{}",
        f[0]
    );
}

/// `fabrik report` on a probed node's inventory shows its evidence below the link state: the
/// PCIe path of the NIC with each link and the kernel's AER counts (a real
/// `aer_dev_correctable` file, given 3 BadTLP), its firmware settings, its link quality, its
/// transceiver module and its kernel log events, each with the value its capture holds.
#[test]
fn the_report_shows_pcie_paths_firmware_link_quality_and_kernel_log() {
    let dir = tempfile::tempdir().unwrap();
    let root = tree(dir.path(), "roce-dualport", "gpu01");
    capture(
        &root,
        "mstconfig-0000:3b:00.0",
        &paste("mstconfig/01-cx4lx-full-query-next-boot-fenced.txt"),
    );
    capture(
        &root,
        "mstlink-0000:3b:00.0",
        &paste("mstlink/03-cx4-riser-forum-blank-line-after-every-line-counters-then-eye.txt"),
    );
    capture(
        &root,
        "dmesg",
        &paste("dmesg/01-desktop-xid-32-twice-forum-fence.txt"),
    );
    capture(
        &root,
        "ethtool-m-ens1f0np0",
        &paste("ethtool_module/01-sfp-10g-sr-finisar-rx-power-low-alarm-blog-cut.txt"),
    );
    let aer = std::fs::read_to_string(
        repo().join("fixtures/nodes/real-procfs/sys/devices/pci0000:00/0000:00:02.1/0000:01:00.0/aer_dev_correctable"),
    )
    .unwrap()
    .replace("BadTLP 0", "BadTLP 3")
    .replace("TOTAL_ERR_COR 0", "TOTAL_ERR_COR 3");
    std::fs::write(
        root.join("sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/aer_dev_correctable"),
        aer,
    )
    .unwrap();
    let out = support::fabrik()
        .args(["inventory", "--format", "json", "--root"])
        .arg(&root)
        .output()
        .unwrap();
    support::assert_ok(&out);
    let inv = dir.path().join("node.json");
    std::fs::write(&inv, &out.stdout).unwrap();
    let html = dir.path().join("report.html");
    let out = support::fabrik()
        .arg("report")
        .arg(&inv)
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    support::assert_ok(&out);
    let page = std::fs::read_to_string(&html).unwrap();
    for needle in [
        "gpu01: below the link state",
        "<h4>PCIe paths</h4>",
        // The NIC at Gen4 x16 under a Gen5 x16 root port, with the correctable count.
        "<td>0000:3b:00.0</td><td>device</td><td>16 GT/s x16</td><td>correctable 3</td>",
        "<td>0000:3a:00.0</td><td>bridge</td><td>32 GT/s x16</td>",
        "<td>PCI_WR_ORDERING</td><td>per_mkey(0)</td>",
        "<td>Standard RS-FEC - RS(528,514)</td>",
        "<td>3E-12</td>",
        "Xid 32",
        "<h4>Transceiver modules</h4>",
        "<td>ens1f0np0</td><td>0x03 (SFP) FINISAR CORP. FTLX8571D3BCL-HD</td><td>30.14</td>",
        "<td>0.0004 (-33.98)</td><td>Laser rx power low alarm, Laser rx power low warning</td>",
    ] {
        assert!(page.contains(needle), "{needle} not in the page:\n{page}");
    }
}

/// The probe reads an `ethtool -m` capture of an RDMA netdev through the paste's parser: the
/// module raising its rx power low alarm fires FAB-LINK-011 on that netdev, and `inventory`
/// carries its readings; a healthy QSFP+ (whose dark lanes it does not flag) stays quiet.
#[test]
fn a_probed_module_capture_fires_the_module_alarm_rule() {
    let dir = tempfile::tempdir().unwrap();
    let root = tree(dir.path(), "roce-dualport", "gpu01");
    capture(
        &root,
        "ethtool-m-ens1f1np1",
        &paste("ethtool_module/05-qsfp-plus-40g-sr4-four-channels-thresholds-netdev-email-then-patch.txt"),
    );
    let quiet = doctor(&[&root]);
    assert!(findings(&quiet, "FAB-LINK-011").is_empty(), "{quiet}");
    capture(
        &root,
        "ethtool-m-ens1f0np0",
        &paste("ethtool_module/01-sfp-10g-sr-finisar-rx-power-low-alarm-blog-cut.txt"),
    );
    let report = doctor(&[&root]);
    let f = findings(&report, "FAB-LINK-011");
    assert_eq!(f.len(), 1, "{report}");
    assert_eq!(f[0]["subject"], "ens1f0np0");
    let (_, inv) = support::json_of(&["inventory", "--root", &root.to_string_lossy()]);
    let mods = inv["transceivers"].as_array().unwrap();
    assert_eq!(mods.len(), 2, "{inv}");
    assert_eq!(mods[0]["interface"], "ens1f0np0");
    assert_eq!(mods[0]["lanes"][0]["rx_power_mw"], 0.0004);
    assert_eq!(mods[1]["interface"], "ens1f1np1");
    assert_eq!(mods[1]["lanes"][0]["bias_ma"], 6.662);
}

/// A NIC tool the live probe found missing or failing is a fact not read: in a snapshot whose
/// probe recorded them (`fabrik/nic-tools-not-read.txt`, as the live probe writes it), the
/// check says, per fact, which function or netdev could not be checked and why (FAB-CHK-001),
/// and a root whose tools all answered says nothing of them.
#[test]
fn a_missing_nic_tool_is_said_not_silently_absent() {
    let dir = tempfile::tempdir().unwrap();
    let root = tree(dir.path(), "roce-dualport", "gpu01");
    let quiet = doctor(&[&root]);
    assert!(
        !findings(&quiet, "FAB-CHK-001")
            .iter()
            .any(|f| f["subject"].as_str().unwrap().contains("nic_firmware")),
        "{quiet}"
    );
    std::fs::write(
        root.join("fabrik/nic-tools-not-read.txt"),
        "nic_firmware\t0000:3b:00.0\t`mstconfig -d 0000:3b:00.0 q`: neither mstconfig (mstflint) nor mlxconfig (NVIDIA MFT) is installed\n\
         link_quality\t0000:3b:00.0\t`mstlink -d 0000:3b:00.0 -c -m`: neither mstlink (mstflint) nor mlxlink (NVIDIA MFT) is installed\n\
         transceiver\tens1f0np0\t`ethtool -m ens1f0np0`: exit 1 (nothing saved)\n",
    )
    .unwrap();
    let report = doctor(&[&root]);
    let f = findings(&report, "FAB-CHK-001");
    let by: BTreeSet<&str> = f.iter().map(|f| f["subject"].as_str().unwrap()).collect();
    for s in [
        "not checked: nic_firmware",
        "not checked: link_quality",
        "not checked: transceiver",
    ] {
        assert!(by.contains(s), "{s}: {report}");
    }
    let fw = f
        .iter()
        .find(|f| f["subject"] == "not checked: nic_firmware")
        .unwrap();
    assert!(
        fw["message"]
            .as_str()
            .unwrap()
            .contains("0000:3b:00.0): `mstconfig -d 0000:3b:00.0 q`: neither mstconfig"),
        "{fw}"
    );
    assert_eq!(fw["severity"], "info");
    let (_, inv) = support::json_of(&["inventory", "--root", &root.to_string_lossy()]);
    assert!(
        inv["not_read"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["fact"] == "transceiver" && n["subject"] == "ens1f0np0"),
        "{inv}"
    );
}
