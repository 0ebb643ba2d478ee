// SPDX-License-Identifier: BSD-3-Clause
// systemd's readiness protocol (sd_notify) without libsystemd: one datagram
// to the Unix socket that $NOTIFY_SOCKET names ('@' first: an abstract
// address). Nothing happens when the variable is not set.
#pragma once

namespace uroced {

// "READY=1", "STOPPING=1", "STATUS=...": newline-separated assignments.
// False if the variable names a socket that does not take the message.
bool notify_service_manager(const char* message);

}  // namespace uroced
