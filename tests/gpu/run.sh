#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# GPU check for the CUPTI collector; run it as `make gpu-check` (not part of
# `make test`). Needs an NVIDIA GPU, PyTorch with CUDA, a C compiler and
# CUPTI headers; no network, no installs, no BPF toolchain. Runs in well
# under 6 minutes and writes everything it measured to ONE file:
#   make gpu-check [GPU_RESULTS=FILE]   (default .output/gpu-check/results.json)
# The facts it checks are in docs/cupti.md (A4 clocks, A7 graphs, A3 drops).
# Steps: build libttftrace-cupti.so and cupti_rx with cc (no BPF toolchain
# needed); serve a small random-weight transformer (tests/gpu/server.py) and
# load it (tests/gpu/load.py) without, then with CUDA_INJECTION64_PATH;
# join the received records with the server's prefill windows; check
#   C1 kernels and copies were recorded, graph-replayed kernels included,
#   C2 records are on the CLOCK_MONOTONIC (BPF) clock: timestamp callback in
#      use, every correlated launch API start <= its kernel start, all
#      timestamps inside the server's lifetime as read by time.monotonic_ns(),
#   C3 every request has prefill GPU time and its copies (with GB/s),
#   C4 nothing was dropped in transport, no invalid or duplicate records,
# and report tokens/s with injection / without as a ratio.
# Exit 0 when every check passes.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
W=$ROOT/.output/gpu-check
mkdir -p "$W"
RESULTS=${1:-$W/results.json}
PY=${PYTHON:-python3}
CC=${CC:-cc}
PORT=${PORT:-18431}
NREQ=${NREQ:-12}
SOCK="@ttftrace-gpu-check-$$"
LOG=$W/run.log
: >"$LOG"
note() { echo "$*" | tee -a "$LOG" >&2; }
fail_early() {
	note "Error: $1"
	"$PY" - "$RESULTS" "$1" <<'PYEOF'
import json, sys
json.dump({"pass": False, "error": sys.argv[2]}, open(sys.argv[1], "w"), indent=1)
PYEOF
	exit 1
}

# --- 1. Environment ------------------------------------------------------------------
nvidia-smi -L >>"$LOG" 2>&1 || note "warning: nvidia-smi not usable"
TORCH_INFO=$(timeout 60 "$PY" -c 'import json,torch,os;print(json.dumps({"torch":torch.__version__,"cuda":torch.version.cuda,"gpu":torch.cuda.is_available(),"site":os.path.dirname(os.path.dirname(torch.__file__))}))') \
	|| fail_early "PyTorch not importable"
note "torch: $TORCH_INFO"
SITE=$("$PY" -c 'import json,sys;print(json.loads(sys.argv[1])["site"])' "$TORCH_INFO")

# CUPTI headers (cupti.h needs cuda.h too) and a libcupti matching the process.
CUDA_DIRS=("${CUDA_HOME:-}" /usr/local/cuda /usr/local/cuda-13.0 /usr/local/cuda-12)
INC=()
for d in "${CUDA_DIRS[@]}"; do
	[ -n "$d" ] || continue
	for s in include extras/CUPTI/include targets/x86_64-linux/include; do
		[ -f "$d/$s/cupti.h" ] || [ -f "$d/$s/cuda.h" ] && INC+=("-I$d/$s")
	done
done
for s in "$SITE"/nvidia/*/include "$SITE"/nvidia/cu13/include; do
	[ -d "$s" ] && INC+=("-I$s")
done
CUPTI_H=$(for i in "${INC[@]}"; do f=${i#-I}/cupti_activity.h; [ -f "$f" ] && echo "$f" && break; done)
[ -n "$CUPTI_H" ] || fail_early "cupti_activity.h not found (set CUDA_HOME)"
# cupti/ builds against CUDA 11.8 (CUPTI_API_VERSION 18) and newer (docs/gpu.md "Building the collector")
API=$(sed -n 's/^#define CUPTI_API_VERSION \([0-9]*\).*/\1/p' "$(dirname "$CUPTI_H")/cupti_version.h")
[ "${API:-0}" -ge 18 ] || fail_early "CUPTI headers older than CUDA 11.8 ($CUPTI_H: ${API:-no version})"
CUPTI_LIB=${TTFTRACE_CUPTI_LIB:-}
if [ -z "$CUPTI_LIB" ]; then
	for f in "$SITE"/nvidia/cuda_cupti/lib/libcupti.so.1[23] "$SITE"/nvidia/cu13/lib/libcupti.so.13 \
		 "${CUDA_HOME:-/usr/local/cuda}"/extras/CUPTI/lib64/libcupti.so.1[23] \
		 "${CUDA_HOME:-/usr/local/cuda}"/lib64/libcupti.so.1[23] /usr/local/cuda/lib64/libcupti.so.1[23]; do
		[ -f "$f" ] && CUPTI_LIB=$f && break
	done
