// SPDX-License-Identifier: BSD-3-Clause
// The kernel files that some verbs programs look for besides calling
// libibverbs, shown to PROGRAM alone in a private mount namespace.
//
// UCX (libuct_ib) uses an IB device only when /dev/infiniband/<dev_name> is
// a character device it may read and write (it never opens it), and reads
// /sys/class/infiniband/<dev>/ports/<p>/gid_attrs/types/<i> to tell RoCE
// v2 from v1 and .../ndevs/<i> for the port's netdev. uroce has no kernel
// part, so uroce-run adds these, for each configured device, over the real
// /dev and /sys/class with mounts visible to PROGRAM only.
#pragma once

#include <string>
#include <vector>

namespace uroce::run {

struct ViewDevice {
  std::string name;    // uroce0, ...
  std::string netdev;  // the kernel interface of an af_packet/af_xdp vdev, else empty
  int gids = 2;        // GID table length: the link-local GID and one per address
};

// The netdev named by "iface=NAME" in a vdev string, else "".
std::string netdev_of(const std::string& dev);

enum class ViewResult {
  entered,  // PROGRAM will see the view
  refused,  // not root, and the kernel gives this user no user namespace
  failed,   // a step failed; the namespace may show part of the view
};

// Moves this process into a private mount namespace showing the devices'
// /dev/infiniband nodes and /sys/class/infiniband trees, never outside
// this process. As root, overlays on /dev and /sys/class; as another
// user, first a user namespace mapping the caller's own uid and gid,
// where /dev becomes a directory of links (kernel_view.cpp). `error`
// says why when the result is not `entered`.
ViewResult enter_kernel_view(const std::vector<ViewDevice>& devices, std::string& error);

}  // namespace uroce::run
