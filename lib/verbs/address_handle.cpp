#include "uroce/verbs/address_handle.h"

#include "uroce/verbs/protection_domain.h"

namespace uroce {

AddressHandle::~AddressHandle() { --pd_->children_; }

}  // namespace uroce
