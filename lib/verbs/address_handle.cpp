// SPDX-License-Identifier: BSD-3-Clause
#include "access.h"
#include "uroce/verbs/address_handle.h"

#include "uroce/client/daemon_client.h"

#include "engine/engine_thread.h"
#include "uroce/verbs/device.h"
#include "uroce/verbs/protection_domain.h"

namespace uroce {

AddressHandle::~AddressHandle() {
  if (remote_handle_ != 0) {
    pd_->remote_->destroy_ah(remote_handle_);
    --pd_->children_;
    return;
  }
  // WRs posted with it and still in a submission ring carry a pointer to
  // it: the pause runs them (each copies the destination) first.
  detail::Pause pause(detail::to_thread(pd_->device()));
  --pd_->children_;
}

}  // namespace uroce
