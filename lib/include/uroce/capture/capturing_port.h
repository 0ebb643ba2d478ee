// SPDX-License-Identifier: BSD-3-Clause
// A PacketPort that writes every frame it sends and receives to a pcap
// file, then passes it on: `--pcap FILE` of the tools, for uroce-dump,
// tshark and the oracle. It costs a copy per frame, so it is only put in
// front of a port when asked for.
#pragma once

#include "uroce/api.h"

#include <memory>
#include <vector>

#include "uroce/capture/pcap_file.h"
#include "uroce/port/clock.h"
#include "uroce/port/packet_port.h"

namespace uroce::capture {

class UROCE_API CapturingPort : public PacketPort {
 public:
  // `writer` may be shared by several ports (one file for both ends).
  CapturingPort(PacketPort& inner, PcapWriter& writer, const Clock& clock)
      : inner_(inner), writer_(writer), clock_(clock) {}

  uint16_t rx_burst(rte_mbuf** pkts, uint16_t n) override;
  uint16_t tx_burst(rte_mbuf** pkts, uint16_t n) override;
  wire::MacAddr mac() const override { return inner_.mac(); }
  uint16_t mtu() const override { return inner_.mtu(); }
  // Chains are recorded whole (every segment is held across tx_burst), and
  // an offloaded IPv4 checksum is filled in on the recorded copy, so the
  // capture shows the frame as it goes on the wire.
  TxChains tx_chains() const override { return inner_.tx_chains(); }
  bool tx_ipv4_checksum() const override { return inner_.tx_ipv4_checksum(); }

 private:
  void record(rte_mbuf* const* pkts, uint16_t n);

  PacketPort& inner_;
  PcapWriter& writer_;
  const Clock& clock_;
  std::vector<uint8_t> scratch_ = std::vector<uint8_t>(16384);
};

}  // namespace uroce::capture
