// SPDX-License-Identifier: BSD-3-Clause
#include "remote.h"


#include <cerrno>
#include <cstring>

#include "daemon/protocol.h"
#include "uroce/verbs/address_handle.h"
#include "uroce/verbs/memory_region.h"
#include "uroce/verbs/memory_window.h"

namespace uroce::detail {

std::unique_ptr<RemoteDevice> open_remote(const std::string& socket, std::string& error) {
  auto d = std::make_unique<RemoteDevice>();
  d->conn = client::Connection::connect(socket, error);
  if (!d->conn) return nullptr;
  d->name = d->conn->device_name();
  // The daemon's table: link-local first, then the port's address.
  d->gids = {wire::IpAddr::from_v6(d->conn->link_local_gid()), wire::IpAddr::from_v6(d->conn->gid())};
  std::memcpy(d->mac.bytes.data(), d->conn->mac(), 6);
  d->mtu = d->conn->mtu();
  // What the daemon's rings carry (lib/daemon/protocol.h).
  d->limits.max_sge = daemon::kMaxSge;
  d->limits.max_inline_data = daemon::kMaxInline;
  d->limits.max_mw = d->conn->max_mw();
  d->conn->set_ah_handle_of([](const AddressHandle* ah) { return ah->remote_handle(); });
  d->conn->set_bind_keys_of([](const SendWr& wr, uint32_t& window, uint32_t& region) {
    window = wr.bind_mw.mw->handle() | (wr.bind_mw.rkey & 0xFFu);
    region = wr.bind_mw.bind_info.mr != nullptr ? wr.bind_mw.bind_info.mr->lkey() : 0;
  });
  return d;
}

int remote_async_event(RemoteDevice& d, AsyncEvent& ev, bool wait) {
  client::AsyncEvent rev;
  if (const int err = d.conn->get_async_event(rev, wait); err != 0) return err;
  ev = AsyncEvent{};
  ev.event_type = rev.event_type;
  if (rev.qp != nullptr) ev.qp = static_cast<QueuePair*>(rev.qp->context);
  if (rev.cq != nullptr) ev.cq = static_cast<CompletionQueue*>(rev.cq->context);
  if (rev.srq != nullptr) ev.srq = static_cast<SharedReceiveQueue*>(rev.srq->context);
  return 0;
}

}  // namespace uroce::detail
