// SPDX-License-Identifier: BSD-3-Clause
// Common base of the header views: a typed pointer to a header's first byte.
//
// Each header is a template over the byte type: HeaderRef<const uint8_t>
// gives a read-only view of a received frame, HeaderRef<uint8_t> adds the
// setters a builder needs. Views never own memory and never check bounds: the
// parser establishes that the bytes exist before it hands a view out.
#pragma once

#include <cstdint>
#include <type_traits>

#include "uroce/wire/byte_order.h"

namespace uroce::wire {

template <class Byte>
class HeaderRef {
  static_assert(std::is_same_v<std::remove_const_t<Byte>, uint8_t>);

 public:
  static constexpr bool kWritable = !std::is_const_v<Byte>;

  explicit HeaderRef(Byte* p) : p_(p) {}
  Byte* data() const { return p_; }

 protected:
  Byte* p_;
};

}  // namespace uroce::wire
