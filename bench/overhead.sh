#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# ttftrace overhead on the demo llama.cpp server (root).
#
# At each concurrency (1 and 8) one demo server runs loadgen rounds with
# ttftrace detached and attached, interleaved (D A D A ...), so that slow drift
# of a noisy machine hits both alike. Prints, per concurrency, the throughput
# ratio (attached / detached generated tokens per second) and the TTFT p50
# ratio, and per BPF program its cost in ns per run from the kernel's BPF
# run-time stats (kernel.bpf_stats_enabled, on only during attached rounds and
# restored at exit). Those stats add two clock reads per program run, so the
# attached rounds carry that cost too: the ratios are slightly pessimistic.
#
# Settings (environment): ROUNDS (4) attached and detached rounds each,
# N1 (32) requests per round at c=1, N8 (64) at c=8, P (64) prompt characters,
# M (32) max tokens, KEEP=1 keeps the work directory (loadgen JSON, ttftrace
# NDJSON, bpftool dumps). The c=8 server runs --parallel 8 (8 sequences
# decoded in one batch), the c=1 server --parallel 1.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-4} N1=${N1:-32} N8=${N8:-64} P=${P:-64} M=${M:-32}
TTFTRACE=${TTFTRACE:-./ttftrace}
LOADGEN=${LOADGEN:-.output/bin/loadgen}
STATS=/proc/sys/kernel/bpf_stats_enabled

die() {
	echo "Error: $1" >&2
	[ -z "${2:-}" ] || echo "HINT: $2" >&2
	exit 1
}

[ "$(id -u)" -eq 0 ] || die "the benchmark loads BPF programs and must run as root" \
	"sudo bench/overhead.sh"
[ -x "$TTFTRACE" ] && [ -x "$LOADGEN" ] || die "ttftrace or loadgen not built" "make"
[ -f tools/demo/model/demo.gguf ] && [ -d tools/demo/node_modules/node-llama-cpp ] ||
	die "the demo engine or model is not installed" "tools/demo/install.sh"
command -v bpftool >/dev/null || die "bpftool not found" "apt-get install bpftool"
[ -w "$STATS" ] || die "cannot write $STATS" "needs root and a kernel with BPF stats"

work=$(mktemp -d /tmp/ttftrace-overhead.XXXXXX)
stats_orig=$(cat "$STATS")
server_pid= tracer_pid=

stop() {
	local pid=$1 sig=$2 i
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
	kill "-$sig" "$pid" 2>/dev/null || true
	for i in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}
cleanup() {
	echo "$stats_orig" >"$STATS" 2>/dev/null || true
	stop "$tracer_pid" INT
	stop "$server_pid" TERM
	if [ "${KEEP:-0}" = 1 ]; then
		echo "overhead: work files kept in $work" >&2
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Wait up to $3 seconds for file $1 to contain pattern $2 while pid $4 lives.
wait_for() {
	local i
	for i in $(seq $(($3 * 10))); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		kill -0 "$4" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# loadgen C N OUT: one round of N chat requests at concurrency C.
load() {
	"$LOADGEN" -u "http://127.0.0.1:$port/v1/chat/completions" -c "$1" -n "$2" -P "$P" -m "$M" \
		--include-usage -q -o "$3" || die "loadgen failed (exit $?)" "see $3"
}

# BPF program ids the tracer holds open (kernel fdinfo "prog_id:"), one a line.
# Other ttftrace instances on the machine load programs of the same names;
# the tracer's own fds tell its programs apart.
tracer_prog_ids() {
	grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -un
}

# CPU time (user + system, clock ticks) the process has used so far.
cpu_ticks() {
	awk '{print $14 + $15}' /proc/"$1"/stat
}

echo "overhead: $ROUNDS detached + $ROUNDS attached rounds, interleaved; $P-character" \
	"prompts, $M tokens per request; work in $work"
for c in 1 8; do
	n=$N1
	[ "$c" -eq 1 ] || n=$N8
	node tools/demo/server.mjs --port 0 --parallel "$c" >"$work/server-c$c.out" \
		2>"$work/server-c$c.log" &
	server_pid=$!
	wait_for "$work/server-c$c.out" "^listening on " 120 "$server_pid" ||
		die "the demo server did not start" "$(cat "$work/server-c$c.log")"
	port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$work/server-c$c.out")
	echo "overhead: c=$c: server pid $server_pid, port $port ($(cat "$work/server-c$c.log"));" \
		"$n requests per round"
	load "$c" "$c" "$work/warmup-c$c.json"
	for r in $(seq "$ROUNDS"); do
		load "$c" "$n" "$work/c$c-detached-$r.json"

		"$TTFTRACE" --port "$port" --json -o "$work/c$c-ttftrace-$r.ndjson" \
			>"$work/c$c-ttftrace-$r.out" 2>"$work/c$c-ttftrace-$r.log" &
		tracer_pid=$!
		wait_for "$work/c$c-ttftrace-$r.log" "Tracing" 60 "$tracer_pid" ||
			die "ttftrace did not start" "$(cat "$work/c$c-ttftrace-$r.log")"
		tracer_prog_ids "$tracer_pid" >"$work/c$c-progids-$r.txt"
		cpu0=$(cpu_ticks "$tracer_pid")
		echo 1 >"$STATS"
		load "$c" "$n" "$work/c$c-attached-$r.json"
		# Programs unload with the tracer: read their stats while it runs.
		bpftool prog show -j >"$work/c$c-bpf-$r.json"
		echo "$stats_orig" >"$STATS"
		echo $(($(cpu_ticks "$tracer_pid") - cpu0)) >"$work/c$c-cputicks-$r.txt"
		stop "$tracer_pid" INT
		tracer_pid=
	done
	stop "$server_pid" TERM
	server_pid=
done
echo
python3 bench/overhead_report.py "$work" "$ROUNDS" "$(getconf CLK_TCK)"
