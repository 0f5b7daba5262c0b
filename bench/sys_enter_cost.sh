#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Cost per syscall of raw sys_enter against the per-syscall tracepoints
# syscalls:sys_enter_X (bench/sys_enter_cost.py has the method).
# Usage: bench/sys_enter_cost.sh [--rounds 5] [-n 1000000]
set -euo pipefail
cd "$(dirname "$0")/.."
exec /usr/bin/python3 bench/sys_enter_cost.py "$@"
