# SPDX-License-Identifier: GPL-2.0-only
"""An engine started by a traced process after ttftrace attached (a
supervisor that forks and execs it): its uprobes attach within a fraction of
a second of the exec, not at the next once-a-second rescan after the next
drain (up to two seconds at the default --drain-ms), so its first requests
already split into the engine's stages. The tracer learns of the fork at
once (its FORK record wakes it) and looks at the new process at each drain
for a few seconds (user/cmd/fresh_procs.h).

Truth: the engine's own --truth log (one request, its stages logged)."""
import os
import signal
import subprocess
import time

from attrib_helpers import ENGINE, PROFILE, require_attribution
from conftest import Client, free_port, needs_root, wait_listen

pytestmark = needs_root

# The engine's first request comes this long after it listens: well under the
# rescan path's 1 to 2 s, well over the fresh path's drain every 100 ms.
FIRST_REQUEST_AFTER_S = 0.4


def test_engine_execd_by_a_traced_parent_is_probed_before_its_first_request(
        procs, tracer, tmp_path):
    require_attribution()
    fifo, truth = str(tmp_path / "go"), str(tmp_path / "truth.ndjson")
    os.mkfifo(fifo)
    port = free_port()
    # the parent waits for the go, then forks a child that execs the engine
    sh = procs.add(subprocess.Popen(
        ["sh", "-c", 'read x < "$0"; "$1" --port "$2" --nodelay --truth "$3" & wait',
         fifo, ENGINE, str(port), truth], start_new_session=True))
    try:
        check_first_request(sh, tracer, fifo, port, truth)
    finally:
        try:
            os.killpg(sh.pid, signal.SIGKILL)     # the engine too, not only its parent
        except ProcessLookupError:
            pass


def check_first_request(sh, tracer, fifo, port, truth):
    tr = tracer("-p", sh.pid, "--profile", PROFILE)
    with open(fifo, "w") as f:
        f.write("go\n")
    wait_listen(port, poll_s=0.005)
    time.sleep(FIRST_REQUEST_AFTER_S)
    c = Client(port)
    r = c.request(path="/v1/chat/completions",
                  body={"model": "m", "stream": True, "max_tokens": 4,
                        "messages": [{"role": "user", "content": "x" * 64}]})
    c.close()
    assert r.status == 200
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not (os.path.exists(truth) and open(truth).read()):
        time.sleep(0.02)
    assert tr.stop() == 0, tr.stderr
    assert "engine profile" in tr.stderr and "uprobe(s) attached" in tr.stderr, tr.stderr
    reqs = [q for q in tr.requests() if q.get("path") == "/v1/chat/completions"]
    assert len(reqs) == 1, reqs
    stages = reqs[0]["stages_ms"]
    # the engine's stages, not one merged "server" stage
    assert stages["prefill"] is not None and stages["queue"] is not None, (stages, tr.stderr)
    assert stages["server"] is None, stages
