/* Prints sizeof/offsetof of the libibverbs structures that fabrik-verbs mirrors, one
 * "name value" per line, for the layout test (tests/layout.rs) to compare with Rust. */
#include <stddef.h>
#include <stdio.h>
#include <infiniband/verbs.h>

#define S(t) printf("sizeof_%s %zu\n", #t, sizeof(struct t))
#define O(t, f) printf("%s.%s %zu\n", #t, #f, offsetof(struct t, f))

int main(void) {
	printf("sizeof_ibv_gid %zu\n", sizeof(union ibv_gid));
	S(ibv_device_attr); O(ibv_device_attr, max_qp_wr); O(ibv_device_attr, max_sge); O(ibv_device_attr, max_qp_rd_atom); O(ibv_device_attr, phys_port_cnt);
	S(ibv_port_attr); O(ibv_port_attr, active_mtu); O(ibv_port_attr, gid_tbl_len); O(ibv_port_attr, lid); O(ibv_port_attr, link_layer); O(ibv_port_attr, port_cap_flags2);
	S(ibv_qp_cap); S(ibv_qp_init_attr); O(ibv_qp_init_attr, cap); O(ibv_qp_init_attr, qp_type); O(ibv_qp_init_attr, sq_sig_all);
	S(ibv_global_route); S(ibv_ah_attr); O(ibv_ah_attr, dlid); O(ibv_ah_attr, is_global); O(ibv_ah_attr, port_num);
	S(ibv_qp_attr); O(ibv_qp_attr, path_mtu); O(ibv_qp_attr, rq_psn); O(ibv_qp_attr, dest_qp_num); O(ibv_qp_attr, qp_access_flags); O(ibv_qp_attr, cap);
	O(ibv_qp_attr, ah_attr); O(ibv_qp_attr, alt_ah_attr); O(ibv_qp_attr, pkey_index); O(ibv_qp_attr, max_rd_atomic); O(ibv_qp_attr, max_dest_rd_atomic);
	O(ibv_qp_attr, min_rnr_timer); O(ibv_qp_attr, port_num); O(ibv_qp_attr, timeout); O(ibv_qp_attr, retry_cnt); O(ibv_qp_attr, rnr_retry); O(ibv_qp_attr, rate_limit);
	S(ibv_sge); S(ibv_send_wr); O(ibv_send_wr, next); O(ibv_send_wr, sg_list); O(ibv_send_wr, num_sge); O(ibv_send_wr, opcode); O(ibv_send_wr, send_flags);
	O(ibv_send_wr, imm_data); O(ibv_send_wr, wr.rdma.remote_addr); O(ibv_send_wr, wr.rdma.rkey); O(ibv_send_wr, qp_type); O(ibv_send_wr, bind_mw);
	S(ibv_recv_wr); O(ibv_recv_wr, sg_list); O(ibv_recv_wr, num_sge);
	S(ibv_wc); O(ibv_wc, status); O(ibv_wc, opcode); O(ibv_wc, vendor_err); O(ibv_wc, byte_len); O(ibv_wc, qp_num); O(ibv_wc, wc_flags); O(ibv_wc, sl);
	S(ibv_mr); O(ibv_mr, addr); O(ibv_mr, length); O(ibv_mr, lkey); O(ibv_mr, rkey);
	O(ibv_qp, qp_num); O(ibv_qp, state);
	O(ibv_context, ops); O(ibv_context, ops.poll_cq); O(ibv_context, ops.post_send); O(ibv_context, ops.post_recv);
	printf("IBV_ACCESS_RELAXED_ORDERING %d\n", (int)IBV_ACCESS_RELAXED_ORDERING);
	printf("IBV_ACCESS_OPTIONAL_RANGE %d\n", (int)IBV_ACCESS_OPTIONAL_RANGE);
	printf("IBV_WR_RDMA_WRITE %d\nIBV_WR_SEND %d\nIBV_WR_RDMA_READ %d\n", IBV_WR_RDMA_WRITE, IBV_WR_SEND, IBV_WR_RDMA_READ);
	printf("IBV_SEND_SIGNALED %d\nIBV_SEND_INLINE %d\n", IBV_SEND_SIGNALED, IBV_SEND_INLINE);
	printf("IBV_QP_STATE %d\nIBV_QP_AV %d\nIBV_QP_PATH_MTU %d\nIBV_QP_RQ_PSN %d\nIBV_QP_DEST_QPN %d\nIBV_QP_SQ_PSN %d\nIBV_QP_MAX_DEST_RD_ATOMIC %d\nIBV_QP_MIN_RNR_TIMER %d\nIBV_QP_MAX_QP_RD_ATOMIC %d\n",
	       IBV_QP_STATE, IBV_QP_AV, IBV_QP_PATH_MTU, IBV_QP_RQ_PSN, IBV_QP_DEST_QPN, IBV_QP_SQ_PSN, IBV_QP_MAX_DEST_RD_ATOMIC, IBV_QP_MIN_RNR_TIMER, IBV_QP_MAX_QP_RD_ATOMIC);
	printf("IBV_QP_TIMEOUT %d\nIBV_QP_RETRY_CNT %d\nIBV_QP_RNR_RETRY %d\nIBV_QP_PKEY_INDEX %d\nIBV_QP_PORT %d\nIBV_QP_ACCESS_FLAGS %d\n",
	       IBV_QP_TIMEOUT, IBV_QP_RETRY_CNT, IBV_QP_RNR_RETRY, IBV_QP_PKEY_INDEX, IBV_QP_PORT, IBV_QP_ACCESS_FLAGS);
	printf("IBV_QPT_RC %d\nIBV_QPS_INIT %d\nIBV_QPS_RTR %d\nIBV_QPS_RTS %d\nIBV_MTU_1024 %d\nIBV_LINK_LAYER_ETHERNET %d\nIBV_WC_RETRY_EXC_ERR %d\nIBV_WC_RECV %d\n",
	       IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_MTU_1024, IBV_LINK_LAYER_ETHERNET, IBV_WC_RETRY_EXC_ERR, IBV_WC_RECV);
	return 0;
}
