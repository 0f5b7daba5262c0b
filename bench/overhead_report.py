#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Summarise bench/overhead.sh's work directory.

usage: overhead_report.py WORKDIR ROUNDS CLK_TCK

Per concurrency: throughput ratio (mean attached tokens/s over mean detached
tokens/s), TTFT p50 ratio (p50 over all requests of the attached rounds over
that of the detached rounds), each round pair's ratios to show the noise, and
ttftrace's own CPU use. Per BPF program of the tracer: runs and ns per run
from bpftool's run_time_ns / run_cnt (the kernel's BPF stats, summed over the
attached rounds), plus BPF time per generated token and as a share of wall time.
"""
import json
import os
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def p50(xs):
    """Median, interpolated between the two middle values."""
    xs = sorted(xs)
    n = len(xs)
    if not n:
        return None
    m = n // 2
    return xs[m] if n % 2 else (xs[m - 1] + xs[m]) / 2


def ttfts(run):
    return [r["ttft_ms"] for r in run["requests"] if r.get("error") is None]


def tracer_counters(path):
    """ttftrace's summary counters and outcomes from its NDJSON, or ({}, {})."""
    try:
        with open(path) as f:
            for line in f:
                if '"type":"summary"' in line:
                    o = json.loads(line)
                    return o.get("counters") or {}, o.get("outcomes") or {}
    except (OSError, ValueError):
        pass
    return {}, {}


def report_concurrency(work, c, rounds, clk_tck):
    det = [load(os.path.join(work, "c%d-detached-%d.json" % (c, r))) for r in rounds]
    att = [load(os.path.join(work, "c%d-attached-%d.json" % (c, r))) for r in rounds]
    tput_d = [x["summary"]["throughput_tok_s"] for x in det]
    tput_a = [x["summary"]["throughput_tok_s"] for x in att]
    ttft_d = p50([t for x in det for t in ttfts(x)])
    ttft_a = p50([t for x in att for t in ttfts(x)])
    tput_ratio = (sum(tput_a) / len(tput_a)) / (sum(tput_d) / len(tput_d))
    ttft_ratio = ttft_a / ttft_d
    pair_tput = ["%.3f" % (a / d) for a, d in zip(tput_a, tput_d)]
    pair_ttft = ["%.3f" % (p50(ttfts(a)) / p50(ttfts(d))) for a, d in zip(att, det)]
    failed = sum(x["summary"]["failed"] for x in det + att)

    print("c=%d  (%d requests/round, %d rounds each)" % (c, det[0]["summary"]["requests"],
                                                         len(rounds)))
    print("  %-26s %10s %10s %8s   per round pair (A/D)" % ("", "detached", "attached", "ratio"))
    print("  %-26s %10.1f %10.1f %8.3f   %s" % (
        "throughput tokens/s (mean)", sum(tput_d) / len(tput_d), sum(tput_a) / len(tput_a),
        tput_ratio, " ".join(pair_tput)))
    print("  %-26s %10.2f %10.2f %8.3f   %s" % ("TTFT p50 ms (all requests)", ttft_d, ttft_a,
                                               ttft_ratio, " ".join(pair_ttft)))
    if failed:
        print("  WARNING: %d requests failed (see loadgen JSON)" % failed)

    # BPF programs of the tracer, stats summed over the attached rounds.
    progs = {}
    wall_s = sum(x["summary"]["wall_s"] for x in att)
    tokens = sum(x["summary"]["tokens"] for x in att)
    ticks = 0
    lost = {}
    for r in rounds:
        with open(os.path.join(work, "c%d-progids-%d.txt" % (c, r))) as f:
            ids = {int(l) for l in f if l.strip()}
        for p in load(os.path.join(work, "c%d-bpf-%d.json" % (c, r))):
            if p["id"] not in ids:
                continue
            e = progs.setdefault(p.get("name", "?"), [0, 0])
            e[0] += p.get("run_time_ns", 0)
            e[1] += p.get("run_cnt", 0)
        with open(os.path.join(work, "c%d-cputicks-%d.txt" % (c, r))) as f:
            ticks += int(f.read())
        counters, _ = tracer_counters(os.path.join(work, "c%d-ttftrace-%d.ndjson" % (c, r)))
        for k in ("ringbuf_full", "lost_sync", "arrival_map_full", "sock_map_full",
                  "tgid_map_full"):
            if counters.get(k):
                lost[k] = lost.get(k, 0) + counters[k]
    total_ns = sum(v[0] for v in progs.values())
    total_cnt = sum(v[1] for v in progs.values())
    print("  BPF cost (kernel.bpf_stats_enabled, attached rounds: %.2f s, %d tokens)"
          % (wall_s, tokens))
    print("    %-20s %10s %10s" % ("program", "runs", "ns/run"))
    for name, (ns, cnt) in sorted(progs.items(), key=lambda kv: -kv[1][0]):
        print("    %-20s %10d %10s" % (name, cnt, "%.0f" % (ns / cnt) if cnt else "-"))
    print("    %-20s %10d %10s   %.0f ns/token, %.3f%% of wall time (one CPU)" % (
        "all", total_cnt, "%.0f" % (total_ns / total_cnt) if total_cnt else "-",
        total_ns / tokens if tokens else 0, 100.0 * total_ns / (wall_s * 1e9) if wall_s else 0))
    cpu_s = ticks / clk_tck
    print("  ttftrace user space: %.2f s CPU over %.2f s (%.2f%% of one CPU)"
          % (cpu_s, wall_s, 100.0 * cpu_s / wall_s if wall_s else 0))
    if lost:
        print("  ttftrace loss counters: %s" % ", ".join("%s=%d" % kv for kv in sorted(lost.items())))
    print()
    return tput_ratio, ttft_ratio


def main(argv):
    if len(argv) != 4:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    work, rounds, clk_tck = argv[1], range(1, int(argv[2]) + 1), int(argv[3])
    res = {}
    for c in (1, 8):
        res[c] = report_concurrency(work, c, rounds, clk_tck)
    print("summary  " + "   ".join("c=%d: throughput x%.3f, TTFT p50 x%.3f" % (c, t, f)
                                  for c, (t, f) in res.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
