#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Summarise bench/overhead.sh's work directory.

usage: overhead_report.py WORKDIR ROUNDS CLK_TCK TARGET...

Per target and concurrency, for N (no tracer), T (ttftrace) and B
(bpftrace): mean throughput over the rounds (generated tokens/s), TTFT p50
and p99 over all requests of the rounds, and T/N, B/N ratios; the spread of
the N rounds' throughput (max/min) shows the machine's noise. Per hook: ns per
program run (kernel BPF stats, run_time_ns / run_cnt summed over the rounds)
of ttftrace's program, of an empty program on the same hook (E round) and of
bpftrace's. Uprobe and uretprobe programs are pooled per tracer: bpftrace
gives both the symbol's name. Last, one summary table of the ratios.
"""
import json
import os
import sys

CFGS = ("N", "T", "B")
# ttftrace program name (bpftool: BTF name, else 15 characters) -> hook
HOOKS = {
    "handle_fork": "sched_process_fork", "handle_exec": "sched_process_exec",
    "handle_exit": "sched_process_exit", "handle_sys_enter": "sys_enter",
    "handle_recv": "sock_recv_length", "handle_send": "sock_send_length",
    "handle_data_ready": "sk_data_ready", "handle_xmit": "net_dev_start_xmit",
    "handle_set_state": "inet_sock_set_state", "handle_switch": "sched_switch",
    "handle_wakeup": "sched_wakeup", "handle_wakeup_new": "sched_wakeup_new",
    "handle_entry": "uprobe+uretprobe", "handle_return": "uprobe+uretprobe",
}
BY15 = {k[:15]: v for k, v in HOOKS.items()}
TP15 = {v[:15]: v for v in HOOKS.values()}


def load(path):
    with open(path) as f:
        return json.load(f)


def pct(xs, q):
    """Percentile q (0-100), linear interpolation between closest ranks."""
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def ttfts(run):
    return [r["ttft_ms"] for r in run["requests"] if r.get("error") is None]


def hook_of(cfg, prog):
    name = prog.get("name", "?")
    if cfg == "B":
        if prog.get("type") == "kprobe":
            return None if name in ("BEGIN", "END") else "uprobe+uretprobe"
        return TP15.get(name)
    return HOOKS.get(name) or BY15.get(name)


def bpf_stats(work, tag, cfg):
    """{hook: [run_time_ns, run_cnt]} for the programs of round TAG's tracer."""
    out = {}
    try:
        with open(os.path.join(work, tag + ".ids")) as f:
            ids = {int(l) for l in f if l.strip()}
        progs = load(os.path.join(work, tag + ".bpf.json"))
    except (OSError, ValueError):
        return out
    for p in progs:
        if p["id"] not in ids:
            continue
        h = hook_of(cfg, p)
        if h is None:
            continue
        e = out.setdefault(h, [0, 0])
        e[0] += p.get("run_time_ns", 0)
        e[1] += p.get("run_cnt", 0)
    return out


def add(acc, d):
    for k, (ns, cnt) in d.items():
        e = acc.setdefault(k, [0, 0])
        e[0] += ns
        e[1] += cnt


def nsrun(e):
    return e[0] / e[1] if e and e[1] else None


def fmt(x, f="%.0f"):
    return "-" if x is None else f % x


