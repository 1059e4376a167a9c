//! deploy/slurm/fabrik-healthcheck as a real Slurm's HealthCheckProgram and Prolog: munged,
//! slurmctld and slurmd from Debian, started by the test (fabrik_testbed::slurm). A failing
//! `fabrik check` drains the node with fabrik's reason, a passing one returns it to service; a
//! node an administrator drained keeps the administrator's reason through failing and passing
//! checks alike (NHC's rule); an undecided check marks the node's Comment and drains nothing;
//! arguments come one per line from a file, spaces and all; as Prolog, a failing check drains
//! the node with fabrik's reason and Slurm requeues the job.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use fabrik_testbed::slurm::{skip_reason, Slurm};

const INTERVAL: Duration = Duration::from_secs(2);
const WAIT: Duration = Duration::from_secs(60);

use fabrik_testbed::fixtures::repo;

fn write_conf(path: &Path, conf_dir: &Path, slurm_conf: &Path, root: &Path) {
    let text = format!(
        "FABRIK={}\nFABRIK_ROOT={}\nFABRIK_BUDGET=20s\nSLURM_CONF={}\nFABRIK_CHECK_ARGS_FILE={}\n",
        env!("CARGO_BIN_EXE_fabrik"),
        root.display(),
        slurm_conf.display(),
        conf_dir.join("check.args").display()
    );
    // Renamed into place: slurmd may run the check while the test switches the root.
    let tmp = conf_dir.join("conf.tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// The first line `fabrik check` prints for `root`, without its `ERROR: ` label.
fn first_problem(root: &Path) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fabrik"))
        .args(["check", "--root"])
        .arg(root)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "the fixture must fail the check"
    );
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .next()
        .unwrap()
        .strip_prefix("ERROR: ")
        .unwrap()
        .to_string()
}

fn field<'a>(node: &'a str, key: &str) -> Option<&'a str> {
    node.split(['\n', ' '])
        .find_map(|w| w.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
}

fn reason(node: &str) -> Option<String> {
    node.lines()
        .find_map(|l| l.trim_start().strip_prefix("Reason="))
        .map(|r| r.to_string())
}

