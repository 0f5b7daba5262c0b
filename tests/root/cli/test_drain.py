# SPDX-License-Identifier: GPL-2.0-only
"""--drain-ms: how often the tracer reads the rings while records come, so how
soon a request's line comes out after the response ended. Truth: the
client's own clock at the end of each response, and the moment the line
appears in the output file (ttftrace writes a line as it reports it)."""
import json
import time

from conftest import Client, needs_root

pytestmark = needs_root


def requests_in(path):
    try:
        with open(path) as f:
            return sum(1 for l in f if l.startswith("{") and json.loads(l)["type"] == "request")
    except (OSError, ValueError):
        return 0


def line_latencies_s(srv, tr, n=5):
    """Seconds from each response's end (client side) to its line in the output."""
    out = []
    for i in range(n):
        c = Client(srv.port)
        assert c.request(max_tokens=4).status == 200
        c.close()
        t_end = time.monotonic()
        deadline = t_end + 10
        while requests_in(tr.out_path) <= i and time.monotonic() < deadline:
            time.sleep(0.005)
        assert requests_in(tr.out_path) == i + 1, tr.stderr
        out.append(time.monotonic() - t_end)
        time.sleep(0.15)	# not in step with the drains
    return out


def test_drain_ms_sets_how_soon_a_line_comes_out(sse_server, tracer):
    srv = sse_server("--ttft-ms", "1", "--itl-ms", "1", "--tokens", "4")
    fast = tracer("-p", srv.pid, "--drain-ms", "50")
    lat_fast = line_latencies_s(srv, fast)
    assert fast.stop() == 0, fast.stderr
    slow = tracer("-p", srv.pid, "--drain-ms", "2000")
    lat_slow = line_latencies_s(srv, slow)
    assert slow.stop() == 0, slow.stderr
    # 50 ms: each line within a few drains; 2 s: on average far later (a
    # line waits for the next drain, 0 to 4 s at 2 s busy and 4 s idle)
    assert max(lat_fast) < 0.5, lat_fast
    assert sum(lat_slow) / len(lat_slow) > 0.3, lat_slow