def report(work, target, c, rounds, clk_tck):
    runs = {cfg: [load(os.path.join(work, "%s-c%d-%s-%d.json" % (target, c, cfg, r)))
                  for r in rounds] for cfg in CFGS}
    m = {}
    for cfg in CFGS:
        tput = [x["summary"]["throughput_tok_s"] for x in runs[cfg]]
        t = [v for x in runs[cfg] for v in ttfts(x)]
        m[cfg] = (sum(tput) / len(tput), pct(t, 50), pct(t, 99), tput)
    failed = sum(x["summary"]["failed"] for cfg in CFGS for x in runs[cfg])
    nreq = runs["N"][0]["summary"]["requests"]
    print("%s c=%d  (%d requests/round, %d rounds per configuration)"
          % (target, c, nreq, len(rounds)))
    print("  %-24s %9s %9s %9s %7s %7s" % ("", "N none", "T ttftr", "B bpftr", "T/N", "B/N"))
    rows = (("throughput tok/s (mean)", 0, "%9.1f"), ("TTFT p50 ms", 1, "%9.2f"),
            ("TTFT p99 ms", 2, "%9.2f"))
    ratios = []
    for label, i, f in rows:
        tn, bn = m["T"][i] / m["N"][i], m["B"][i] / m["N"][i]
        ratios += [tn, bn]
        print("  %-24s %s %s %s %7.3f %7.3f" % (label, f % m["N"][i], f % m["T"][i],
                                               f % m["B"][i], tn, bn))
    print("  throughput per round N: %s  T: %s  B: %s  (N max/min %.3f)" % tuple(
        [" ".join("%.1f" % v for v in m[cfg][3]) for cfg in CFGS] +
        [max(m["N"][3]) / min(m["N"][3])]))
    if failed:
        print("  WARNING: %d requests failed (see loadgen JSON)" % failed)

    stats = {cfg: {} for cfg in ("T", "B", "E")}
    cpu = {"T": [0, 0.0, 0], "B": [0, 0.0, 0]}	# ticks, wall s, BPF ns
    for r in rounds:
        for cfg in ("T", "B"):
            tag = "%s-c%d-%s-%d" % (target, c, cfg, r)
            s = bpf_stats(work, tag, cfg)
            add(stats[cfg], s)
            with open(os.path.join(work, tag + ".cputicks")) as f:
                cpu[cfg][0] += int(f.read())
            cpu[cfg][1] += load(os.path.join(work, tag + ".json"))["summary"]["wall_s"]
            cpu[cfg][2] += sum(v[0] for v in s.values())
    add(stats["E"], bpf_stats(work, "%s-c%d-E-1" % (target, c), "E"))
    print("  BPF ns/run per hook (T, B: %d rounds; E empty program: 1 round)" % len(rounds))
    print("    %-20s %9s %7s %7s %7s %9s %9s" % ("hook", "T runs", "T", "E", "T-E", "B", "B-E"))
    hooks = sorted(set(stats["T"]) | set(stats["B"]) | set(stats["E"]),
                   key=lambda h: -(stats["T"].get(h, [0, 0])[0]))
    for h in hooks:
        t, e, b = (nsrun(stats[cfg].get(h)) for cfg in ("T", "E", "B"))
        print("    %-20s %9d %7s %7s %7s %9s %9s" % (
            h, stats["T"].get(h, [0, 0])[1], fmt(t), fmt(e),
            fmt(t - e if t is not None and e is not None else None), fmt(b),
            fmt(b - e if b is not None and e is not None else None)))
    for cfg, name in (("T", "ttftrace"), ("B", "bpftrace")):
        ticks, wall, ns = cpu[cfg]
        print("  %s: BPF %.2f%% of one CPU, user space %.2f%% of one CPU (over %.1f s)"
              % (name, 100.0 * ns / (wall * 1e9) if wall else 0,
                 100.0 * ticks / clk_tck / wall if wall else 0, wall))
    print()
    return ratios


def main(argv):
    if len(argv) < 5:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    work, rounds, clk_tck = argv[1], range(1, int(argv[2]) + 1), int(argv[3])
    res = []
    for target in argv[4:]:
        for c in map(int, os.environ.get("CONCURRENCY", "1 8 16 64").split()):
            res.append((target, c, report(work, target, c, rounds, clk_tck)))
    print("summary: ratios against no tracer (goal for T: throughput >= 0.990,"
          " TTFT p50 <= 1.010, and better than B)")
    print("  %-8s %4s  %8s %8s %8s   %8s %8s %8s" % ("target", "c", "T tput", "T p50",
                                                     "T p99", "B tput", "B p50", "B p99"))
    for target, c, r in res:
        print("  %-8s %4d  %8.3f %8.3f %8.3f   %8.3f %8.3f %8.3f"
              % (target, c, r[0], r[2], r[4], r[1], r[3], r[5]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
