#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The full memory test: 3 minutes of sustained load on the fixture server (64
# kept-alive connections, as fast as it serves), ttftrace's VmRSS sampled every
# 10 s; peak at most 64 MiB, flat within 2 MiB after warm-up. `make test` runs
# the same test for 40 s with 1 s samples (tests/root/memory/test_live_rss.py).
# Usage: bench/memory.sh [SECONDS]   (root; after `make`)
set -euo pipefail
cd "$(dirname "$0")/.."
export TTF_MEM_SECONDS="${1:-180}" TTF_MEM_SAMPLE_S=10
exec /usr/bin/python3 -m pytest -q -s -p no:cacheprovider tests/root/memory/test_live_rss.py