fi
note "cupti headers: $CUPTI_H; libcupti: ${CUPTI_LIB:-<none found; relying on the process>}"

# --- 2. Build ------------------------------------------------------------------------
CFLAGS="-O2 -g -std=gnu11 -D_GNU_SOURCE -Wall -I$ROOT"
$CC $CFLAGS "${INC[@]}" -fPIC -shared cupti/*.c -ldl -lpthread -o "$W/libttftrace-cupti.so" >>"$LOG" 2>&1 \
	|| fail_early "building libttftrace-cupti.so failed (see $LOG)"
$CC $CFLAGS tests/drivers/cupti_rx/main.c user/probe/gpu_rx.c user/model/gpu_store.c user/model/gpu_join.c -o "$W/cupti_rx" >>"$LOG" 2>&1 \
	|| fail_early "building cupti_rx failed (see $LOG)"
nm -D --defined-only "$W/libttftrace-cupti.so" | grep -q ' T InitializeInjection$' \
	|| fail_early "InitializeInjection is not exported"

# --- 3. Server runs ------------------------------------------------------------------
SRV_PID=
start_server() { # $1 = tag, rest = env assignments
	local tag=$1; shift
	env "$@" "$PY" tests/gpu/server.py "$PORT" >"$W/server-$tag.out" 2>"$W/server-$tag.err" &
	SRV_PID=$!
	for _ in $(seq 1 450); do
		grep -q '"ready"' "$W/server-$tag.out" 2>/dev/null && return 0
		kill -0 "$SRV_PID" 2>/dev/null || return 1
		sleep 0.2
	done
	return 1
}
stop_server() {
	kill -INT "$SRV_PID" 2>/dev/null
	for _ in $(seq 1 100); do kill -0 "$SRV_PID" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$SRV_PID" 2>/dev/null
	wait "$SRV_PID" 2>/dev/null
}
trap 'kill -KILL $SRV_PID $RX_PID 2>/dev/null' EXIT
RX_PID=

note "phase A: no injection"
start_server plain || fail_early "server did not start (see $W/server-plain.err)"
timeout 60 "$PY" tests/gpu/load.py "$PORT" "$NREQ" >"$W/load-plain.json" 2>>"$LOG" || note "load A failed"
stop_server

note "phase B: CUDA_INJECTION64_PATH=$W/libttftrace-cupti.so"
: >"$W/windows.txt"
"$W/cupti_rx" -s "$SOCK" -w "$W/windows.txt" -o "$W/rx.json" 2>>"$LOG" &
RX_PID=$!
sleep 0.3
start_server inject CUDA_INJECTION64_PATH="$W/libttftrace-cupti.so" TTFTRACE_CUPTI_SOCK="$SOCK" \
	WINDOWS_FILE="$W/windows.txt" ${CUPTI_LIB:+TTFTRACE_CUPTI_LIB=$CUPTI_LIB} \
	|| note "injected server did not start (see $W/server-inject.err)"
timeout 60 "$PY" tests/gpu/load.py "$PORT" "$NREQ" >"$W/load-inject.json" 2>>"$LOG" || note "load B failed"
stop_server
kill -TERM "$RX_PID" 2>/dev/null
wait "$RX_PID" 2>/dev/null
RX_PID=

# --- 4. Checks, one results file -----------------------------------------------------
"$PY" - "$W" "$RESULTS" "$TORCH_INFO" <<'PYEOF'
import json, os, sys
w, out, torch_info = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])

def load(name):
    try:
        return json.load(open(os.path.join(w, name)))
    except Exception as e:  # noqa: BLE001
        return {"error": str(e)}

def first_json_line(name):
    try:
        for line in open(os.path.join(w, name)):
            if line.startswith("{"):
                return json.loads(line)
    except OSError:
        pass
    return {}

rx, a, b = load("rx.json"), load("load-plain.json"), load("load-inject.json")
srv = first_json_line("server-inject.out")
err = open(os.path.join(w, "server-inject.err")).read() if os.path.exists(os.path.join(w, "server-inject.err")) else ""
col, clk = rx.get("collector", {}), rx.get("clock", {})
reqs = rx.get("requests", [])
checks = {}
checks["C1_kernels_and_copies"] = rx.get("kernels", 0) > 0 and rx.get("copies", 0) > 0
checks["C1_graph_kernels"] = (rx.get("graph_kernels", 0) > 0) if srv.get("graph") else None
t_lo = srv.get("mono_start_ns", 0) - 120 * 10**9
checks["C2_monotonic_callback"] = col.get("clock_mode") == 1
checks["C2_launch_before_kernel"] = clk.get("pairs", 0) > 0 and clk.get("kernel_before_launch", 1) == 0
checks["C2_in_server_lifetime"] = (rx.get("kernels", 0) > 0 and clk.get("min_ts", 0) >= t_lo
                                   and clk.get("max_ts", 0) <= clk.get("mono_now", 0))
checks["C3_prefill_gpu_time"] = bool(reqs) and all(r["gpu_compute_ns"] > 0 and r["kernels"] > 0 for r in reqs)
checks["C3_prefill_copies"] = bool(reqs) and all(
    any(c["bytes"] == 32 << 20 and c["gbps"] > 0 and not c["pageable"] for c in r["copies"]) and
    any(c["bytes"] == 8 << 20 and c["pageable"] for c in r["copies"]) for r in reqs)
checks["C4_no_transport_drops"] = rx.get("records", 0) > 0 and col.get("send_dropped", 1) == 0 and rx.get("bad_msgs", 1) == 0
checks["C4_no_invalid_or_duplicates"] = col.get("invalid_ts", 1) == 0 and col.get("duplicates", 1) == 0
tps_a, tps_b = a.get("tokens_per_s", 0), b.get("tokens_per_s", 0)
res = {
    "pass": all(v for v in checks.values() if v is not None),
    "checks": checks,
    "tokens_per_s": {"plain": tps_a, "injected": tps_b, "ratio": tps_b / tps_a if tps_a else None},
    "ttft_s_plain": [r.get("ttft_s") for r in a.get("requests", [])],
    "ttft_s_injected": [r.get("ttft_s") for r in b.get("requests", [])],
    "prefill": [dict({k: r[k] for k in ("id", "prefill_window_ns", "gpu_compute_ns", "copy_ns",
                                        "copy_total_ns", "host_gap_ns", "kernels")},
                     copies_gbps=[(c["bytes"], c["pageable"], c["gbps"]) for c in r["copies"]])
                for r in reqs],
    "collector": col, "clock": clk, "receiver": {k: rx.get(k) for k in ("records", "bad_msgs", "store_drops", "kernels", "graph_kernels", "copies")},
    "server": srv, "torch": torch_info,
    "collector_stderr": [l for l in err.splitlines() if "ttftrace-cupti" in l],
    "bpf_cross_check": "not run: this check receives with tests/drivers/cupti_rx (no BPF, no "
                       "root), not with ttftrace (which reads the same socket in "
                       "user/probe/gpu_rx.c); the MONOTONIC domain is checked against "
                       "time.monotonic_ns() (same clock as bpf_ktime_get_ns)",
}
json.dump(res, open(out, "w"), indent=1)
print(json.dumps({"pass": res["pass"], "checks": checks, "tokens_per_s": res["tokens_per_s"]}, indent=1))
sys.exit(0 if res["pass"] else 1)
PYEOF
rc=$?
note "results: $RESULTS"
exit $rc
