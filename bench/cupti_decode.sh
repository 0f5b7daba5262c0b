#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Decode throughput of the CUPTI collector on one core (goal >= 5 M records/s).
# Usage: bench/cupti_decode.sh [million-records]
set -euo pipefail
cd "$(dirname "$0")/.."
make --no-print-directory .output/bench/cupti_decode
exec .output/bench/cupti_decode "${1:-20}"
