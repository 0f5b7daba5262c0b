#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Run the test tiers with pytest (Debian's python3-pytest). Tiers are named by
# what they need:
#   unit     cmocka binaries, tests/unit/<layer>/ as user/ is (nothing but the build)
#   noroot   layout and docs checks, PCIe audit on fake sysfs trees, fuzz seeds
#   root     ttftrace's BPF programs against fixtures and real gateways (root, BTF);
#            one folder per area: root/bpf, root/hops, root/proto, root/tls, ...
#   engine   against the demo's real llama.cpp server (root, node-llama-cpp)
# Not here: tests/qemu (make qemu-test: QEMU), tests/gpu (make gpu-check: a GPU),
# tests/container (make container-test: podman, the Debian mirror).
# tests/cuda (make cuda-none-check, cuda-headers-check: builds without CUDA, with 11.8).
# Usage: tests/run.sh [TIER...]   (default: all; a tier may be a folder such as
# root/hops). Tiers that cannot run here (not root, no BTF) report SKIP with the reason.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
args=()
if [ $# -gt 0 ]; then
	for t in "$@"; do args+=("tests/$t"); done
else
	args=(tests)
fi
# --tb=short and -rfE: a failure's own line and message, and a one-line summary
# of each at the end, so that the tail CI keeps names what failed and why.
exec "$PY" -m pytest -q -rfEs --tb=short -p no:cacheprovider "${args[@]}"
