// SPDX-License-Identifier: BSD-3-Clause
#include "qp_modify.h"

#include <cerrno>

#include "services.h"
#include "cc.h"
#include "qp_transitions.h"
#include "transport.h"

namespace uroce::transport {
namespace {

constexpr int kAccessMask =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

int check_values(const Qp& qp, const ibv_qp_attr& a, int mask) {
  const DeviceLimits& lim = qp.eng->config().limits;
  if ((mask & IBV_QP_PATH_MTU) &&
      (mtu_bytes(a.path_mtu) == 0 || a.path_mtu > max_path_mtu(qp.eng->config().port_mtu)))
    return EINVAL;
  if ((mask & IBV_QP_TIMEOUT) && a.timeout > 31) return EINVAL;
  if ((mask & IBV_QP_RETRY_CNT) && a.retry_cnt > 7) return EINVAL;
  if ((mask & IBV_QP_RNR_RETRY) && a.rnr_retry > 7) return EINVAL;
  if ((mask & IBV_QP_MIN_RNR_TIMER) && a.min_rnr_timer > 31) return EINVAL;
  if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a.max_rd_atomic > lim.max_qp_rd_atom) return EINVAL;
  if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a.max_dest_rd_atomic > lim.max_qp_rd_atom) return EINVAL;
  if ((mask & IBV_QP_DEST_QPN) && a.dest_qp_num > 0xFFFFFF) return EINVAL;
  if ((mask & IBV_QP_PORT) && a.port_num != 1) return EINVAL;
  if ((mask & IBV_QP_PKEY_INDEX) && a.pkey_index != 0) return EINVAL;
  if ((mask & IBV_QP_ACCESS_FLAGS) && (a.qp_access_flags & ~kAccessMask)) return EINVAL;
  if ((mask & IBV_QP_CUR_STATE) && a.cur_qp_state != qp.state) return EINVAL;
  return 0;
}

// The headers every packet of a connected QP shares, from its address vector.
int build_template(Qp& qp, const ibv_ah_attr& ah) {
  const auto& gids = qp.eng->config().gids;
  if (!ah.is_global || ah.grh.sgid_index >= gids.size()) return EINVAL;
  const wire::IpAddr dgid = wire::IpAddr::from_v6(ah.grh.dgid.raw);
  const wire::IpAddr& sgid = gids[ah.grh.sgid_index];
  if (dgid.is_v4_mapped() != sgid.is_v4_mapped()) return EINVAL;
  wire::MacAddr dmac;
  if (!qp.eng->resolve(dgid, dmac)) {
    qp.eng->resolve_neighbor(dgid);  // so that a retry can succeed
    return EHOSTUNREACH;
  }
  wire::PacketFields& f = qp.hdr;
  f.eth.src = qp.eng->mac();
  f.eth.dst = dmac;
  f.eth.has_vlan = qp.eng->config().vlan;
  f.eth.vlan_tci = vlan_tci_for(qp.eng->config(), ah.sl);
  qp.to_self = dmac == qp.eng->mac();
  f.ip.ipv6 = !dgid.is_v4_mapped();
  f.ip.src = sgid;
  f.ip.dst = dgid;
  // A traffic class without DSCP or ECN bits leaves the congestion
  // control's (cc_setup): data is ECN-capable unless told otherwise.
  if (ah.grh.traffic_class >> 2) f.ip.dscp = ah.grh.traffic_class >> 2;
  if (ah.grh.traffic_class & 3) f.ip.ecn = ah.grh.traffic_class & 3;
  f.ip.ttl = ah.grh.hop_limit ? ah.grh.hop_limit : 64;
  f.ip.df = !f.ip.ipv6;
  f.ip.flow_label = f.ip.ipv6 ? ah.grh.flow_label : 0;
  return 0;
}

void apply(Qp& qp, const ibv_qp_attr& a, int mask) {
  QpAttrs& q = qp.attr;
  if (mask & IBV_QP_PATH_MTU) {
    q.path_mtu = a.path_mtu;
    q.pmtu = mtu_bytes(a.path_mtu);
  }
  if (mask & IBV_QP_DEST_QPN) q.dest_qpn = a.dest_qp_num;
  if (mask & IBV_QP_QKEY) q.qkey = a.qkey;
  if (mask & IBV_QP_ACCESS_FLAGS) q.access_flags = a.qp_access_flags;
  if (mask & IBV_QP_SQ_PSN) q.sq_psn = a.sq_psn & 0xFFFFFFu;
  if (mask & IBV_QP_RQ_PSN) q.rq_psn = a.rq_psn & 0xFFFFFFu;
  if (mask & IBV_QP_TIMEOUT) q.timeout = a.timeout;
  if (mask & IBV_QP_RETRY_CNT) q.retry_cnt = a.retry_cnt;
  if (mask & IBV_QP_RNR_RETRY) q.rnr_retry = a.rnr_retry;
  if (mask & IBV_QP_MIN_RNR_TIMER) q.min_rnr_timer = a.min_rnr_timer;
  if (mask & IBV_QP_MAX_QP_RD_ATOMIC) q.max_rd_atomic = a.max_rd_atomic;
  if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) q.max_dest_rd_atomic = a.max_dest_rd_atomic;
  if (mask & IBV_QP_AV) q.ah = a.ah_attr;
}

// A connected QP's packets start from its header template, made again
// whenever a modify may have changed what it is made of.
void refresh_template(Qp& qp) {
  const bool connected = qp.state == IBV_QPS_RTR || qp.state == IBV_QPS_RTS || qp.state == IBV_QPS_SQD;
  qp.tmpl = wire::HeaderTemplate{};
  if (qp.is_connected() && connected) qp.tmpl.prepare(qp.hdr, qp.eng->ipv4_checksum());
}

