# SPDX-License-Identifier: GPL-2.0-only
"""Scheduler view against a workload with known contention (root, BTF).

tests/root/sched/contend.c runs a "frontend" thread and two "busy" threads
pinned to CPU 0 for SPIN_MS (the frontend can run about 1/3 of the time and
waits on the runqueue about 2/3), then sleeps SLEEP_MS alone. The driver
.output/bin/sched-probe traces it and answers overlay queries for the
frontend over the workload's own CLOCK_MONOTONIC timestamps. The truth of
the contended window is the kernel's own per-thread accounting, which the
frontend reads at both ends of it (its runqueue wait from
/proc/thread-self/schedstat, its on-CPU time from CLOCK_THREAD_CPUTIME_ID).
"""
import json
import os
import subprocess

import pytest

from conftest import ROOT, needs_root, require_built

pytestmark = needs_root

DRIVER = os.path.join(ROOT, ".output", "bin", "sched-probe")
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "contend.c")
SPIN_MS = 600
SLEEP_MS = 50
# ttftrace's runnable and on-CPU time over the 600 ms of contention against
# the kernel's (contend.c: schedstat's runqueue wait, the thread's CPU
# clock); ttftrace counts a little of each wait as on-CPU. 12 runs:
# runnable -1.04 .. -0.28 ms, on-CPU +0.23 .. +1.01 ms off the kernel's.
# Bar: 3 ms, about three times the worst.
SCHEDSTAT_TOL_NS = 3_000_000


@pytest.fixture
def contend(tmp_path):
    exe = str(tmp_path / "contend")
    subprocess.run(["cc", "-O2", "-D_GNU_SOURCE", "-o", exe, SRC, "-lpthread"], check=True)
    return exe


def run_traced(procs, workload_args, queries_fn, seed=False, env=None):
    """Start the workload, trace it, let it run, query. Returns (tid, times,
    answers, summary, schedstat): schedstat is contend's own on-CPU and
    runqueue-wait ns at T0 and T1 (run0, wait0, run1, wait1), or None."""
    require_built(DRIVER)
    wl = procs.add(subprocess.Popen(workload_args, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, text=True))
    ready = wl.stdout.readline().split()
    assert ready[0] == "ready", ready
    tid = int(ready[1])
    cmd = [DRIVER, "-p", str(wl.pid)] + (["--seed"] if seed else [])
    drv = procs.add(subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True,
                                     env=dict(os.environ, **(env or {}))))
    line = drv.stderr.readline()
    assert line.strip() == "attached", line + drv.stderr.read()
    wl.stdin.write("go\n")
    wl.stdin.flush()
    times = [int(x) for x in wl.stdout.readline().split()[1:]]
    assert wl.wait(timeout=30) == 0
    rest = wl.stdout.read().split()
    schedstat = [int(x) for x in rest[1:5]] if rest[:1] == ["schedstat"] else None
    queries = queries_fn(tid, times)
    out, err = drv.communicate("".join("%d %d %d\n" % q for q in queries), timeout=30)
    assert drv.returncode == 0, err
    objs = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    answers = [o for o in objs if o["type"] == "overlay"]
    (summary,) = [o for o in objs if o["type"] == "summary"]
    assert len(answers) == len(queries)
    for q, a in zip(queries, answers):
        assert a["on_cpu_ns"] + a["runnable_ns"] + a["blocked_ns"] + a["unknown_ns"] == \
            q[2] - q[1], a
    return tid, times, answers, summary, schedstat


