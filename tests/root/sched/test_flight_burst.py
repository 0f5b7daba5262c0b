# SPDX-License-Identifier: GPL-2.0-only
"""A burst of traced context switches after an idle spell loses no span.

The scheduler's flight recorder holds one drain interval of spans a CPU
(8,192 at the default 1 s); an idle tracer waits up to twice that between
drains. contend.c's ping-pong (two threads passing a byte over pipes)
switches about 80,000 times a second here: before the recorder woke the
tracer at half full, ttftrace lost 99,300 of 199,419 spans of this run.

Truth: the kernel's own count of the workload's context switches, from
wait4()'s rusage (ru_nvcsw + ru_nivcsw, all its threads), which shares
nothing with ttftrace. Each is a sched_switch with a traced prev, so a span.
"""
import os
import subprocess
import time

from conftest import needs_root

pytestmark = needs_root

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "contend.c")
ROUND_TRIPS = 100_000
IDLE_S = 2.5    # past twice the default drain interval: the loop's longest wait
# Switches the rusage counts that ttftrace cannot see: the main thread's
# before the attach (a handful), and spans it sees that the rusage lacks: a
# thread's last switch-out (exit_notify released its counts before).
SLACK = 20


def test_burst_after_idle_loses_no_span(procs, tracer, tmp_path):
    exe = str(tmp_path / "contend")
    subprocess.run(["cc", "-O2", "-D_GNU_SOURCE", "-o", exe, SRC, "-lpthread"], check=True)
    wl = procs.add(subprocess.Popen([exe, str(ROUND_TRIPS)], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, text=True))
    assert wl.stdout.readline().split()[0] == "ready"
    tr = tracer("-p", wl.pid)
    time.sleep(IDLE_S)
    wl.stdin.write("go\n")
    wl.stdin.flush()
    wl.stdin.close()
    _, status, ru = os.wait4(wl.pid, 0)
    wl.returncode = os.waitstatus_to_exitcode(status)
    assert wl.returncode == 0
    switches = ru.ru_nvcsw + ru.ru_nivcsw
    assert switches > ROUND_TRIPS, "the workload switched %d times" % switches
    tr.stop()
    c = tr.summary()["counters"]
    assert c["sched_flight_overwritten"] == 0, (c, tr.stderr)
    assert "scheduler spans lost" not in tr.stderr
    assert switches - SLACK <= c["sched_events"] <= switches + SLACK, (switches, c)
