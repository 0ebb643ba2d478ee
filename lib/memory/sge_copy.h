// SPDX-License-Identifier: BSD-3-Clause
// Copies between a message (a scatter/gather list of local buffers) and a
// packet payload, at any byte offset of the message. Every SGE touched is
// checked through its lkey first.
#pragma once

#include <cstdint>

#include "sge.h"
#include "access.h"

namespace uroce::memory {

// Message bytes [off, off+len) into dst. False if an SGE fails its check.
bool gather(const MrTable& mrs, const ProtectionDomain* pd, const SgeList& sgl, uint64_t off,
            uint8_t* dst, uint32_t len);
// The region and host pointer of message bytes [off, off+len) when they lie
// in one SGE (checked as gather checks them); nullptr otherwise.
Region* locate(const MrTable& mrs, const ProtectionDomain* pd, const SgeList& sgl, uint64_t off,
                     uint32_t len, uint8_t*& p);
// src into message bytes [off, off+len); needs IBV_ACCESS_LOCAL_WRITE.
bool scatter(const MrTable& mrs, const ProtectionDomain* pd, const SgeList& sgl, uint64_t off,
             const uint8_t* src, uint32_t len);

}  // namespace uroce::memory
