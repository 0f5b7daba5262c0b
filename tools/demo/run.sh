#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# `make demo`: start the demo llama.cpp server (node-llama-cpp, random tiny
# model), trace it with ttftrace, drive it with loadgen, and print the
# client's and ttftrace's per-request timings side by side.
#
# Settings (environment): N requests (8), C concurrency (2), P prompt
# characters (64), M max tokens (32), PARALLEL server sequences (1),
# RUNDIR (runs/demo-DATE), TTFTRACE (./ttftrace), LOADGEN (.output/bin/loadgen).
# Everything the run wrote stays in RUNDIR.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tools/lib.sh

N=${N:-8} C=${C:-2} P=${P:-64} M=${M:-32} PARALLEL=${PARALLEL:-1}
TTFTRACE=${TTFTRACE:-./ttftrace}
LOADGEN=${LOADGEN:-.output/bin/loadgen}
RUNDIR=${RUNDIR:-runs/demo-$(date +%Y%m%d-%H%M%S)}

[ "$(id -u)" -eq 0 ] || die "the demo traces with BPF and must run as root" "sudo make demo"
[ -x "$TTFTRACE" ] || die "$TTFTRACE not found" "make"
[ -x "$LOADGEN" ] || die "$LOADGEN not found" "make"
[ -f tools/demo/model/demo.gguf ] && [ -d tools/demo/node_modules/node-llama-cpp ] ||
	die "the demo engine or model is not installed" "tools/demo/install.sh"
mkdir -p "$RUNDIR"
# Job control: background jobs get their own process group and, unlike
# background jobs of a non-interactive shell, do not ignore SIGINT.
set -m

server_pid= tracer_pid=
cleanup() {
	stop "$tracer_pid" INT
	stop "$server_pid" TERM
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "demo: starting the server (tools/demo/server.mjs, $PARALLEL sequence(s))"
node tools/demo/server.mjs --port 0 --parallel "$PARALLEL" \
	>"$RUNDIR/server.out" 2>"$RUNDIR/server.log" &
server_pid=$!
wait_for "$RUNDIR/server.out" "^listening on " 120 "$server_pid" || {
	cat "$RUNDIR/server.log" >&2
	die "the demo server did not start" "see $RUNDIR/server.log"
}
port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$RUNDIR/server.out")
health=$(exec 3<>"/dev/tcp/127.0.0.1/$port" &&
	printf 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3 &&
	head -n1 <&3) || true
case "$health" in
*" 200 "*) ;;
*) die "the demo server on port $port is not healthy: '${health%$'\r'}'" "see $RUNDIR/server.log" ;;
esac
echo "demo: server pid $server_pid on 127.0.0.1:$port ($(cat "$RUNDIR/server.log"))"

"$TTFTRACE" --port "$port" --json -o "$RUNDIR/ttftrace.ndjson" \
	>"$RUNDIR/ttftrace.out" 2>"$RUNDIR/ttftrace.log" &
tracer_pid=$!
wait_for "$RUNDIR/ttftrace.log" "Tracing" 60 "$tracer_pid" || {
	cat "$RUNDIR/ttftrace.log" >&2
	die "ttftrace did not start" "see $RUNDIR/ttftrace.log"
}
echo "demo: $(grep -m1 Tracing "$RUNDIR/ttftrace.log")"
set +m # keep the job table quiet ("Terminated" lines) from here on

echo "demo: loadgen: $N chat requests, concurrency $C, $P-character prompts, $M tokens each"
lg_rc=0
"$LOADGEN" -u "http://127.0.0.1:$port/v1/chat/completions" -n "$N" -c "$C" -P "$P" -m "$M" \
	--include-usage -o "$RUNDIR/loadgen.json" 2>"$RUNDIR/loadgen.log" || lg_rc=$?
cat "$RUNDIR/loadgen.log"
[ "$lg_rc" -eq 0 ] || [ "$lg_rc" -eq 3 ] || die "loadgen failed (exit $lg_rc)" \
	"see $RUNDIR/loadgen.log"

# Let the tracer drain its ring buffer before asking for the summary.
sleep 0.5
stop "$tracer_pid" INT
tracer_pid=
echo
echo "== ttftrace =="
grep -v Tracing "$RUNDIR/ttftrace.log" || true
cat "$RUNDIR/ttftrace.out"
echo
echo "== client vs ttftrace, per request =="
python3 tools/demo/compare.py "$RUNDIR/loadgen.json" "$RUNDIR/ttftrace.ndjson"
echo
echo "demo: results in $RUNDIR"
