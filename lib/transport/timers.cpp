// SPDX-License-Identifier: BSD-3-Clause
#include "transport.h"

namespace uroce::transport {

uint64_t ack_timeout_ns(uint8_t timeout) {
  if (timeout == 0) return kNever;  // IBA: 0 disables the local ACK timeout
  return 4096ull << (timeout & 0x1F);
}

uint64_t rnr_timer_ns(uint8_t code) {
  // IBA table 45 (rxe_comp.c rnrnak_usec[]), in microseconds.
  static constexpr uint32_t kUsec[32] = {
      655360, 10,    20,    30,    40,    60,    80,     120,    160,    240,   320,
      480,    640,   960,   1280,  1920,  2560,  3840,   5120,   7680,   10240, 15360,
      20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520};
  return uint64_t(kUsec[code & 0x1F]) * 1000;
}

uint32_t mtu_bytes(ibv_mtu mtu) {
  switch (mtu) {
    case IBV_MTU_256: return 256;
    case IBV_MTU_512: return 512;
    case IBV_MTU_1024: return 1024;
    case IBV_MTU_2048: return 2048;
    case IBV_MTU_4096: return 4096;
  }
  return 0;
}

}  // namespace uroce::transport
