//! The named profiles, machines without RDMA or GPUs, the variables already set, and the
//! output forms.

use super::*;

#[test]
fn bare_machine_says_only_sockets_and_names_the_interface() {
    let env = gen(Profile::Auto, Some(&socket_node()));
    assert_eq!(env.transport, Transport::Socket);
    assert_eq!(val(&env, "NCCL_SOCKET_IFNAME"), Some("=eth0"));
    assert_eq!(val(&env, "NCCL_IB_DISABLE"), Some("1"));
    assert!(env
        .warnings()
        .any(|n| n.message.contains("only sockets are available") && n.message.contains("eth0")));
    assert_eq!(env.summary, "Only TCP sockets: NCCL sends data over eth0.");
}

#[test]
fn gve_interfaces_hint_at_tcpx_without_assuming_it() {
    let mut node = socket_node();
    for i in 1..=4 {
        let mut e = iface(&format!("eth{i}"), &[&format!("10.{i}.0.2/32")], false);
        e.driver = Some("gve".into());
        node.net_interfaces.push(e);
    }
    node.net_interfaces[1].driver = Some("gve".into());
    let env = gen(Profile::Auto, Some(&node));
    assert_eq!(env.transport, Transport::Socket);
    assert!(env.warnings().any(|n| n.message.contains("gcp-a3-tcpx")));
}

#[test]
fn auto_without_a_node_is_an_error() {
    let empty = BTreeMap::new();
    let r = generate(&Request {
        profile: Profile::Auto,
        node: None,
        existing: &empty,
        keep_env: false,
    });
    assert_eq!(r.unwrap_err(), EnvError::AutoNeedsNode);
}

#[test]
fn every_named_profile_renders_without_a_node_and_every_var_has_reason_and_source() {
    for p in Profile::named() {
        let env = gen(p, None);
        assert_eq!(env.profile, p.as_str());
        for v in &env.vars {
            assert!(!v.reason.is_empty(), "{p}: {} has no reason", v.name);
            assert!(
                v.source.starts_with("https://"),
                "{p}: {} source {}",
                v.name,
                v.source
            );
        }
    }
}

#[test]
fn alibaba_types_follow_acs_documentation() {
    let t1 = gen(Profile::AlibabaAcsRdma, None);
    assert_eq!(val(&t1, "NCCL_SOCKET_IFNAME"), Some("eth0"));
    assert_eq!(val(&t1, "NCCL_IB_HCA"), Some("mlx5"));
    assert_eq!(val(&t1, "NCCL_IB_DISABLE"), None);
    assert_eq!(
        t1.runtime
            .k8s_labels
            .get("alibabacloud.com/hpn-type")
            .map(String::as_str),
        Some("rdma")
    );
    let t2 = gen(Profile::AlibabaAcsRdmaType2, None);
    assert_eq!(val(&t2, "NCCL_IB_DISABLE"), Some("1"));
    assert_eq!(val(&t2, "NCCL_IB_HCA"), Some(""));
}

#[test]
fn tcpx_profile_has_google_data_nics_and_plugin_path() {
    let env = gen(Profile::GcpA3Tcpx, None);
    assert_eq!(
        val(&env, "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME"),
        Some("eth1,eth2,eth3,eth4")
    );
    assert_eq!(val(&env, "NCCL_GPUDIRECTTCPX_CTRL_DEV"), Some("eth0"));
    assert_eq!(val(&env, "NCCL_PROTO"), Some("Simple"));
    assert!(val(&env, "LD_LIBRARY_PATH")
        .unwrap()
        .contains("/usr/local/tcpx/lib64"));
    assert!(env.runtime.k8s_sidecar.is_some());
    let warn = gen(Profile::GcpA3Tcpx, Some(&socket_node()));
    assert!(warn
        .warnings()
        .any(|n| n.message.contains("eth1, eth2, eth3, eth4")));
}

#[test]
fn existing_variables_are_reported_and_kept_with_keep_env() {
    let node = roce_node();
    let mut existing = BTreeMap::new();
    existing.insert("NCCL_IB_GID_INDEX".to_string(), "5".to_string());
    existing.insert("NCCL_DEBUG".to_string(), "INFO".to_string());
    existing.insert("PATH".to_string(), "/bin".to_string());
    let kept = generate(&Request {
        profile: Profile::Auto,
        node: Some(&node),
        existing: &existing,
        keep_env: true,
    })
    .unwrap();
    assert_eq!(val(&kept, "NCCL_IB_GID_INDEX"), Some("5"));
    assert_eq!(kept.var("NCCL_IB_GID_INDEX").unwrap().source, "environment");
    assert_eq!(val(&kept, "NCCL_DEBUG"), Some("INFO"));
    assert!(kept.var("PATH").is_none());
    assert_eq!(kept.existing.len(), 2);
    assert!(kept
        .existing
        .iter()
        .all(|e| e.action == ExistingAction::Kept));

    let over = generate(&Request {
        profile: Profile::Auto,
        node: Some(&node),
        existing: &existing,
        keep_env: false,
    })
    .unwrap();
    assert_eq!(val(&over, "NCCL_IB_GID_INDEX"), Some("3"));
    let e = over
        .existing
        .iter()
        .find(|e| e.name == "NCCL_IB_GID_INDEX")
        .unwrap();
    assert_eq!(e.action, ExistingAction::Overridden);
    assert!(over
        .warnings()
        .any(|n| n.message.contains("NCCL_IB_GID_INDEX=\"5\"")));
}

