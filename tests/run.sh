#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Run the test tiers with pytest (Debian's python3-pytest):
#   unit  cmocka binaries under .output/tests/unit (no root)
#   bpf   ttftrace against the C fixture server (root)
#   e2e   ttftrace against the demo llama.cpp server (root, node-llama-cpp)
#   cli   bad input, exit codes, target exits mid-trace
# Usage: tests/run.sh [TIER...]   (default: all). Tiers that cannot run here
# (not root, no BTF) report SKIP with the reason.
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
exec "$PY" -m pytest -q -rs -p no:cacheprovider "${args[@]}"
