#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The GPU check: every GPU question in one run of at most 8 minutes, one
# results file, one summary table (docs/gpu.md "The GPU check").
#   make gpu-check [GPU_RESULTS=FILE]          on a machine with an NVIDIA GPU
#   make gpu-check DRY=1                       here: stand-ins, same steps (in make test)
# Steps (each under its own time limit; one that cannot run says why and the
# rest go on):
#   build    the collector, cupti_rx and known_work.cu (nvcc) with the tools there
#   known    known work under the collector: CUPTI durations against cudaEvents
#   tracer   ttftrace -c on the PyTorch server with the collector injected, load at
#            concurrency 1 and 8: per-request prefill GPU time against the server's
#            own cudaEvent timing, copies with GB/s
#   copybw   ttftrace copybw against PyTorch's own copies, same sizes
#   pcie     ttftrace pcie against nvidia-smi -q and /sys, idle and under load
#   attach   ttftrace gpu-attach on the server started without injection: records
#            after attach, tokens/s before and after, a second attach refused
# tests/gpu/check.py turns the step outputs into results.json and the table.
# Exit 0 when every check that ran passed.
# Env: DRY=1, TTFTRACE (default ./ttftrace), PYTHON, CC, NVCC, CUDA_HOME, PORT.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
DRY=${DRY:-0}
W=${GPU_WORK:-$ROOT/.output/gpu-check}
rm -rf "$W"
mkdir -p "$W/steps"
RESULTS=${1:-$W/results.json}
PY=${PYTHON:-python3}
CC=${CC:-cc}
TTF=${TTFTRACE:-$ROOT/ttftrace}
PORT=${PORT:-18431}
SOCK="@ttftrace-gpu-check-$$"
N1=${N1:-12}
N8=${N8:-24}
PROMPT=${PROMPT:-1024}
LOG=$W/run.log
T_START=$(date +%s)
note() { echo "[$(($(date +%s) - T_START))s] $*" | tee -a "$LOG" >&2; }
# step NAME STATUS WHY: what ran, for check.py (ok = ran; its numbers are judged there)
step() { printf '{"step": "%s", "status": "%s", "why": "%s", "t_s": %d}\n' "$1" "$2" \
	"${3//\"/\'}" $(($(date +%s) - T_START)) >"$W/steps/$1.json"; note "step $1: $2 ${3:-}"; }
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done; }
trap cleanup EXIT
source "$ROOT/tests/gpu/steps.sh"

env_probe
build || { step build fail "$BUILD_WHY"; }
[ -f "$W/steps/build.json" ] || step build ok ""
step_known
step_tracer
step_copybw
step_pcie
step_attach
note "total $(($(date +%s) - T_START)) s"
"$PY" "$ROOT/tests/gpu/check.py" "$W" "$RESULTS"
rc=$?
note "results: $RESULTS"
exit $rc
