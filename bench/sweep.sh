#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Load sweep with ttftrace: stepped concurrency against a server, client and
# server-side (ttftrace) P50/P95/P99 of TTFT and TPOT side by side per step,
# and the highest concurrency that meets the SLO.
#
#   bench/sweep.sh                         # the demo llama.cpp server (tools/demo)
#   PORT=8080 bench/sweep.sh               # a server already listening on 8080
#   STEPS=1,2,4 N=32 SLO=ttft_p95=2s,tpot_p95=100ms bench/sweep.sh
#
# Settings (environment): STEPS (1,4,8,16,32,64), N measured requests per step
# (loadgen's default max(16, 4 x C)), W warm-up requests per step (C), P prompt
# tokens (64; the demo model has one token per character), M max tokens (32),
# SLO (none), PORT (start the demo server), URL_PATH (/v1/chat/completions),
# PARALLEL demo server sequences (1), RUNDIR (runs/sweep-DATE), TTFTRACE, LOADGEN.
# One ttftrace run covers the whole sweep; its requests are split into the
# steps by arrival time (loadgen --sweep-result). Exit status: loadgen's
# (0, 3 failed requests, 4 no step meets the SLO), 1 when the setup fails.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/lib.sh

STEPS=${STEPS:-1,4,8,16,32,64} P=${P:-64} M=${M:-32} PARALLEL=${PARALLEL:-1}
N=${N:-} W=${W:-} SLO=${SLO:-} PORT=${PORT:-}
URL_PATH=${URL_PATH:-/v1/chat/completions}
TTFTRACE=${TTFTRACE:-./ttftrace}
LOADGEN=${LOADGEN:-.output/bin/loadgen}
RUNDIR=${RUNDIR:-runs/sweep-$(date +%Y%m%d-%H%M%S)}

[ "$(id -u)" -eq 0 ] || die "ttftrace traces with BPF and must run as root" "sudo $0"
[ -x "$TTFTRACE" ] || die "$TTFTRACE not found" "make"
[ -x "$LOADGEN" ] || die "$LOADGEN not found" "make"
mkdir -p "$RUNDIR"
set -m

server_pid= tracer_pid=
cleanup() {
	stop "$tracer_pid" INT
	stop "$server_pid" TERM
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "$PORT" ]; then
	[ -f tools/demo/model/demo.gguf ] && [ -d tools/demo/node_modules/node-llama-cpp ] ||
		die "the demo engine or model is not installed" "tools/demo/install.sh, or PORT=..."
	node tools/demo/server.mjs --port 0 --parallel "$PARALLEL" \
		>"$RUNDIR/server.out" 2>"$RUNDIR/server.log" &
	server_pid=$!
	wait_for "$RUNDIR/server.out" "^listening on " 120 "$server_pid" ||
		die "the demo server did not start" "see $RUNDIR/server.log"
	PORT=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$RUNDIR/server.out")
	echo "sweep: demo server pid $server_pid on 127.0.0.1:$PORT" >&2
fi

"$TTFTRACE" --port "$PORT" --json -o "$RUNDIR/ttftrace.ndjson" \
	>"$RUNDIR/ttftrace.out" 2>"$RUNDIR/ttftrace.log" &
tracer_pid=$!
wait_for "$RUNDIR/ttftrace.log" "Tracing" 60 "$tracer_pid" ||
	die "ttftrace did not start" "see $RUNDIR/ttftrace.log"
set +m

args=(-u "http://127.0.0.1:$PORT$URL_PATH" "--sweep=$STEPS" -P "$P" -m "$M" --include-usage
      -o "$RUNDIR/sweep.json")
[ -z "$N" ] || args+=(-n "$N")
[ -z "$W" ] || args+=(--warmup "$W")
[ -z "$SLO" ] || args+=(--slo "$SLO")
lg_rc=0
"$LOADGEN" "${args[@]}" || lg_rc=$?
[ "$lg_rc" -le 4 ] && [ "$lg_rc" -ne 1 ] && [ "$lg_rc" -ne 2 ] ||
	die "loadgen failed (exit $lg_rc)"

# Let the tracer drain its ring buffer, then stop it: SIGINT writes the file out.
sleep 0.5
stop "$tracer_pid" INT
tracer_pid=
echo >&2
rc=0
"$LOADGEN" --sweep-result "$RUNDIR/sweep.json" --ttftrace-ndjson "$RUNDIR/ttftrace.ndjson" \
	${SLO:+--slo "$SLO"} 2>&1 | tee "$RUNDIR/table.txt" || true
rc=${PIPESTATUS[0]}
[ "$rc" -ne 0 ] || rc=$lg_rc
echo "sweep: results in $RUNDIR" >&2
exit "$rc"