mod render_tests {
    use super::*;
    use crate::env::render;

    #[test]
    fn shell_output_quotes_values_and_explains_each() {
        let env = gen(Profile::AlibabaAcsRdmaType2, None);
        let text = render::shell(&env).unwrap();
        assert!(text.contains("export NCCL_IB_HCA=''\n"), "{text}");
        assert!(text.contains("# RDMA NIC type 2 (P16EN)"));
        let env = gen(Profile::Auto, Some(&roce_node()));
        let text = render::shell(&env).unwrap();
        assert!(text.contains("export NCCL_IB_TC=106\n"), "{text}");
    }

    #[test]
    fn shell_quote_survives_hostile_values() {
        assert_eq!(render::shell_quote("a b").unwrap(), "'a b'");
        assert_eq!(render::shell_quote("").unwrap(), "''");
        assert!(render::shell_quote("x\0y").is_err());
    }

    #[test]
    fn k8s_env_list_parses_back() {
        let env = gen(Profile::GcpA3Tcpx, None);
        let text = render::k8s_env(&env).unwrap();
        let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
        let list = v.get("env").unwrap().as_sequence().unwrap();
        assert_eq!(list.len(), env.vars.len());
        assert_eq!(
            list[0].get("name").unwrap().as_str(),
            Some(env.vars[0].name.as_str())
        );
    }

    #[test]
    fn docker_flags_are_e_pairs() {
        let env = gen(Profile::AlibabaAcsRdma, None);
        let text = render::docker_flags(&env).unwrap();
        let words = shlex::split(&text).unwrap();
        assert_eq!(words.len(), env.vars.len() * 2);
        assert_eq!(words[0], "-e");
        assert_eq!(words[1], "NCCL_SOCKET_IFNAME=eth0");
    }

    #[test]
    fn json_has_schema_version_and_vars() {
        let env = gen(Profile::Socket, Some(&socket_node()));
        let v: serde_json::Value = serde_json::from_str(&render::json(&env).unwrap()).unwrap();
        assert_eq!(v["schema_version"], 1);
        assert_eq!(v["profile"], "socket");
        assert!(v["vars"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x["reason"].is_string() && x["source"].is_string()));
    }

    #[test]
    fn dotenv_quotes_only_when_needed() {
        let env = gen(Profile::GcpA3Tcpx, None);
        let text = render::dotenv(&env).unwrap();
        assert!(text.contains("\nNCCL_GPUDIRECTTCPX_SOCKET_IFNAME=eth1,eth2,eth3,eth4\n"));
    }
}

mod props {
    use proptest::prelude::*;

    proptest! {
        /// Any value survives shell quoting: bash reads back exactly what was written.
        #[test]
        fn shell_quoting_round_trips(s in "[^\u{0}]{0,40}") {
            let q = crate::env::render::shell_quote(&s).unwrap();
            let back = shlex::split(&q).unwrap();
            prop_assert_eq!(back.len(), 1);
            prop_assert_eq!(&back[0], &s);
        }
    }
}

#[test]
fn a_non_nccl_variable_fabrik_sets_is_still_reported() {
    let mut existing = BTreeMap::new();
    existing.insert("LD_LIBRARY_PATH".to_string(), "/opt/cuda/lib64".to_string());
    existing.insert("HOME".to_string(), "/root".to_string());
    let env = generate(&Request {
        profile: Profile::GcpA3Tcpx,
        node: None,
        existing: &existing,
        keep_env: false,
    })
    .unwrap();
    assert_eq!(env.existing.len(), 1);
    assert_eq!(env.existing[0].name, "LD_LIBRARY_PATH");
    assert!(env
        .warnings()
        .any(|n| n.message.contains("LD_LIBRARY_PATH=\"/opt/cuda/lib64\"")));
    assert!(env.var("HOME").is_none());
}

#[test]
fn auto_on_a_machine_without_gpus_says_it_bakes_its_interfaces_in() {
    let node = socket_node();
    assert!(node.gpus.is_empty());
    let env = gen(Profile::Auto, Some(&node));
    let w: Vec<_> = env.warnings().map(|n| n.message.clone()).collect();
    assert!(
        w.iter()
            .any(|m| m.contains("no GPU") && m.contains("NCCL_SOCKET_IFNAME==eth0")),
        "{w:?}"
    );
    // A named profile is the user's choice; a GPU node is what auto is for.
    let env = gen(Profile::Socket, Some(&node));
    assert!(!env.warnings().any(|n| n.message.contains("no GPU")));
    let mut gpu_node = socket_node();
    gpu_node.gpus.push(a_gpu());
    let env = gen(Profile::Auto, Some(&gpu_node));
    assert!(!env.warnings().any(|n| n.message.contains("no GPU")));
}
