#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Cost of the scheduler probes per program run, from BPF run-time stats
# (bpf_prog_info run_time_ns / run_cnt; needs kernel.bpf_stats_enabled=1,
# restored afterwards). Workload: two threads of one traced process passing a
# byte over pipes N times (tests/root/sched/contend.c pingpong). handle_switch runs
# on every context switch of the machine; untraced ones cost only the map
# lookups, so its mean mixes both; the ns per round trip (all programs) compares
# designs that send different numbers of records. Root. Usage: bench/sched_cost.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100000}
DRIVER=${DRIVER:-.output/bin/sched-probe}
[ -x "$DRIVER" ] || { echo "Error: $DRIVER not built" >&2; echo "HINT: run make" >&2; exit 1; }
tmp=$(mktemp -d)
old=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -qw kernel.bpf_stats_enabled="$old"; rm -rf "$tmp"' EXIT
cc -O2 -D_GNU_SOURCE -o "$tmp/contend" tests/root/sched/contend.c -lpthread
sysctl -qw kernel.bpf_stats_enabled=1

mkfifo "$tmp/go"
"$tmp/contend" "$N" <"$tmp/go" >"$tmp/wl.out" &
wl=$!
exec 3>"$tmp/go"
until grep -q ready "$tmp/wl.out"; do sleep 0.01; done
"$DRIVER" -p "$wl" </dev/null >"$tmp/drv.out" 2>"$tmp/drv.err" &
drv=$!
until grep -q attached "$tmp/drv.err"; do
	kill -0 "$drv" 2>/dev/null || { cat "$tmp/drv.err" >&2; exit 1; }
	sleep 0.01
done
echo go >&3
exec 3>&-
wait "$wl"
wait "$drv"
python3 - "$tmp/drv.out" "$tmp/wl.out" "$N" <<'PY'
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if '"summary"' in l][0]
t = [int(x) for x in open(sys.argv[2]).read().split("times")[1].split()]
n = int(sys.argv[3])
cnt = sum(p["run_cnt"] for p in s["progs"].values())
ns = sum(p["run_time_ns"] for p in s["progs"].values())
per = ", ".join("%s %.0f ns x %d" % (k, p["run_time_ns"] / max(p["run_cnt"], 1), p["run_cnt"])
                for k, p in s["progs"].items())
print("sched probes: %.0f ns per round trip, %.0f ns per program run, %.0f ns per record "
      "(%s); %d records, %d overwritten, %d wake-map drops; %d round trips in %.1f ms"
      % (ns / max(n, 1), ns / max(cnt, 1), ns / max(s["sched_events"], 1), per,
         s["sched_events"], s["sched_flight_overwritten"], s.get("sched_wake_map_full", 0), n,
         (t[1] - t[0]) / 1e6))
PY
