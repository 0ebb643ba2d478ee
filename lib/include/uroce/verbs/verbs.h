// SPDX-License-Identifier: BSD-3-Clause
// The uroce verbs API in one include.
#pragma once

#include "uroce/verbs/address_handle.h"
#include "uroce/verbs/completion_channel.h"
#include "uroce/verbs/completion_queue.h"
#include "uroce/verbs/counters.h"
#include "uroce/verbs/device.h"
#include "uroce/verbs/memory_region.h"
#include "uroce/verbs/memory_window.h"
#include "uroce/verbs/protection_domain.h"
#include "uroce/verbs/queue_pair.h"
#include "uroce/verbs/shared_receive_queue.h"
#include "uroce/verbs/types.h"
