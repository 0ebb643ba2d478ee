// SPDX-License-Identifier: BSD-3-Clause
// The RoCEv2 extension headers that may follow the BTH (IBA 9.3 and 9.4).
// Which of them a packet carries, and in what order, is fixed by its opcode
// (see opcode.h); these views only know each header's own layout.
#pragma once

#include <cstddef>
#include <cstdint>

#include "uroce/wire/header_ref.h"

namespace uroce::wire {

inline constexpr size_t kRethLen = 16;
inline constexpr size_t kAethLen = 4;
inline constexpr size_t kAtomicEthLen = 28;
inline constexpr size_t kAtomicAckEthLen = 8;
inline constexpr size_t kImmDtLen = 4;
inline constexpr size_t kIethLen = 4;
inline constexpr size_t kDethLen = 8;
inline constexpr size_t kCnpReservedLen = 16;  // the zero bytes after a CNP's BTH

// RDMA Extended Transport Header: target of a WRITE or READ.
template <class Byte>
class RethT : public HeaderRef<Byte> {
  using HeaderRef<Byte>::p_;
  static constexpr bool W = HeaderRef<Byte>::kWritable;

 public:
  using HeaderRef<Byte>::HeaderRef;
  uint64_t va() const { return load_be64(p_); }
  uint32_t rkey() const { return load_be32(p_ + 8); }
  uint32_t dma_len() const { return load_be32(p_ + 12); }
  void set(uint64_t va, uint32_t rkey, uint32_t len) requires W {
    store_be64(p_, va);
    store_be32(p_ + 8, rkey);
    store_be32(p_ + 12, len);
  }
};

// ACK Extended Transport Header: syndrome (ACK / RNR NAK / NAK) and MSN.
template <class Byte>
class AethT : public HeaderRef<Byte> {
  using HeaderRef<Byte>::p_;
  static constexpr bool W = HeaderRef<Byte>::kWritable;

 public:
  using HeaderRef<Byte>::HeaderRef;
  uint8_t syndrome() const { return p_[0]; }
  uint32_t msn() const { return load_be24(p_ + 1); }
  void set(uint8_t syndrome, uint32_t msn) requires W {
    p_[0] = syndrome;
    store_be24(p_ + 1, msn);
  }
};

// Atomic Extended Transport Header: CMP_SWAP / FETCH_ADD operands.
template <class Byte>
class AtomicEthT : public HeaderRef<Byte> {
  using HeaderRef<Byte>::p_;
  static constexpr bool W = HeaderRef<Byte>::kWritable;

 public:
  using HeaderRef<Byte>::HeaderRef;
  uint64_t va() const { return load_be64(p_); }
  uint32_t rkey() const { return load_be32(p_ + 8); }
  uint64_t swap_add() const { return load_be64(p_ + 12); }
  uint64_t compare() const { return load_be64(p_ + 20); }
  void set(uint64_t va, uint32_t rkey, uint64_t swap_add, uint64_t compare) requires W {
    store_be64(p_, va);
    store_be32(p_ + 8, rkey);
    store_be64(p_ + 12, swap_add);
    store_be64(p_ + 20, compare);
  }
};

// Atomic ACK Extended Transport Header: the value before the atomic ran.
template <class Byte>
class AtomicAckEthT : public HeaderRef<Byte> {
  using HeaderRef<Byte>::p_;

 public:
  using HeaderRef<Byte>::HeaderRef;
  uint64_t orig() const { return load_be64(p_); }
  void set(uint64_t v) requires HeaderRef<Byte>::kWritable { store_be64(p_, v); }
};

// A single big-endian 32-bit word: ImmDt (immediate data) and IETH (the
// rkey to invalidate) share this layout.
template <class Byte>
class Word32T : public HeaderRef<Byte> {
  using HeaderRef<Byte>::p_;

 public:
  using HeaderRef<Byte>::HeaderRef;
  uint32_t value() const { return load_be32(p_); }
  void set(uint32_t v) requires HeaderRef<Byte>::kWritable { store_be32(p_, v); }
};

// Datagram Extended Transport Header (UD): Q_Key and source QP.
template <class Byte>
class DethT : public HeaderRef<Byte> {
  using HeaderRef<Byte>::p_;
  static constexpr bool W = HeaderRef<Byte>::kWritable;

 public:
  using HeaderRef<Byte>::HeaderRef;
  uint32_t qkey() const { return load_be32(p_); }
  uint32_t src_qp() const { return load_be24(p_ + 5); }
  void set(uint32_t qkey, uint32_t src_qp) requires W {
    store_be32(p_, qkey);
    p_[4] = 0;
    store_be24(p_ + 5, src_qp);
  }
};

using RethView = RethT<const uint8_t>;
using AethView = AethT<const uint8_t>;
using AtomicEthView = AtomicEthT<const uint8_t>;
using AtomicAckEthView = AtomicAckEthT<const uint8_t>;
using ImmDtView = Word32T<const uint8_t>;
using IethView = Word32T<const uint8_t>;
using DethView = DethT<const uint8_t>;

// AETH syndrome: bits 6..5 say what it is, bits 4..0 carry its value.
enum class AethType : uint8_t { ack = 0, rnr_nak = 1, reserved = 2, nak = 3 };
inline constexpr AethType aeth_type(uint8_t syndrome) { return AethType((syndrome >> 5) & 3); }
inline constexpr uint8_t aeth_value(uint8_t syndrome) { return syndrome & 0x1F; }
inline constexpr uint8_t make_aeth_syndrome(AethType t, uint8_t value) {
  return uint8_t(uint8_t(t) << 5 | (value & 0x1F));
}
// Credit count 31: "no end-to-end credit information", what rxe always sends.
inline constexpr uint8_t kAethAckNoCredit = 0x1F;

// NAK codes (AETH value when the type is nak).
enum class NakCode : uint8_t {
  psn_sequence_error = 0,
  invalid_request = 1,
  remote_access_error = 2,
  remote_operational_error = 3,
  invalid_rd_request = 4,
};

}  // namespace uroce::wire
