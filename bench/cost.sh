#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Cost per streamed token of ttftrace, by CPU accounting, against no tracer and
# bpftrace, on the demo engine and llama-server (bench/cost.py has the method).
# Usage: bench/cost.sh [--targets demo,llama] [--rounds 5] [-c 8] [-n 48] [-m 64]
set -euo pipefail
cd "$(dirname "$0")/.."
exec /usr/bin/python3 bench/cost.py "$@"
