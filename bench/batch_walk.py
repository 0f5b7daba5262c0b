#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""What the llama_batch walk costs the engine's thread per prefill step.

The step uprobe (handle_entry, bpf/engine.bpf.c) runs in the engine's own
thread before the step starts, and reads the batch's sequence ids
(docs/kernel.md B7, B7.1). This starts the fixture engine
(tests/fixtures/engine.c, one prompt per step), attaches ttftrace -p with
profiles/fixture.ini, sends requests with prompts of each length, and reads
handle_entry's run time from the kernel's BPF statistics
(kernel.bpf_stats_enabled). With TTFTRACE_B=PATH it measures another build
in the same run and prints the ratio.

Usage (root): bench/batch_walk.py [--lengths 64,512,2048] [-n 20]
"""
import argparse
import http.client
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENGINE = os.path.join(ROOT, ".output", "tests", "fixtures", "engine")
PROFILE = os.path.join(ROOT, "profiles", "fixture.ini")


def entry_stats():
    """(run_time_ns, run_cnt) summed over the loaded programs named handle_entry."""
    progs = json.loads(subprocess.check_output(["bpftool", "-j", "prog", "show"]))
    ns = cnt = 0
    for p in progs:
        if p.get("name") == "handle_entry":
            ns += p.get("run_time_ns", 0)
            cnt += p.get("run_cnt", 0)
    return ns, cnt


def send(port, prompt_tokens):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    body = json.dumps({"model": "m", "stream": True, "max_tokens": 2,
                       "prompt": "x", "prompt_tokens": prompt_tokens})
    c.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    c.close()
    if r.status != 200:
        sys.exit("Error: the fixture engine answered %d" % r.status)


def measure(tracer, length, n):
    """ns of handle_entry per request with prompts of `length` tokens."""
    eng = subprocess.Popen([ENGINE, "--port", "0", "--prefill-us-per-token", "1",
                            "--decode-us", "100"], stdout=subprocess.PIPE, text=True)
    port = int(eng.stdout.readline().rsplit(":", 1)[1])
    tr = subprocess.Popen([tracer, "-p", str(eng.pid), "--profile", PROFILE, "--no-sched",
                           "-o", "/dev/null"], stderr=subprocess.PIPE, text=True)
    try:
        for line in tr.stderr:
            if "Hit Ctrl-C to end" in line:
                break
        else:
            sys.exit("Error: %s did not attach" % tracer)
        ns0, cnt0 = entry_stats()
        for _ in range(n):
            send(port, length)
        time.sleep(0.2)
        ns1, cnt1 = entry_stats()
    finally:
        tr.terminate()
        tr.wait(30)
        eng.terminate()
        eng.wait(30)
    return (ns1 - ns0) / n, (cnt1 - cnt0) / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lengths", default="64,512,2048")
    ap.add_argument("-n", type=int, default=20, help="requests per prompt length")
    a = ap.parse_args()
    builds = [("A", os.environ.get("TTFTRACE", os.path.join(ROOT, "ttftrace")))]
    if os.environ.get("TTFTRACE_B"):
        builds.append(("B", os.environ["TTFTRACE_B"]))
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        stats_was = f.read().strip()
    subprocess.check_call(["sysctl", "-q", "kernel.bpf_stats_enabled=1"])
    try:
        print("%-6s %5s %14s %14s" % ("prompt", "build", "entry ns/req", "entries/req"))
        for length in [int(x) for x in a.lengths.split(",")]:
            got = {}
            for name, path in builds:
                got[name] = measure(path, length, a.n)
                print("%-6d %5s %14.0f %14.1f" % (length, name, got[name][0], got[name][1]))
            if "B" in got and got["A"][0]:
                print("%-6d   B/A %14.2f" % (length, got["B"][0] / got["A"][0]))
    finally:
        subprocess.check_call(["sysctl", "-q", "kernel.bpf_stats_enabled=" + stats_was])


if __name__ == "__main__":
    main()
