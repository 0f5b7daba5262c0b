#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Cost of ttftrace's network probes per program run, from BPF run-time stats
# (bpf_prog_info run_time_ns / run_cnt; kernel.bpf_stats_enabled=1 while it
# runs, restored after). The stats add two clock reads to every run.
#
# Workload, one phase after the other, with ttftrace attached to the server:
#   rw-noise  an untraced process making 1-byte read/write syscalls (dd);
#   other     an untraced process making syscalls that carry no payload
#             (getppid);
#   traced    the fixture SSE server, traced (ttftrace -p), under loadgen: N
#             streamed requests of M tokens at concurrency C.
# handle_sys_enter runs for every syscall of the machine, so each phase shows
# what one kind of syscall costs it.
#
# A/B: with TTFTRACE_B set to a second ttftrace binary, ROUNDS rounds run
# A and B alternately (A B, B A, ...) and the median ns/run of each is
# printed with the ratio B/A, from this one invocation.
# Root. Usage: bench/net_cost.sh   (N=2000 C=4 M=16 NOISE=2000000 ROUNDS=3)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-2000} C=${C:-4} M=${M:-16} NOISE=${NOISE:-2000000} ROUNDS=${ROUNDS:-3}
TTFTRACE=${TTFTRACE:-./ttftrace} TTFTRACE_B=${TTFTRACE_B:-}
LOADGEN=.output/bin/loadgen
SERVER=.output/tests/fixtures/sse_server
. tools/lib.sh

[ "$(id -u)" -eq 0 ] || die "the benchmark loads BPF programs and must run as root"
[ -x "$TTFTRACE" ] && [ -x "$LOADGEN" ] && [ -x "$SERVER" ] || die "not built" "make"
[ -z "$TTFTRACE_B" ] || [ -x "$TTFTRACE_B" ] || die "TTFTRACE_B=$TTFTRACE_B is not executable"
tmp=$(mktemp -d)
old=$(sysctl -n kernel.bpf_stats_enabled)
srv= tr=
cleanup() {
	sysctl -qw kernel.bpf_stats_enabled="$old"
	stop "$tr" INT
	stop "$srv" TERM
	rm -rf "$tmp"
}
trap cleanup EXIT

"$SERVER" --port 0 --ttft-ms 1 --itl-ms 0 --nodelay >"$tmp/srv.out" 2>&1 &
srv=$!
wait_for "$tmp/srv.out" listening 5 "$srv" || die "fixture server did not start"
port=$(sed -n 's/^listening on 127.0.0.1://p' "$tmp/srv.out")
# Snapshot "name run_cnt run_time_ns" of ttftrace's net programs.
snap() {
	bpftool prog show -j | python3 -c '
import json, sys
want = {"handle_sys_enter", "handle_recv", "handle_send", "handle_data_ready", "handle_xmit",
        "handle_set_state", "handle_fork", "handle_exec", "handle_exit"}
for p in json.load(sys.stdin):
    if p.get("name") in want:
        print(p["name"], p.get("run_cnt", 0), p.get("run_time_ns", 0))' >"$1"
}
# Append "label program runs ns_per_run" per program between two snapshots.
diff_snap() {
	python3 - "$1" "$2" "$3" >>"$4" <<'PY'
import sys
def load(p):
    d = {}
    for l in open(p):
        n, c, t = l.split()
        c0, t0 = d.get(n, (0, 0))
        d[n] = (c0 + int(c), t0 + int(t))
    return d
a, b, label = load(sys.argv[1]), load(sys.argv[2]), sys.argv[3]
for n in sorted(b):
    c = b[n][0] - a.get(n, (0, 0))[0]
    t = b[n][1] - a.get(n, (0, 0))[1]
    if c:
        print(label, n, c, "%.1f" % (t / c))
PY
}

# One round with ttftrace binary $1; results appended to $2.
round() {
	"$1" -p "$srv" --json -o /dev/null 2>"$tmp/tr.err" &
	tr=$!
	wait_for "$tmp/tr.err" "^Tracing" 20 "$tr" ||
		{ cat "$tmp/tr.err" >&2; die "ttftrace did not attach"; }
	snap "$tmp/s0"
	dd if=/dev/zero of=/dev/null bs=1 count=$((NOISE / 2)) status=none
	snap "$tmp/s1"
	diff_snap "$tmp/s0" "$tmp/s1" rw-noise "$2"
	python3 -c "import os
for _ in range($NOISE): os.getppid()"
	snap "$tmp/s2"
	diff_snap "$tmp/s1" "$tmp/s2" other "$2"
	"$LOADGEN" -u "http://127.0.0.1:$port/v1/chat/completions" -n "$N" -c "$C" -m "$M" \
		-o /dev/null 2>"$tmp/lg.err" || { cat "$tmp/lg.err" >&2; die "loadgen failed"; }
	snap "$tmp/s3"
	diff_snap "$tmp/s2" "$tmp/s3" traced "$2"
	stop "$tr" INT
	tr=
}

sysctl -qw kernel.bpf_stats_enabled=1
ab_rounds "$TTFTRACE" "$TTFTRACE_B" "$ROUNDS" "$tmp/A" "$tmp/B"
python3 - "$tmp/A" "$tmp/B" <<'PY'
import statistics, sys
def load(p):
    d = {}
    for l in open(p):
        label, prog, runs, ns = l.split()
        if prog in ("handle_fork", "handle_exec", "handle_exit") or int(runs) < 100:
            continue  # other processes of the machine; too few runs to mean much
        d.setdefault((label, prog), []).append((int(runs), float(ns)))
    return d
a, b = load(sys.argv[1]), load(sys.argv[2])
med = lambda v: statistics.median(ns for _, ns in v)
if not b:
    print("net_cost: ns per program run (BPF stats), one run")
    for (label, prog), v in sorted(a.items()):
        print("  %-9s %-18s %10d runs %8.0f ns/run" % (label, prog, v[0][0], med(v)))
    sys.exit(0)
print("net_cost: median ns per program run over %d rounds each (BPF stats); B/A" %
      len(next(iter(a.values()))))
print("  %-9s %-18s %10s %10s %7s" % ("phase", "program", "A ns/run", "B ns/run", "B/A"))
for key in sorted(set(a) | set(b)):
    if key in a and key in b:
        print("  %-9s %-18s %10.0f %10.0f %7.3f" % (key + (med(a[key]), med(b[key]),
                                                         med(b[key]) / med(a[key]))))
PY
