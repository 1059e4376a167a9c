//! Compares the Rust mirrors of libibverbs structures with the C compiler's view of the installed
//! `infiniband/verbs.h` (Debian: libibverbs-dev). Skips, saying so, where the header or a C
//! compiler is missing, and fails then where `FABRIK_REQUIRE_TESTBEDS=1`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::mem::{offset_of, size_of};
use std::path::Path;
use std::process::Command;

use fabrik_verbs::ffi::*;

fn c_layout() -> Option<HashMap<String, i64>> {
    if !Path::new("/usr/include/infiniband/verbs.h").exists() {
        fabrik_testbed::skip(
            "the struct layout check",
            "/usr/include/infiniband/verbs.h missing (scripts/apt/test/verbs.txt: libibverbs-dev)",
        );
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("layout");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/layout.c");
    let status = match Command::new("cc").arg("-o").arg(&exe).arg(&src).status() {
        Ok(s) => s,
        Err(e) => {
            fabrik_testbed::skip("the struct layout check", &format!("no C compiler: {e}"));
            return None;
        }
    };
    assert!(
        status.success(),
        "layout.c failed to compile against verbs.h"
    );
    let out = Command::new(&exe).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    Some(
        text.lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(k, v)| (k.to_string(), v.trim().parse().unwrap()))
            .collect(),
    )
}

