#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Cost per syscall of the sock source's syscall-argument programs: bench/sys_enter_cost.sh runs this (root).

bench/syscall_hit.c times getppid() (a syscall ttftrace does not want, as
every other syscall of the machine) and a 1-byte write() to /dev/null (a
payload syscall of the traced process, not on a socket) per call, in CPU
time. Per round, interleaved and rotated, it runs with no tracer (none),
with `ttftrace -p PID --no-sched --no-profile` taking the arguments from
the per-syscall tracepoints syscalls:sys_enter_X (tp, the default where
tracefs has them) and from raw sys_enter (raw: TTFTRACE_SKIP_PROGS leaves
enter_write out, so all five fall back). Printed, as medians over rounds:
the extra ns per call against the none run of the same round, and per BPF
program its ns per run (BPF run-time stats; its runs include the rest of
the machine's). The extra ns include what bpftool cannot see: the kernel's
dispatch to the program (for tp: perf_syscall_enter, which runs for every
syscall once any syscall tracepoint has a BPF program, and tests a bitmap).
With --no-stats the run-time stats stay as they are (off, normally): the
extra ns then lack the stats' own cost (two clock reads per program run),
and no program figures are printed.
Options: --rounds 5 -n 1000000 --no-stats.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cost  # noqa: E402  (bench/cost.py: prog_ids, prog_stats, wait_line, stop, die)

MODES = ["none", "tp", "raw"]
ENV = {"tp": {}, "raw": {"TTFTRACE_SKIP_PROGS": "enter_write"}}
WANT = {"tp": "syscalls:sys_enter_X", "raw": "raw sys_enter"}


def measure(p):
    p.stdin.write("go\n")
    p.stdin.flush()
    f = p.stdout.readline().split()
    return float(f[1]), float(f[3])


def one(mode, p, work, tag):
    if mode == "none":
        g, r = measure(p)
        return {"getppid": g, "write": r, "progs": {}}
    log = os.path.join(work, tag + ".log")
    tr = subprocess.Popen([cost.TTFTRACE, "-p", str(p.pid), "--no-sched", "--no-profile",
                           "--json", "-o", "/dev/null"], stdout=subprocess.DEVNULL,
                          stderr=open(log, "w"), env=dict(os.environ, **ENV[mode]))
    if not cost.wait_line(log, "Hit Ctrl-C to end", 60, tr):
        cost.die("ttftrace did not start: " + open(log).read()[-500:])
    if WANT[mode] not in open(log).read():
        cost.die("ttftrace's start-up lines do not name %s: %s" % (WANT[mode], open(log).read()))
    ids = cost.prog_ids(tr.pid)
    before = cost.prog_stats(ids)
    g, r = measure(p)
    after = cost.prog_stats(ids)
    cost.stop(tr, 2)
    progs = {k: [after[k][0] - before.get(k, [0, 0])[0], after[k][1] - before.get(k, [0, 0])[1]]
             for k in after if k == "handle_sys_enter" or k.startswith("enter_")}
    return {"getppid": g, "write": r, "progs": progs}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("-n", type=int, default=1000000)
    ap.add_argument("--no-stats", action="store_true")
    args = ap.parse_args()
    if os.geteuid() != 0:
        cost.die("the benchmark loads BPF programs and must run as root",
                 "sudo bench/sys_enter_cost.sh")
    if not os.access(cost.TTFTRACE, os.X_OK):
        cost.die("%s is not built" % cost.TTFTRACE, "make")
    work = tempfile.mkdtemp(prefix="ttftrace-sysenter.")
    exe = os.path.join(work, "syscall_hit")
    subprocess.run(["gcc", "-O2", "-o", exe, os.path.join(HERE, "syscall_hit.c")], check=True)
    with open(cost.STATS) as f:
        stats_orig = f.read().strip()
    p = subprocess.Popen([exe, str(args.n)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    p.stdout.readline()	# the first pass warms caches
    rounds = []
    try:
        if not args.no_stats:
            with open(cost.STATS, "w") as f:
                f.write("1")
        elif stats_orig != "0":
            print("sys_enter_cost: run-time stats are on (someone else's): the figures "
                  "include their cost", file=sys.stderr)
        for r in range(args.rounds):
            order = MODES[r % len(MODES):] + MODES[:r % len(MODES)]
            rounds.append({m: one(m, p, work, "%s-%d" % (m, r)) for m in order})
            print("sys_enter_cost: round %d of %d done (%s)" % (r + 1, args.rounds,
                                                                 " ".join(order)), flush=True)
    finally:
        if not args.no_stats:
            with open(cost.STATS, "w") as f:
                f.write(stats_orig)
        p.stdin.close()
        p.wait()
        shutil.rmtree(work, ignore_errors=True)
    med = statistics.median
    print("\nmedians over %d rounds of %d calls each: ns per call (BPF run-time stats %s)" %
          (args.rounds, args.n, "on" if not args.no_stats or stats_orig != "0" else "off"))
    print("%-5s %10s %10s %14s %12s" % ("mode", "getppid", "write", "getppid extra",
                                         "write extra"))
    for m in MODES:
        g = [x[m]["getppid"] for x in rounds]
        rd = [x[m]["write"] for x in rounds]
        ge = [x[m]["getppid"] - x["none"]["getppid"] for x in rounds]
        re_ = [x[m]["write"] - x["none"]["write"] for x in rounds]
        print("%-5s %10.1f %10.1f %+14.1f %+12.1f" % (m, med(g), med(rd), med(ge), med(re_)))
    if args.no_stats:
        return
    print("\nBPF programs (medians): ns per run (runs: the whole machine's, per round)")
    for m in ("tp", "raw"):
        names = sorted({k for x in rounds for k in x[m]["progs"]})
        for k in names:
            v = [x[m]["progs"].get(k, [0, 0]) for x in rounds]
            ns = [a[1] / a[0] for a in v if a[0]]
            if ns:
                print("  %-4s %-18s %8.0f %12d" % (m, k, med(ns), med([a[0] for a in v])))


if __name__ == "__main__":
    main()
