#include "uroce/verbs/address_handle.h"

#include "engine_thread.h"
#include "uroce/verbs/device.h"
#include "uroce/verbs/protection_domain.h"

namespace uroce {

AddressHandle::~AddressHandle() {
  detail::Pause pause(pd_->device().engine_thread());
  --pd_->children_;
}

}  // namespace uroce