#[test]
fn structs_match_verbs_h() {
    let Some(c) = c_layout() else { return };
    let check = |name: &str, rust: usize| {
        let want = *c
            .get(name)
            .unwrap_or_else(|| panic!("layout.c printed no {name}"));
        assert_eq!(rust as i64, want, "{name}: Rust {rust}, C {want}");
    };
    check("sizeof_ibv_gid", size_of::<ibv_gid>());
    check("sizeof_ibv_device_attr", size_of::<ibv_device_attr>());
    check(
        "ibv_device_attr.max_qp_wr",
        offset_of!(ibv_device_attr, max_qp_wr),
    );
    check(
        "ibv_device_attr.max_sge",
        offset_of!(ibv_device_attr, max_sge),
    );
    check(
        "ibv_device_attr.max_qp_rd_atom",
        offset_of!(ibv_device_attr, max_qp_rd_atom),
    );
    check(
        "ibv_device_attr.phys_port_cnt",
        offset_of!(ibv_device_attr, phys_port_cnt),
    );
    check("sizeof_ibv_port_attr", size_of::<ibv_port_attr>());
    check(
        "ibv_port_attr.active_mtu",
        offset_of!(ibv_port_attr, active_mtu),
    );
    check(
        "ibv_port_attr.gid_tbl_len",
        offset_of!(ibv_port_attr, gid_tbl_len),
    );
    check("ibv_port_attr.lid", offset_of!(ibv_port_attr, lid));
    check(
        "ibv_port_attr.link_layer",
        offset_of!(ibv_port_attr, link_layer),
    );
    check(
        "ibv_port_attr.port_cap_flags2",
        offset_of!(ibv_port_attr, port_cap_flags2),
    );
    check("sizeof_ibv_qp_cap", size_of::<ibv_qp_cap>());
    check("sizeof_ibv_qp_init_attr", size_of::<ibv_qp_init_attr>());
    check("ibv_qp_init_attr.cap", offset_of!(ibv_qp_init_attr, cap));
    check(
        "ibv_qp_init_attr.qp_type",
        offset_of!(ibv_qp_init_attr, qp_type),
    );
    check(
        "ibv_qp_init_attr.sq_sig_all",
        offset_of!(ibv_qp_init_attr, sq_sig_all),
    );
    check("sizeof_ibv_global_route", size_of::<ibv_global_route>());
    check("sizeof_ibv_ah_attr", size_of::<ibv_ah_attr>());
    check("ibv_ah_attr.dlid", offset_of!(ibv_ah_attr, dlid));
    check("ibv_ah_attr.is_global", offset_of!(ibv_ah_attr, is_global));
    check("ibv_ah_attr.port_num", offset_of!(ibv_ah_attr, port_num));
    check("sizeof_ibv_qp_attr", size_of::<ibv_qp_attr>());
    check("ibv_qp_attr.path_mtu", offset_of!(ibv_qp_attr, path_mtu));
    check("ibv_qp_attr.rq_psn", offset_of!(ibv_qp_attr, rq_psn));
    check(
        "ibv_qp_attr.dest_qp_num",
        offset_of!(ibv_qp_attr, dest_qp_num),
    );
    check(
        "ibv_qp_attr.qp_access_flags",
        offset_of!(ibv_qp_attr, qp_access_flags),
    );
    check("ibv_qp_attr.cap", offset_of!(ibv_qp_attr, cap));
    check("ibv_qp_attr.ah_attr", offset_of!(ibv_qp_attr, ah_attr));
    check(
        "ibv_qp_attr.alt_ah_attr",
        offset_of!(ibv_qp_attr, alt_ah_attr),
    );
    check(
        "ibv_qp_attr.pkey_index",
        offset_of!(ibv_qp_attr, pkey_index),
    );
    check(
        "ibv_qp_attr.max_rd_atomic",
        offset_of!(ibv_qp_attr, max_rd_atomic),
    );
    check(
        "ibv_qp_attr.max_dest_rd_atomic",
        offset_of!(ibv_qp_attr, max_dest_rd_atomic),
    );
    check(
        "ibv_qp_attr.min_rnr_timer",
        offset_of!(ibv_qp_attr, min_rnr_timer),
    );
    check("ibv_qp_attr.port_num", offset_of!(ibv_qp_attr, port_num));
    check("ibv_qp_attr.timeout", offset_of!(ibv_qp_attr, timeout));
    check("ibv_qp_attr.retry_cnt", offset_of!(ibv_qp_attr, retry_cnt));
    check("ibv_qp_attr.rnr_retry", offset_of!(ibv_qp_attr, rnr_retry));
    check(
        "ibv_qp_attr.rate_limit",
        offset_of!(ibv_qp_attr, rate_limit),
    );
    check("sizeof_ibv_sge", size_of::<ibv_sge>());
    check("sizeof_ibv_send_wr", size_of::<ibv_send_wr>());
    check("ibv_send_wr.next", offset_of!(ibv_send_wr, next));
    check("ibv_send_wr.sg_list", offset_of!(ibv_send_wr, sg_list));
    check("ibv_send_wr.num_sge", offset_of!(ibv_send_wr, num_sge));
    check("ibv_send_wr.opcode", offset_of!(ibv_send_wr, opcode));
    check(
        "ibv_send_wr.send_flags",
        offset_of!(ibv_send_wr, send_flags),
    );
    check("ibv_send_wr.imm_data", offset_of!(ibv_send_wr, imm_data));
    check(
        "ibv_send_wr.wr.rdma.remote_addr",
        offset_of!(ibv_send_wr, rdma.remote_addr),
    );
    check(
        "ibv_send_wr.wr.rdma.rkey",
        offset_of!(ibv_send_wr, rdma.rkey),
    );
    check("ibv_send_wr.qp_type", offset_of!(ibv_send_wr, qp_type));
    check("ibv_send_wr.bind_mw", offset_of!(ibv_send_wr, bind_mw));
    check("sizeof_ibv_recv_wr", size_of::<ibv_recv_wr>());
    check("ibv_recv_wr.sg_list", offset_of!(ibv_recv_wr, sg_list));
    check("ibv_recv_wr.num_sge", offset_of!(ibv_recv_wr, num_sge));
    check("sizeof_ibv_wc", size_of::<ibv_wc>());
    check("ibv_wc.status", offset_of!(ibv_wc, status));
    check("ibv_wc.opcode", offset_of!(ibv_wc, opcode));
    check("ibv_wc.vendor_err", offset_of!(ibv_wc, vendor_err));
    check("ibv_wc.byte_len", offset_of!(ibv_wc, byte_len));
    check("ibv_wc.qp_num", offset_of!(ibv_wc, qp_num));
    check("ibv_wc.wc_flags", offset_of!(ibv_wc, wc_flags));
    check("ibv_wc.sl", offset_of!(ibv_wc, sl));
    check("sizeof_ibv_mr", size_of::<ibv_mr>());
    check("ibv_mr.addr", offset_of!(ibv_mr, addr));
    check("ibv_mr.length", offset_of!(ibv_mr, length));
    check("ibv_mr.lkey", offset_of!(ibv_mr, lkey));
    check("ibv_mr.rkey", offset_of!(ibv_mr, rkey));
    check("ibv_qp.qp_num", offset_of!(ibv_qp, qp_num));
    check("ibv_qp.state", offset_of!(ibv_qp, state));
    check("ibv_context.ops", offset_of!(ibv_context, ops));
    check(
        "ibv_context.ops.poll_cq",
        offset_of!(ibv_context, ops.poll_cq),
    );
    check(
        "ibv_context.ops.post_send",
        offset_of!(ibv_context, ops.post_send),
    );
    check(
        "ibv_context.ops.post_recv",
        offset_of!(ibv_context, ops.post_recv),
    );
}

