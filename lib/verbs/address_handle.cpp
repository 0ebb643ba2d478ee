// SPDX-License-Identifier: BSD-3-Clause
#include "access.h"
#include "uroce/verbs/address_handle.h"

#include "engine/engine_thread.h"
#include "uroce/verbs/device.h"
#include "uroce/verbs/protection_domain.h"

namespace uroce {

AddressHandle::~AddressHandle() {
  detail::Pause pause(detail::to_thread(pd_->device()));
  --pd_->children_;
}

}  // namespace uroce