void enter_reset(Qp& qp) {
  while (!qp.sq.empty()) {
    release_sges(qp, qp.sq.sgl(qp.sq.front()));
    qp.sq.pop();
  }
  if (qp.srq == nullptr)
    while (!qp.rq.wq.empty()) {
      release_sges(qp, qp.rq.sgl(qp.rq.wq.front()));
      qp.rq.wq.pop();
    }
  if (qp.resp.have_recv) release_sges(qp, qp.recv_queue().sgl(qp.resp.recv));
  qp.req = RequesterState{};
  qp.req.wqe = qp.sq.tail();
  qp.comp = CompleterState{};
  const uint32_t out_cap = qp.resp.out.capacity();
  const uint32_t holder = qp.resp.recv.block;  // its block in the receive queue, free again
  qp.resp = ResponderState{};
  qp.resp.out.reset(out_cap);
  qp.resp.recv.block = holder;
  cc_reset(qp);
}

void enter_rtr(Qp& qp) {
  if (qp.is_ud()) {
    // UD has no path MTU attribute: a datagram may be as large as the
    // port carries (rxe uses the port's active MTU).
    qp.attr.path_mtu = max_path_mtu(qp.eng->config().port_mtu);
    qp.attr.pmtu = mtu_bytes(qp.attr.path_mtu);
  }
  qp.resp.epsn = qp.attr.rq_psn;
  const uint32_t slots = qp.attr.max_dest_rd_atomic ? qp.attr.max_dest_rd_atomic : 1;
  qp.resp.res.assign(slots, RdAtomicResource{});
  qp.resp.out.reset(2 * slots + 8);
  qp.hdr.bth.dest_qp = qp.attr.dest_qpn;
  qp.hdr.udp.sport = qp.is_connected() ? wire::roce_udp_sport(qp.hdr.ip.flow_label, qp.qpn, qp.attr.dest_qpn)
                                : wire::roce_udp_sport_unconnected(qp.qpn);
}

void enter_rts(Qp& qp, ibv_qp_state from) {
  if (from == IBV_QPS_RTR) {
    qp.req.psn = qp.req.max_psn = qp.comp.una = qp.attr.sq_psn;
    qp.req.wqe = qp.sq.tail();
  }
  qp.comp.retry_left = qp.attr.retry_cnt;
  qp.comp.rnr_retry_left = qp.attr.rnr_retry;
  qp.eng->schedule(&qp);
}

}  // namespace

ibv_mtu max_path_mtu(uint16_t port_mtu) {
  // IPv6 + UDP + BTH + the longest extension headers + ICRC.
  constexpr int kOverhead = 40 + 8 + 12 + 28 + 4;
  for (ibv_mtu m : {IBV_MTU_4096, IBV_MTU_2048, IBV_MTU_1024, IBV_MTU_512})
    if (int(mtu_bytes(m)) + kOverhead <= port_mtu) return m;
  return IBV_MTU_256;
}

int modify_qp(Qp& qp, const ibv_qp_attr& attr, int mask) {
  const ibv_qp_state from = qp.state;
  const ibv_qp_state to = (mask & IBV_QP_STATE) ? attr.qp_state : from;
  if (!transition_allowed(qp.init.qp_type, from, to, mask)) return EINVAL;
  if (int err = check_values(qp, attr, mask)) return err;
  if (qp.init.qp_type == IBV_QPT_UD && to == IBV_QPS_RTR) {
    // UD: only the source side is fixed, and each datagram's address
    // handle still picks its IP source (ud.cpp).
    wire::PacketFields& f = qp.hdr;
    f.eth.src = qp.eng->mac();
    f.eth.has_vlan = qp.eng->config().vlan;
    f.eth.vlan_tci = qp.eng->config().vlan_tci;
    f.ip.src = qp.eng->config().gids.empty() ? wire::IpAddr{} : qp.eng->config().gids[0];
    f.ip.ipv6 = !f.ip.src.is_v4_mapped();
    f.ip.df = !f.ip.ipv6;
  }
  if ((mask & IBV_QP_AV) && qp.is_connected())
    if (int err = build_template(qp, attr.ah_attr)) return err;
  apply(qp, attr, mask);
  qp.state = to;
  if (to == IBV_QPS_RESET) enter_reset(qp);
  if (to == IBV_QPS_RTR) enter_rtr(qp);
  if (to == IBV_QPS_RTS) enter_rts(qp, from);
  if (to == IBV_QPS_ERR && from != IBV_QPS_ERR) enter_error(qp);
  refresh_template(qp);
  return 0;
}

void query_qp(const Qp& qp, ibv_qp_attr& a) {
  a = ibv_qp_attr{};
  const QpAttrs& q = qp.attr;
  a.qp_state = a.cur_qp_state = qp.state;
  a.path_mtu = q.path_mtu;
  a.qkey = q.qkey;
  a.rq_psn = q.rq_psn;
  a.sq_psn = q.sq_psn;
  a.dest_qp_num = q.dest_qpn;
  a.qp_access_flags = q.access_flags;
  a.ah_attr = q.ah;
  a.pkey_index = q.pkey_index;
  a.port_num = q.port_num;
  a.timeout = q.timeout;
  a.retry_cnt = q.retry_cnt;
  a.rnr_retry = q.rnr_retry;
  a.min_rnr_timer = q.min_rnr_timer;
  a.max_rd_atomic = q.max_rd_atomic;
  a.max_dest_rd_atomic = q.max_dest_rd_atomic;
  a.cap = qp.init.cap;
  a.sq_draining = 0;
}

}  // namespace uroce::transport