#[test]
fn constants_match_verbs_h() {
    let Some(c) = c_layout() else { return };
    let check = |name: &str, rust: i64| {
        let want = *c
            .get(name)
            .unwrap_or_else(|| panic!("layout.c printed no {name}"));
        assert_eq!(rust, want, "{name}");
    };
    check(
        "IBV_ACCESS_RELAXED_ORDERING",
        IBV_ACCESS_RELAXED_ORDERING.into(),
    );
    check(
        "IBV_ACCESS_OPTIONAL_RANGE",
        IBV_ACCESS_OPTIONAL_RANGE.into(),
    );
    check("IBV_WR_RDMA_WRITE", IBV_WR_RDMA_WRITE.into());
    check("IBV_WR_SEND", IBV_WR_SEND.into());
    check("IBV_WR_RDMA_READ", IBV_WR_RDMA_READ.into());
    check("IBV_SEND_SIGNALED", IBV_SEND_SIGNALED.into());
    check("IBV_SEND_INLINE", IBV_SEND_INLINE.into());
    for (n, v) in [
        ("IBV_QP_STATE", IBV_QP_STATE),
        ("IBV_QP_AV", IBV_QP_AV),
        ("IBV_QP_PATH_MTU", IBV_QP_PATH_MTU),
        ("IBV_QP_RQ_PSN", IBV_QP_RQ_PSN),
        ("IBV_QP_DEST_QPN", IBV_QP_DEST_QPN),
        ("IBV_QP_SQ_PSN", IBV_QP_SQ_PSN),
        ("IBV_QP_MAX_DEST_RD_ATOMIC", IBV_QP_MAX_DEST_RD_ATOMIC),
        ("IBV_QP_MIN_RNR_TIMER", IBV_QP_MIN_RNR_TIMER),
        ("IBV_QP_MAX_QP_RD_ATOMIC", IBV_QP_MAX_QP_RD_ATOMIC),
        ("IBV_QP_TIMEOUT", IBV_QP_TIMEOUT),
        ("IBV_QP_RETRY_CNT", IBV_QP_RETRY_CNT),
        ("IBV_QP_RNR_RETRY", IBV_QP_RNR_RETRY),
        ("IBV_QP_PKEY_INDEX", IBV_QP_PKEY_INDEX),
        ("IBV_QP_PORT", IBV_QP_PORT),
        ("IBV_QP_ACCESS_FLAGS", IBV_QP_ACCESS_FLAGS),
        ("IBV_QPT_RC", IBV_QPT_RC),
        ("IBV_QPS_INIT", IBV_QPS_INIT),
        ("IBV_QPS_RTR", IBV_QPS_RTR),
        ("IBV_QPS_RTS", IBV_QPS_RTS),
        ("IBV_MTU_1024", 3),
        ("IBV_WC_RETRY_EXC_ERR", IBV_WC_RETRY_EXC_ERR),
        ("IBV_WC_RECV", IBV_WC_RECV),
    ] {
        check(n, v.into());
    }
    check("IBV_LINK_LAYER_ETHERNET", IBV_LINK_LAYER_ETHERNET.into());
}

#[test]
fn missing_library_is_named() {
    let err = fabrik_verbs::Verbs::load_from("libibverbs-does-not-exist.so.1").unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("libibverbs-does-not-exist.so.1"), "{msg}");
    assert!(msg.contains("rdma-core"), "{msg}");
}

/// Where rdma-core is installed, loading works and every required symbol resolves.
#[test]
fn real_library_loads_when_installed() {
    if !Path::new("/usr/lib/x86_64-linux-gnu/libibverbs.so.1").exists() {
        fabrik_testbed::skip(
            "the real library check",
            "libibverbs.so.1 not installed (scripts/apt/test/verbs.txt)",
        );
        return;
    }
    let v = fabrik_verbs::Verbs::load().unwrap();
    assert_eq!(v.wc_status_str(0), "success");
    assert_eq!(v.wc_status_str(12), "transport retry counter exceeded");
}
