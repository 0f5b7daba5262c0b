#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What ttftrace's own process costs while its target is idle: CPU time (the
# on-CPU ns of all its threads, /proc/PID/task/*/schedstat) and context
# switches (voluntary + involuntary, /proc/PID/task/*/status) over SECONDS,
# after WARMUP seconds, with ttftrace -p attached to the fixture SSE server
# that serves nothing. A tracer left running on a quiet server should not
# wake up 100 times a second.
#
# A/B: with TTFTRACE_B set to a second ttftrace binary, ROUNDS rounds run A
# and B alternately (A B, B A, ...); the medians and B/A come from this one
# invocation.
# Root. Usage: bench/idle_cost.sh   (SECONDS_=10 WARMUP=3 ROUNDS=3)
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECONDS_:-10} WARMUP=${WARMUP:-3} ROUNDS=${ROUNDS:-3}
TTFTRACE=${TTFTRACE:-./ttftrace} TTFTRACE_B=${TTFTRACE_B:-}
SERVER=.output/tests/fixtures/sse_server
. tools/lib.sh

[ "$(id -u)" -eq 0 ] || die "the benchmark loads BPF programs and must run as root"
[ -x "$TTFTRACE" ] && [ -x "$SERVER" ] || die "not built" "make"
[ -z "$TTFTRACE_B" ] || [ -x "$TTFTRACE_B" ] || die "TTFTRACE_B=$TTFTRACE_B is not executable"
tmp=$(mktemp -d)
srv= tr=
cleanup() {
	stop "$tr" INT
	stop "$srv" TERM
	rm -rf "$tmp"
}
trap cleanup EXIT

"$SERVER" --port 0 --ttft-ms 1 --itl-ms 0 >"$tmp/srv.out" 2>&1 &
srv=$!
wait_for "$tmp/srv.out" listening 5 "$srv" || die "fixture server did not start"

# "cpu_ns switches" summed over the threads of process $1.
usage() {
	local ns=0 sw=0 t v
	for t in /proc/"$1"/task/*; do
		read -r v _ <"$t/schedstat" && ns=$((ns + v))
		v=$(awk '/ctxt_switches/ { s += $2 } END { print s + 0 }' "$t/status") && sw=$((sw + v))
	done
	echo "$ns $sw"
}

# One round with ttftrace binary $1; "cpu_ns switches" over SECS appended to $2.
round() {
	local a b
	"$1" -p "$srv" --json -o /dev/null 2>"$tmp/tr.err" &
	tr=$!
	wait_for "$tmp/tr.err" "^Tracing" 20 "$tr" ||
		{ cat "$tmp/tr.err" >&2; die "ttftrace did not attach"; }
	sleep "$WARMUP"
	a=$(usage "$tr")
	sleep "$SECS"
	b=$(usage "$tr")
	stop "$tr" INT
	tr=
	set -- "$1" "$2" $a $b
	echo "$(($5 - $3)) $(($6 - $4))" >>"$2"
}

ab_rounds "$TTFTRACE" "$TTFTRACE_B" "$ROUNDS" "$tmp/A" "$tmp/B"
python3 - "$tmp/A" "$tmp/B" "$SECS" <<'PY'
import statistics, sys
load = lambda p: [tuple(map(int, l.split())) for l in open(p)]
a, b, secs = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
def row(name, v):
    cpu = statistics.median(x for x, _ in v) / secs / 1e9 * 100
    sw = statistics.median(y for _, y in v) / secs
    print("  %-3s %8.3f %% of one CPU %9.1f switches/s  (%d rounds)" % (name, cpu, sw, len(v)))
    return cpu, sw
print("idle_cost: ttftrace's own process, target idle, %g s per round" % secs)
ca, sa = row("A", a)
if b:
    cb, sb = row("B", b)
    print("  B/A: CPU %.3f, switches %.3f" % (cb / ca if ca else float("nan"),
                                              sb / sa if sa else float("nan")))
PY