# Both ways of timing a wait: the default takes it from the kernel's
# per-task run_delay at each switch-out (no sched_wakeup program); the
# fallback traces sched_wakeup (kernels without run_delay).
@pytest.mark.parametrize("wakeups", ["run_delay", "sched_wakeup"])
def test_contention_and_sleep(procs, contend, wakeups):
    def queries(tid, t):
        t0, t1, t2, t3 = t
        return [(tid, t0, t1), (tid, t2, t3), (tid, t0, t3)]

    env = {"TTFTRACE_SCHED_WAKEUPS": "1" if wakeups == "sched_wakeup" else "0"}
    tid, (t0, t1, t2, t3), (spin, sleep, whole), summary, schedstat = run_traced(
        procs, [contend, str(SPIN_MS), str(SLEEP_MS)], queries, env=env)

    spin_ns = t1 - t0
    run_share = spin["runnable_ns"] / spin_ns
    run0, wait0, run1, wait1 = schedstat
    print("frontend over %.1f ms of contention: on-cpu %.3f, runnable %.3f, blocked %.3f, "
          "unknown %.3f ms; schedstat: on-cpu %.3f, runqueue wait %.3f ms"
          % (spin_ns / 1e6, spin["on_cpu_ns"] / 1e6, spin["runnable_ns"] / 1e6,
             spin["blocked_ns"] / 1e6, spin["unknown_ns"] / 1e6, (run1 - run0) / 1e6,
             (wait1 - wait0) / 1e6))
    print("sleep of %d ms: blocked %.3f ms, runnable %.3f ms, on-cpu %.3f ms (window %.3f ms)"
          % (SLEEP_MS, sleep["blocked_ns"] / 1e6, sleep["runnable_ns"] / 1e6,
             sleep["on_cpu_ns"] / 1e6, (t3 - t2) / 1e6))
    # The frontend woke from read(stdin) before t0: its state is known
    # throughout, but for intervals made unknown by a lost record.
    assert spin["unknown_ns"] < 0.05 * spin_ns and sleep["unknown_ns"] < 1e6, (spin, sleep)
    # 3 equal CFS tasks on one CPU: the frontend waits about 2/3 of the time;
    # other load on CPU 0 (shared machine) pushes the wait up, to 0.94 seen.
    # That only checks the workload contended; the truth of ttftrace's split
    # is the kernel's own accounting of the thread, read by the thread itself
    # at T0 and T1. Unknown time (a lost record) may hide part of either,
    # never more.
    assert run_share > 0.45 and (wait1 - wait0) > 0.45 * spin_ns, (run_share, schedstat)
    for what, got, want in (("runnable", spin["runnable_ns"], wait1 - wait0),
                            ("on-cpu", spin["on_cpu_ns"], run1 - run0)):
        assert got - SCHEDSTAT_TOL_NS <= want <= got + spin["unknown_ns"] + SCHEDSTAT_TOL_NS, (
            what, got, want, spin)
    assert spin["blocked_ns"] < 0.02 * spin_ns, spin
    # nanosleep never returns early; a loaded machine wakes it late, which
    # the workload's own clock (the window) holds
    assert SLEEP_MS * 1e6 - 2e6 < sleep["blocked_ns"] <= t3 - t2, (sleep, t3 - t2)
    assert whole["blocked_ns"] >= sleep["blocked_ns"]

    # every span read before its CPU's flight recorder slot came round again
    assert summary["sched_flight_overwritten"] == 0 and summary["sched_events"] > 0, summary
    # A lost record turns an interval unknown (see user/model/sched.h). On these
    # Firecracker VMs the kernel now and then switches without running
    # sched_switch programs (bpftrace misses the same switches; docs/definitions.md,
    # "TTFT stages"): counted as sched_switch_gaps. Keep it rare.
    view = summary["view"]
    print("records %d, inconsistent %d" % (view["events"], view["inconsistent"]))
    assert view["inconsistent"] <= 0.03 * view["events"], summary
    # The per-CPU chain check counts a gap only where one is: a broken check
    # (every switch a gap) would count about one per switch. The real rate
    # depends on the VM (1 in 10,000 under load; 5 in 364 once on a quiet
    # machine, where the VM's init is a larger share of the switches).
    assert summary["sched_switches"] >= view["events"] / 3, summary  # <= 3 records per switch
    assert summary["sched_switch_gaps"] < summary["sched_switches"] / 4, summary
    threads = {t["tid"]: t for t in summary["threads"]}
    fe = threads[tid]
    assert fe["comm"] == "frontend"
    # The whole-run totals cover at least the contended window.
    assert fe["runnable_ms"] >= spin["runnable_ns"] / 1e6 - 0.001
    busy = [t for t in summary["threads"] if t["comm"] == "busy"]
    assert len(busy) == 2 and all(t["runnable_ms"] > 0.2 * SPIN_MS for t in busy), busy
    assert all(t["exited"] for t in summary["threads"]), summary["threads"]
    assert sum(n for _, n in summary["runq_hist_us"]) == sum(
        t["n_runq"] for t in summary["threads"])


def test_unknown_before_tracing(procs, contend):
    """Time before the thread's first record, and after the view's newest, is unknown."""
    def queries(tid, t):
        t0 = t[0]
        return [(tid, t0 - 10**9, t0), (tid, t[3], t[3] + 60 * 10**9), (12345678, t0, t[1])]

    tid, t, (before, after, nobody), _, _ = run_traced(
        procs, [contend, "100", "10"], queries)
    # Before "go" the frontend slept in read() since before attach: only the
    # wakeup is known, so most of the second before t0 is unknown.
    assert before["unknown_ns"] > 0.9e9, before
    assert after["unknown_ns"] > 59e9, after
    assert nobody["rc"] == -2 and nobody["unknown_ns"] == t[1] - t[0]


def test_seed_marks_sleepers_blocked(procs, contend):
    """--seed: the frontend asleep in read() at attach time is BLOCKED from then on."""
    def queries(tid, t):
        return [(tid, t[0] - 20 * 10**6, t[0])]

    tid, t, (before,), _, _ = run_traced(procs, [contend, "100", "10"], queries, seed=True)
    # The driver printed "attached" after seeding; the test then sent "go":
    # the 20 ms before t0 reach back before the seed only if "go" was fast.
    assert before["blocked_ns"] > 0, before
    # Mostly blocked: "go" wakes the thread at the end of the window, and on a
    # loaded machine the wakeup can wait a few ms for a CPU.
    assert before["runnable_ns"] + before["on_cpu_ns"] < 10e6, before
