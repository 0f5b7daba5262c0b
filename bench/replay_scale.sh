#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Replay throughput by recording size: synthetic recordings (tests/drivers/mkrec,
# as bench/replay_throughput.sh makes them: streamed chat requests at
# concurrency 16, 32 tokens each, with scheduler and engine records) of
# 2,000, 20,000 and 200,000 requests, each replayed by `ttftrace replay`
# pinned to CPU 0 with the text output and with --json, to /dev/null. For
# each run it prints the records replayed per CPU second of the whole
# process (user + sys from wait4's rusage, start-up and summary included),
# the ratio to the goal of 2 million, and the peak RSS (goal: bounded, under
# 64 MiB at every size). No root.
# Usage: bench/replay_scale.sh [ROUNDS [SIZE...]]   (best of ROUNDS, default 3: the
# machine may be shared, and one short run can lose a third of its CPU time to that)
# TTFTRACE=PATH replays with another build; KEEP=DIR keeps (and reuses) the recordings there.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
shift || true
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(2000 20000 200000)
TTFTRACE=${TTFTRACE:-./ttftrace}
for b in "$TTFTRACE" .output/bin/mkrec; do
	[ -x "$b" ] || { echo "Error: $b not built" >&2; echo "HINT: run make" >&2; exit 1; }
done
if [ -n "${KEEP:-}" ]; then
	dir=$KEEP
	mkdir -p "$dir"
else
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
fi
for n in "${SIZES[@]}"; do
	rec="$dir/replay_$n.rec"
	if [ ! -s "$rec" ]; then
		.output/bin/mkrec -o "$rec.part" -n "$n" -c 16 -t 32 --engine 2>"$dir/mkrec.err" ||
			{ cat "$dir/mkrec.err" >&2; exit 1; }
		mv "$rec.part" "$rec"
	fi
done
/usr/bin/python3 - "$TTFTRACE" "$dir" "$ROUNDS" "${SIZES[@]}" <<'PY'
import os, re, subprocess, sys, time
ttf, d, rounds, sizes = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
GOAL = 2e6
print("%s, %s, %s, load average %s; best of %d round(s) each" % (
      time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.uname().nodename, ttf,
      " ".join(open("/proc/loadavg").read().split()[:3]), rounds))
print("%8s %5s %10s %8s %8s %11s %6s %9s" % ("requests", "mode", "records", "cpu_s",
      "wall_s", "M rec/CPU-s", "ratio", "peak_MiB"))
fails = 0
for n in sizes:
    rec = os.path.join(d, "replay_%s.rec" % n)
    for mode in ("text", "json"):
        best = None
        for _ in range(rounds):
            cmd = ["taskset", "-c", "0", ttf, "replay", rec, "-o", "/dev/null"]
            if mode == "json":
                cmd.append("--json")
            t0 = time.monotonic()
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            err = p.stderr.read().decode(errors="replace")
            _, status, ru = os.wait4(p.pid, 0)
            wall = time.monotonic() - t0
            m = re.search(r"Replayed (\d+) events", err)
            if os.waitstatus_to_exitcode(status) != 0 or not m:
                sys.stderr.write("Error: replay of %s failed:\n%s" % (rec, err))
                sys.exit(1)
            cpu = ru.ru_utime + ru.ru_stime
            run = (cpu, int(m.group(1)), wall, ru.ru_maxrss / 1024.0)
            if best is None or run[0] < best[0]:
                best = run
        cpu, events, wall, rss = best
        rate = events / cpu
        fails += mode == "json" and rate < GOAL
        print("%8s %5s %10d %8.2f %8.2f %11.2f %6.2f %9.1f" % (n, mode, events, cpu, wall,
              rate / 1e6, rate / GOAL, rss))
print("goal: %.0f M records per CPU second (ratio >= 1.00); --json below it at %d size(s)"
      % (GOAL / 1e6, fails))
PY
