# SPDX-License-Identifier: GPL-2.0-only
"""The traced-process filter in front of traced_tgids (bpf/net_maps.bpf.h):
one word per slot tgid % 4096 that answers "traced" for the one tgid it
names, "not traced" when 0, and sends every other case to the hash map.

Pids are chosen here (kernel.ns_last_pid, as CRIU does) so that:
- two traced servers and one untraced server share a slot: both traced
  ones are seen, the untraced one is not;
- a traced server alone in its slot exits, and an untraced server gets its
  pid: it is not traced (the slot must not keep naming a gone tgid).

Both network sources (each has its own filter; user space and the fork
programs set it). Truth: which server the test's own client talked to (its
port).
"""
import os
import subprocess
import sys
import time

import pytest

from conftest import SSE_SERVER, Client, conn_server_port, needs_root, require_built

pytestmark = needs_root

SLOTS = 4096            # TTF_TGID_FILTER_SLOTS (bpf/net.h)
NS_LAST_PID = "/proc/sys/kernel/ns_last_pid"
TRIES = 20

# A traced parent: on "PID" from stdin it starts a fixture server as that pid
# (when no other process takes it first) and answers "pid port", or "- -";
# on "k PID" it kills and reaps that child, and answers "ok".
SUPERVISOR = r"""
import os, subprocess, sys
kids = {}
for line in sys.stdin:
    if line.startswith("k "):
        p = kids.pop(int(line[2:]))
        p.kill(); p.wait()
        print("ok", flush=True)
        continue
    want = int(line)
    with open("%s", "w") as f:
        f.write(str(want - 1))
    p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, text=True)
    if p.pid != want:
        p.kill(); p.wait()
        print("- -", flush=True)
        continue
    kids[p.pid] = p
    port = p.stdout.readline().strip().rsplit(":", 1)[1]
    print(p.pid, port, flush=True)
""" % NS_LAST_PID


def pid_free(pid):
    return not os.path.exists("/proc/%d" % pid)


def server_cmd():
    return [SSE_SERVER, "--port", "0", "--ttft-ms", "1", "--itl-ms", "1"]


class Supervisor:
    def __init__(self, procs):
        self.proc = procs.add(subprocess.Popen(
            [sys.executable, "-c", SUPERVISOR] + server_cmd(),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))

    def spawn_at(self, pid):
        """(pid, port) of a traced server started as pid, or None."""
        self.proc.stdin.write("%d\n" % pid)
        self.proc.stdin.flush()
        got, port = self.proc.stdout.readline().split()
        return None if got == "-" else (int(got), int(port))

    def kill(self, pid):
        self.proc.stdin.write("k %d\n" % pid)
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "ok"


def spawn_untraced_at(procs, pid):
    """(proc, port) of an untraced server started as pid, or None."""
    with open(NS_LAST_PID, "w") as f:
        f.write(str(pid - 1))
    p = subprocess.Popen(server_cmd(), stdout=subprocess.PIPE, text=True)
    if p.pid != pid:
        p.kill()
        p.wait()
        return None
    procs.add(p)
    return p, int(p.stdout.readline().strip().rsplit(":", 1)[1])


def pick(offsets, busy_slot):
    """Pids p with p + each offset free and below pid_max, p + 1 not in busy_slot."""
    pid_max = int(open("/proc/sys/kernel/pid_max").read())
    for p in range(3000, pid_max - max(offsets) - 1, 97):
        if (p + 1) % SLOTS != busy_slot and all(pid_free(p + o) for o in offsets):
            yield p


def one_request(port):
    c = Client(port)
    r = c.request(max_tokens=3)
    c.close()
    assert r.status == 200


def ports_seen(tr):
    return {conn_server_port(r) for r in tr.requests()}


@pytest.mark.parametrize("source", ["sock", "syscall"])
def test_tgid_slots_shared_and_reused(procs, tracer, source):
    require_built(SSE_SERVER)
    sup = Supervisor(procs)
    tr = tracer("-p", sup.proc.pid, "--net-source", source)
    placed = None
    # the supervisor is traced: e's slot must be e's alone
    for p in list(pick((0, SLOTS, 2 * SLOTS, 1), sup.proc.pid % SLOTS))[:TRIES]:
        a, b = sup.spawn_at(p), sup.spawn_at(p + SLOTS)
        c = spawn_untraced_at(procs, p + 2 * SLOTS)
        e = sup.spawn_at(p + 1)
        if a and b and c and e:
            placed = (a, b, c, e)
            break
        for s in (a, b, e):
            if s:
                sup.kill(s[0])
        if c:
            c[0].kill()
        time.sleep(0.05)
    if not placed:
        pytest.fail("could not start servers at chosen pids in %d tries (a busy host forks "
                    "between the ns_last_pid write and the fork)" % TRIES)
    (a_pid, a_port), (b_pid, b_port), (c_proc, c_port), (e_pid, e_port) = placed
    assert a_pid % SLOTS == b_pid % SLOTS == c_proc.pid % SLOTS
    for port in (a_port, b_port, c_port, e_port):
        one_request(port)
    # e, alone in its slot, exits; an untraced server takes its pid
    sup.kill(e_pid)
    assert pid_free(e_pid)
    time.sleep(0.3)     # its EXIT record: the slot goes to the hash
    f = None
    for _ in range(TRIES):
        f = spawn_untraced_at(procs, e_pid)
        if f:
            break
        time.sleep(0.05)
    assert f, "could not start the untraced server at the gone pid %d" % e_pid
    f_proc, f_port = f
    one_request(f_port)
    one_request(a_port)
    time.sleep(0.3)
    assert tr.stop() == 0, tr.stderr
    seen = ports_seen(tr)
    assert {a_port, b_port, e_port} <= seen, (seen, tr.stderr)
    assert c_port not in seen, "untraced server sharing the slot was traced: %s" % seen
    assert f_port not in seen, "untraced server at a gone traced pid was traced: %s" % seen
    assert sum(conn_server_port(r) == a_port for r in tr.requests()) == 2