#[test]
fn a_failing_check_drains_the_node_and_a_passing_one_returns_it() {
    if let Some(why) = skip_reason() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the Slurm test: {why}"
        );
        fabrik_testbed::skip("the Slurm test", &why);
        return;
    }
    let bad = repo().join("fixtures/nodes/roce-dualport");
    let good = repo().join("fixtures/nodes/ib-ndr-8gpu");
    // Slurm keeps the reason as the wrapper cut it (200 characters); compare a prefix.
    let expected: String = first_problem(&bad).chars().take(120).collect();

    let work = tempfile::tempdir().unwrap();
    let conf = work.path().join("healthcheck.conf");
    let program = work.path().join("healthcheck");
    // slurmd gives the program an empty environment: the wrapper reads its settings from a file,
    // and this two-line program only says which file.
    std::fs::write(
        &program,
        format!(
            "#!/bin/sh\nFABRIK_HEALTHCHECK_CONF={} exec {}\n",
            conf.display(),
            repo().join("deploy/slurm/fabrik-healthcheck").display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();

    // The conf must exist before slurmd's first check, which runs as it starts; its SLURM_CONF
    // is the cluster's, known once the cluster has its directory.
    let slurm_conf_dir = std::env::temp_dir().join(format!("fab-slurm-{}", std::process::id()));
    write_conf(&conf, work.path(), &slurm_conf_dir.join("slurm.conf"), &bad);
    let slurm = Slurm::builder()
        .health_check(&program, INTERVAL)
        .start()
        .unwrap();
    assert_eq!(slurm.conf(), slurm_conf_dir.join("slurm.conf"));

    slurm
        .wait_until("the failing check to drain the node", WAIT, |s| {
            let node = s.show_node().unwrap_or_default();
            field(&node, "State").is_some_and(|st| st.contains("DRAIN"))
                && reason(&node).is_some_and(|r| r.starts_with(&expected))
        })
        .unwrap();
    let node = slurm.show_node().unwrap();
    let why = reason(&node).unwrap();
    assert!(why.starts_with("fabrik: FAB-"), "{why}");
    // The drained node as an operator sees it (`--nocapture` shows it).
    eprintln!("scontrol show node, after the failing check:\n{node}");

    write_conf(&conf, work.path(), &slurm.conf(), &good);
    slurm
        .wait_until("the passing check to return the node", WAIT, |s| {
            let node = s.show_node().unwrap_or_default();
            field(&node, "State").is_some_and(|st| !st.contains("DRAIN")) && reason(&node).is_none()
        })
        .unwrap();

    // An argument with spaces, one per line in the arguments file, reaches fabrik whole: a
    // shell-split string would make every check exit 2 (undecided).
    std::fs::write(
        work.path().join("check.args"),
        "# waivers with their reasons\n--ignore=FAB-RDMA-003=jobs raise memlock in their prolog\n\n",
    )
    .unwrap();
    std::thread::sleep(INTERVAL * 3);
    let node = slurm.show_node().unwrap();
    assert!(!field(&node, "State").unwrap().contains("DRAIN"), "{node}");
    assert!(comment(&node).is_none(), "{node}");

    // A drain fabrik did not write is the administrator's: failing checks do not replace its
    // reason and passing ones do not resume it.
    slurm
        .scontrol(&[
            "update",
            &format!("NodeName={}", slurm.node()),
            "State=DRAIN",
            "Reason=cable swap by admin",
        ])
        .unwrap();
    write_conf(&conf, work.path(), &slurm.conf(), &bad);
    std::thread::sleep(INTERVAL * 4);
    let node = slurm.show_node().unwrap();
    assert!(field(&node, "State").unwrap().contains("DRAIN"), "{node}");
    assert!(
        reason(&node).unwrap().starts_with("cable swap by admin"),
        "a failing check replaced the administrator's reason: {node}"
    );
    write_conf(&conf, work.path(), &slurm.conf(), &good);
    std::thread::sleep(INTERVAL * 4);
    let node = slurm.show_node().unwrap();
    assert!(field(&node, "State").unwrap().contains("DRAIN"), "{node}");
    assert!(
        reason(&node).unwrap().starts_with("cable swap by admin"),
        "{node}"
    );
    slurm
        .scontrol(&[
            "update",
            &format!("NodeName={}", slurm.node()),
            "State=RESUME",
        ])
        .unwrap();

    // A check that cannot decide (here: a root that is not a node) drains nothing and says so
    // in the node's Comment until a check decides again.
    let nowhere = work.path().join("not-a-node");
    std::fs::create_dir_all(&nowhere).unwrap();
    write_conf(&conf, work.path(), &slurm.conf(), &nowhere);
    slurm
        .wait_until("the undecided check to mark the node", WAIT, |s| {
            let node = s.show_node().unwrap_or_default();
            comment(&node).is_some_and(|c| c.starts_with("fabrik: undecided (exit 2)"))
        })
        .unwrap();
    let node = slurm.show_node().unwrap();
    assert!(!field(&node, "State").unwrap().contains("DRAIN"), "{node}");
    eprintln!("scontrol show node, after an undecided check:\n{node}");
    write_conf(&conf, work.path(), &slurm.conf(), &good);
    slurm
        .wait_until("a deciding check to clear the mark", WAIT, |s| {
            comment(&s.show_node().unwrap_or_default()).is_none()
        })
        .unwrap();
    drop(slurm);

    // As Prolog: a failing check drains the node with fabrik's reason before the job starts,
    // and Slurm requeues the job.
    write_conf(&conf, work.path(), &slurm_conf_dir.join("slurm.conf"), &bad);
    let slurm = Slurm::builder().prolog(&program).start().unwrap();
    let job = slurm
        .client(
            "sbatch",
            &["--parsable", "--wrap", "true", "-o", "/dev/null"],
        )
        .unwrap();
    let job = job.trim().split(';').next().unwrap().to_string();
    slurm
        .wait_until("the failing prolog to drain the node", WAIT, |s| {
            let node = s.show_node().unwrap_or_default();
            field(&node, "State").is_some_and(|st| st.contains("DRAIN"))
                && reason(&node).is_some_and(|r| r.starts_with(&expected))
        })
        .unwrap();
    // The job passes through COMPLETING ("launch failed requeued held") before it is
    // requeued: wait for that to settle rather than read the state once.
    let requeued = |s: &Slurm| {
        let jobs = s
            .client("squeue", &["-h", "-j", &job, "-o", "%T %r"])
            .unwrap_or_default();
        jobs.contains("PENDING") || jobs.contains("REQUEUE")
    };
    if let Err(e) = slurm.wait_until("the job to be requeued", WAIT, requeued) {
        let jobs = slurm.client("squeue", &["-h", "-j", &job, "-o", "%T %r"]);
        panic!("job {job} after the failing prolog: {jobs:?}: {e}");
    }
}

fn comment(node: &str) -> Option<String> {
    node.lines()
        .find_map(|l| l.trim_start().strip_prefix("Comment="))
        .filter(|c| !c.is_empty() && *c != "(null)")
        .map(|c| c.to_string())
}
