# SPDX-License-Identifier: GPL-2.0-only
"""ttftrace against the demo llama.cpp server, checked against a client that
shares no code with it (root).

One demo server (node-llama-cpp, random-weight model, 1 thread, 1 sequence:
concurrent requests queue FIFO) serves the whole module. Each test attaches
ttftrace --port, drives load with tests/indep_client.py (Python's standard
library: its own HTTP/1.1, SSE split and token rule; not loadgen, which
splits with ttftrace's own SSE code), stops ttftrace with SIGINT and joins its
NDJSON requests to the client's on (client port, position on the connection).

Why the bounds hold on loopback: both sides use CLOCK_MONOTONIC. The client's
TTFT starts just before its send() and ends when the recv() that brought the
first token event's last byte returned; ttftrace's starts when the first
request byte reaches the server's socket and ends when the first token's skb
reaches the (loopback) device. The server's interval lies inside the client's.
"""

import pytest

import client_bracket
from conftest import needs_root
from e2e_helpers import DemoServer, demo_missing_reason, join, wait_for_file_lines
from indep_client import stream_load

pytestmark = [needs_root,
              pytest.mark.skipif(demo_missing_reason() is not None,
                                 reason=demo_missing_reason() or "")]

MAX_TOKENS = 16
PROMPT_CHARS = 64
# The client stamps its start just before send(): the request reaches the server
# after it, up to clock reading (no tolerance needed; 1 us for the reading).
SEND_EPS_NS = 1_000
BAD_FLAGS = {"unknown", "trunc", "aborted", "incomplete", "error", "nonstream"}
# Counters that mean events or requests were lost.
LOSS_COUNTERS = ("ringbuf_full", "arrival_map_full", "sock_map_full", "tgid_map_full",
                 "lost_sync", "token_events_dropped_oom", "malformed_records",
                 "report_samples_lost", "report_lines_lost", "report_requests_invalid")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    srv = DemoServer(str(tmp_path_factory.mktemp("demo") / "server.log"))
    yield srv
    srv.stop()


def check_pair(r, s, path, api):
    """Problems with one joined request, as strings with the values seen."""
    key = "req %d (port %d #%d)" % (r["index"], r["local_port"], r["conn_seq"])
    bad = []

    def want(ok, what):
        if not ok:
            bad.append("%s: %s" % (key, what))

    want(r["error"] is None and r["status"] == 200, "client error %r status %r"
         % (r["error"], r["status"]))
    want(s.get("status") == 200 and s.get("path") == path and s.get("api") == api,
         "status/path/api %r %r %r, want 200 %r %r" % (s.get("status"), s.get("path"),
                                                       s.get("api"), path, api))
    want(r["tokens"] == MAX_TOKENS, "client tokens %r, server always makes %d"
         % (r["tokens"], MAX_TOKENS))
    want(s.get("tokens") == r["tokens"], "tokens ttftrace %r != client %r"
         % (s.get("tokens"), r["tokens"]))
    want(s.get("token_events") == r["events"], "token events ttftrace %r != client %r"
         % (s.get("token_events"), r["events"]))
    flags = set(s.get("flags") or [])
    want(not flags & BAD_FLAGS, "flags %s" % sorted(flags))
    want(s.get("ttft_end") == "xmit", "ttft_end %r, want 'xmit'" % s.get("ttft_end"))

    # TTFT, each ITL and TPOT inside the client's bracket (tests/client_bracket.py)
    bad += client_bracket.check(r, s)
    if s.get("ttft_ms") is None:
        return bad
    # Causality on the shared clock (see the module docstring).
    want(s["t_arrival_ns"] >= r["start_ns"] - SEND_EPS_NS,
         "request arrived at the server %d ns before the client sent it"
         % (r["start_ns"] - s["t_arrival_ns"]))
    want(s["t_arrival_ns"] <= r["sent_ns"],
         "request arrived at the server %d ns after the client's send() returned"
         % (s["t_arrival_ns"] - r["sent_ns"]))
    want(s["t_first_token_ns"] <= r["first_token_ns"],
         "first token left the server %d ns after the client received it"
         % (s["t_first_token_ns"] - r["first_token_ns"]))
    if s.get("t_end_ns") is None:
        bad.append("%s: ttftrace t_end_ns null" % key)
    else:
        want(s["t_end_ns"] <= r["end_ns"], "response ended at the server %d ns after the "
             "client received its end" % (s["t_end_ns"] - r["end_ns"]))
    return bad


def traced_run(demo, tracer, tmp_path, path, api, n, c, include_usage=True):
    tr = tracer("--port", demo.port)
    client = stream_load(demo.port, path=path, n=n, c=c, prompt_chars=PROMPT_CHARS,
                         max_tokens=MAX_TOKENS, include_usage=include_usage)
    # ttftrace reports a request once its response ended; let it drain.
    wait_for_file_lines(tr.out_path, lambda o: o.get("type") == "request", n)
    rc = tr.stop()
    assert rc == 0, "ttftrace exit %d: %s" % (rc, tr.stderr)
    assert "Error" not in tr.stderr, tr.stderr

    assert [r["error"] for r in client] == [None] * n, client
    traced = tr.requests()
    pairs, unmatched, dups = join(client, traced)
    problems = []
    if unmatched:
        problems.append("unmatched client requests (port#seq): %s" % ", ".join(
            "%d#%d" % (r["local_port"], r["conn_seq"]) for r in unmatched))
    if dups:
        problems.append("ttftrace reported these (port, seq) twice: %s" % dups)
    if len(traced) != n:
        problems.append("ttftrace reported %d requests, client made %d" % (len(traced), n))
    for r, s in pairs:
        problems += check_pair(r, s, path, api)
    print("%d requests: " % len(pairs) + client_bracket.SPREAD_FMT % client_bracket.spread(pairs))

    summ = tr.summary()
    if summ.get("requests") != n:
        problems.append("summary requests %r, want %d" % (summ.get("requests"), n))
    counters = summ.get("counters") or {}
    for k in LOSS_COUNTERS:
        if counters.get(k, 0) != 0:
            problems.append("summary counter %s = %r" % (k, counters[k]))
    table = "\n".join("  %d#%d client ttft %.3f tokens %d | ttftrace ttft %s tokens %s flags %s"
                      % (r["local_port"], r["conn_seq"], r["ttft_ms"], r["tokens"],
                         s.get("ttft_ms"), s.get("tokens"), s.get("flags"))
                      for r, s in pairs)
    assert not problems, "\n".join(problems) + "\n" + table


@pytest.mark.parametrize("c,n", [(1, 6), (4, 8)], ids=["c1", "c4"])
def test_chat_stream_matches_client(demo, tracer, tmp_path, c, n):
    """/v1/chat/completions with a usage chunk, 1 and 4 in flight (4 queue FIFO)."""
    traced_run(demo, tracer, tmp_path, "/v1/chat/completions", "chat", n, c)


def test_llamacpp_completion_matches_client(demo, tracer, tmp_path):
    """llama.cpp's native /completion stream (token count from tokens_predicted)."""
    traced_run(demo, tracer, tmp_path, "/completion", "llamacpp", 4, 2, include_usage=False)
