#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs what uroce needs from Debian 12 (only what is missing), then
# configures and builds it in ./build.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  meson ninja-build pkg-config g++ python3
  libdpdk-dev libisal-dev zlib1g-dev libpcap-dev libibverbs-dev librdmacm-dev libboost-dev
  catch2 libcli11-dev nlohmann-json3-dev
  clang libclang-rt-14-dev        # libFuzzer + sanitizers
  tshark python3-scapy            # what the independent packet oracle runs on
  iproute2                        # network namespaces and veth pairs for the port tests
  iptables                        # the ECN marker of the DCQCN bottleneck test where the kernel has no sch_red
  python3-matplotlib              # scripts/plot_incast.py, scripts/perf-report (docs/img/*.png)
  sockperf iperf3                 # scripts/perf-report: what a user runs without RDMA (docs/performance.md)
  qemu-system-x86 busybox-static rdma-core ibverbs-utils ibverbs-providers perftest tcpdump  # the rxe interop VM (docs/interop.md)
  rdmacm-utils qperf fio libfabric-bin  # rdma_cm and libfabric programs through uroce-run (docs/cm.md)
  ucx-utils                       # ucx_perftest and ucx_info through uroce-run (docs/verbs-abi.md)
  dpdk-dev                        # dpdk-telemetry.py: uroced's telemetry commands (docs/operations.md)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

[ -f build/build.ninja ] || meson setup build
ninja -C build -j"$(nproc)"
