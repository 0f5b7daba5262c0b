#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Replay throughput on one core: a synthetic recording (tests/drivers/mkrec: REQUESTS
# streamed chat requests at concurrency 16, 32 tokens each, with scheduler
# and engine records) replayed by `ttftrace replay` pinned to CPU 0, with the
# text output and with --json, both to /dev/null. Prints events per second of
# wall time and per second of the process's CPU time (the machine may be
# shared: CPU time is what one core spends), as a ratio against the goal of
# 2 million events/s. No root. Usage: bench/replay_throughput.sh [REQUESTS] [ROUNDS]
# TTFTRACE=PATH replays with another build (e.g. the one before a change).
# PROTO=h2 records HTTP/2 streams of SSE instead, PROTO=grpc gRPC server
# streaming (one message per token, replayed with a token profile).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-20000}
ROUNDS=${2:-3}
GOAL=2000000
TTFTRACE=${TTFTRACE:-./ttftrace}
PROTO=${PROTO:-http1}
for b in "$TTFTRACE" .output/bin/mkrec; do
	[ -x "$b" ] || { echo "Error: $b not built" >&2; echo "HINT: run make" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
.output/bin/mkrec -o "$tmp/bench.rec" -n "$N" -c 16 -t 32 --engine --proto "$PROTO" \
	2>"$tmp/mkrec.err"
echo "recording ($PROTO): $(cat "$tmp/mkrec.err"), $(stat -c %s "$tmp/bench.rec") bytes compressed"
extra=()
if [ "$PROTO" = grpc ]; then
	echo "/llm.Generator/Stream 1#" > "$tmp/grpc.profile"
	extra=(--grpc-profile "$tmp/grpc.profile")
fi
for mode in text json; do
	args=("${extra[@]}")
	[ "$mode" = json ] && args+=(--json)
	for r in $(seq "$ROUNDS"); do
		taskset -c 0 "$TTFTRACE" replay "$tmp/bench.rec" "${args[@]}" -o /dev/null \
			2>>"$tmp/$mode.err"
	done
done
python3 - "$tmp" "$GOAL" <<'PY'
import re, sys
tmp, goal = sys.argv[1], float(sys.argv[2])
for mode in ("text", "json"):
    wall, cpu = [], []
    for line in open("%s/%s.err" % (tmp, mode)):
        m = re.search(r"Replayed (\d+) events .* in ([\d.]+) s \(([\d.]+) s CPU\)", line)
        if m:
            n = int(m.group(1))
            wall.append(n / float(m.group(2)))
            cpu.append(n / float(m.group(3)))
    best_wall, best_cpu = max(wall), max(cpu)
    print("%-5s output: %5.2f M events/s wall (best of %d; ratio to goal %.2f), "
          "%5.2f M per CPU second (ratio %.2f)"
          % (mode, best_wall / 1e6, len(wall), best_wall / goal, best_cpu / 1e6,
             best_cpu / goal))
PY
