// SPDX-License-Identifier: BSD-3-Clause
// Transport counters, named like the Linux rxe driver's hw_counters so that
// operators can read them side by side.
#pragma once

#include "uroce/api.h"

#include <cstdint>

namespace uroce {

struct UROCE_API TransportCounters {
  uint64_t sent_pkts = 0;
  uint64_t rcvd_pkts = 0;
  uint64_t duplicate_request = 0;    // responder: request PSN already executed
  uint64_t out_of_seq_request = 0;   // responder: request PSN ahead of expected
  uint64_t rcvd_rnr_err = 0;         // requester: RNR NAKs received
  uint64_t send_rnr_err = 0;         // responder: RNR NAKs sent
  uint64_t rcvd_seq_err = 0;         // requester: PSN sequence error NAKs received
  uint64_t ack_deferred = 0;         // ACKs coalesced into a later one
  uint64_t retry_exceeded_err = 0;
  uint64_t retry_rnr_exceeded_err = 0;
  uint64_t completer_retry_err = 0;  // go-back-N restarts (timeout, NAK, implied NAK)
  uint64_t local_ack_timeout_err = 0;
  uint64_t retransmitted_pkts = 0;
  uint64_t send_err = 0;             // TX could not take a packet
  uint64_t rdma_sends = 0;
  uint64_t rdma_recvs = 0;
  uint64_t nak_sent = 0;             // NAKs other than RNR sent by the responder
  uint64_t rcvd_nak = 0;             // NAKs other than RNR/sequence received
  uint64_t zero_copy_pkts = 0;       // sent with the payload pointing into the region
  uint64_t uc_msg_dropped = 0;       // UC responder: messages dropped (a packet lost, no
                                     // receive WQE, a bad key or length)

  TransportCounters& operator+=(const TransportCounters& o);
};

// Per device: the sum over its QPs plus what happens before a QP is found.
struct DeviceCounters {
  TransportCounters transport;
  uint64_t rx_frames = 0;
  uint64_t rx_other_host = 0;     // to a MAC address that is not ours, broadcast or a group we joined,
                                  // or on another VLAN; or RoCE to broadcast or any group
  uint64_t rx_not_roce = 0;       // neither RoCE nor ARP/ND
  uint64_t rx_neighbor = 0;       // ARP/ND frames handled
  uint64_t tx_neighbor = 0;       // ARP/ND requests and replies sent
  uint64_t rx_invalid = 0;        // failed parse (all reasons but the ICRC and the UDP checksum)
  uint64_t rx_icrc_err = 0;
  uint64_t rx_udp_csum_err = 0;   // a non-zero UDP checksum that does not verify
  uint64_t rx_other_ip = 0;       // RoCE to a destination IP that is none of our GIDs
  uint64_t rx_gathered = 0;       // payloads spread over mbuf segments, gathered
  uint64_t rx_unknown_qp = 0;
  uint64_t rx_not_from_peer = 0;  // for a connected QP, from another IP than its peer's
  uint64_t rx_bad_pkey = 0;       // a BTH P_Key outside the default partition (rxe's bad_pkey_cntr)
  uint64_t tx_frames = 0;
  uint64_t tx_no_mbuf = 0;
};

}  // namespace uroce
