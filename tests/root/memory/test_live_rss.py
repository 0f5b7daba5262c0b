# SPDX-License-Identifier: GPL-2.0-only
"""ttftrace's memory under sustained live load stays bounded and flat.

The fixture server (tests/fixtures/sse_server) serves 64 kept-alive
connections as fast as it can (2 ms to the first token, then 2 ms per token,
8 tokens), loadgen keeps all 64 busy, and ttftrace traces it with the
default probes (network, scheduler) and writes NDJSON. Its VmRSS is sampled
every second. Goal (bench/README.md "Memory"): peak at most 64 MiB; after warm-up
(the first 40% of the run: the scheduler and timeline stores filling to
their caps), it grows by at most 2 MiB.

TTF_MEM_SECONDS sets the length (default 40 here; bench/memory.sh runs 180 s
with 10 s samples as the full test).
"""
import os
import subprocess
import time

from conftest import ROOT, RT_ARGS, SSE_SERVER, TTFTRACE, needs_root, require_built, vm_rss_kib

LOADGEN = os.path.join(ROOT, ".output", "bin", "loadgen")
SECONDS = int(os.environ.get("TTF_MEM_SECONDS", "40"))
SAMPLE_S = float(os.environ.get("TTF_MEM_SAMPLE_S", "1"))
CONNS = 64
MIB = 1024


def counters(path):
    import json
    last = None
    with open(path) as f:
        for line in f:
            if '"type":"summary"' in line.replace(" ", ""):
                last = json.loads(line)
    return last


@needs_root
def test_rss_bounded_under_sustained_load(procs, tmp_path):
    for b in (SSE_SERVER, LOADGEN, TTFTRACE):
        require_built(b)
    srv = procs.add(subprocess.Popen(
        [SSE_SERVER, "--port", "0", "--ttft-ms", "2", "--itl-ms", "2", "--tokens", "8",
         "--spin-us", "0"] + RT_ARGS, stdout=subprocess.PIPE, text=True))
    line = srv.stdout.readline()
    assert line.startswith("listening on 127.0.0.1:"), line
    port = int(line.rsplit(":", 1)[1])
    out = str(tmp_path / "run.ndjson")
    tr = procs.add(subprocess.Popen([TTFTRACE, "--port", str(port), "--json", "-o", out],
                                    stderr=subprocess.PIPE, text=True))
    t0 = time.monotonic()
    buf = ""
    while "Hit Ctrl-C to end" not in buf:
        assert tr.poll() is None and time.monotonic() - t0 < 30, buf
        buf += tr.stderr.readline()
    lg = procs.add(subprocess.Popen(
        [LOADGEN, "-u", "http://127.0.0.1:%d/v1/chat/completions" % port, "-c", str(CONNS),
         "-n", "1000000", "-m", "8", "-q", "-o", "/dev/null"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    samples = []
    t_end = time.monotonic() + SECONDS
    while time.monotonic() < t_end:
        time.sleep(SAMPLE_S)
        assert tr.poll() is None, "ttftrace exited: " + tr.stderr.read()
        samples.append(vm_rss_kib(tr.pid))
    lg.kill()
    lg.wait()
    tr.send_signal(2)
    err = tr.communicate(timeout=60)[1]
    assert tr.returncode == 0, "rc %s: %s" % (tr.returncode, buf + err)
    summ = counters(out)
    assert summ is not None, err
    n = summ.get("requests", summ.get("n", 0))
    print("RSS KiB every %.0f s:" % SAMPLE_S, samples)
    print("requests traced:", n, "in", SECONDS, "s")
    print("counters:", {k: v for k, v in summ.get("counters", {}).items() if v})
    # the load was real: at least 200 requests a second on 2 shared cores
    assert n >= 200 * SECONDS, "only %s requests: the load did not run" % n
    peak = max(samples)
    assert peak <= 64 * MIB, "peak RSS %d KiB" % peak
    tail = samples[int(len(samples) * 0.4):]
    assert max(tail) - tail[0] <= 2 * MIB, tail
