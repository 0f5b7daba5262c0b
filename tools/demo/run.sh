#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# `make demo`: start the demo llama.cpp server (node-llama-cpp, random tiny
# model), trace it with ttftrace, drive it with loadgen, and print the
# client's and ttftrace's per-request timings side by side.
#
# Settings (environment): N requests (8), C concurrency (2), P prompt
# characters (64), M max tokens (32), PARALLEL server sequences (1),
# RUNDIR (runs/demo-DATE), TTFTRACE (./ttftrace), LOADGEN (.output/bin/loadgen),
# HOPS=1: a real nginx in front of the server (`make demo-hops`): ttftrace
# traces nginx, finds the server behind it, and splits TTFT per hop.
# Everything the run wrote stays in RUNDIR.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tools/lib.sh

N=${N:-8} C=${C:-2} P=${P:-64} M=${M:-32} PARALLEL=${PARALLEL:-1} HOPS=${HOPS:-0}
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

server_pid= tracer_pid= nginx_pid=
cleanup() {
	stop "$tracer_pid" INT
	stop "$nginx_pid" TERM
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
engine_port=$port
if [ "$HOPS" = 1 ]; then
	command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] ||
		die "nginx not found" "apt-get install nginx (tools/setup.sh does)"
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	mkdir -p "$RUNDIR/nginx"
	sed -e "s|@DIR@|$PWD/$RUNDIR/nginx|g" -e "s|@PORT@|$port|" -e "s|@UPSTREAM@|$engine_port|" \
		tools/demo/nginx.conf.in >"$RUNDIR/nginx/nginx.conf"
	"$(command -v nginx || echo /usr/sbin/nginx)" -c "$PWD/$RUNDIR/nginx/nginx.conf" \
		>"$RUNDIR/nginx/nginx.out" 2>&1 &
	nginx_pid=$!
	for _ in $(seq 50); do
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
		sleep 0.1
	done
	echo "demo: nginx pid $nginx_pid on 127.0.0.1:$port, proxying to the server"
fi

"$TTFTRACE" --port "$port" --json -o "$RUNDIR/ttftrace.ndjson" \
	>"$RUNDIR/ttftrace.out" 2>"$RUNDIR/ttftrace.log" &
tracer_pid=$!
wait_for "$RUNDIR/ttftrace.log" "Tracing" 60 "$tracer_pid" || {
	cat "$RUNDIR/ttftrace.log" >&2
	die "ttftrace did not start" "see $RUNDIR/ttftrace.log"
}
echo "demo: $(grep -m1 Tracing "$RUNDIR/ttftrace.log")"
set +m # keep the job table quiet ("Terminated" lines) from here on
if [ "$HOPS" = 1 ]; then
	# nginx's first upstream call names the server's port: ttftrace traces it from then on
	"$LOADGEN" -u "http://127.0.0.1:$port/v1/chat/completions" -n 1 -c 1 -P 8 -m 2 \
		-o "$RUNDIR/warmup.json" 2>/dev/null || true
	wait_for "$RUNDIR/ttftrace.log" "^Hop: " 10 "$tracer_pid" ||
		die "ttftrace did not find the server behind nginx" "see $RUNDIR/ttftrace.log"
	echo "demo: $(grep -m1 '^Hop: ' "$RUNDIR/ttftrace.log")"
	sleep 0.5
fi

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
