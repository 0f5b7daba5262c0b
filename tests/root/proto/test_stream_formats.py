# SPDX-License-Identifier: GPL-2.0-only
"""OpenAI Responses, Anthropic Messages and n=2 chat streams from a mock
server (tests/root/proto/mock_sse.py), traced live (root, BPF).

Each stream starts with events that are not tokens, after a response head
that comes before them: ttftrace's TTFB, TTFE (first event), TTFT and TTFV
must each be no less than the server's scheduled waits before them and its
own logged read-to-write, and no more than what the client measured from its
send (proto_helpers.close_ms),
and the token and event counts exact.
"""
import os
import socket
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import needs_root  # noqa: E402
from proto_helpers import (HERE, Timed, by_client_port, close_ms, free_port,  # noqa: E402
                           post_stream, realtime, server_ms, server_stamps, start_server)

pytestmark = needs_root

SCHED = {"head_ms": 30, "pre_ms": 40, "ttft_ms": 60, "itl_ms": 15}


def responses_token(o):
    return isinstance(o, dict) and o.get("type", "").endswith(".delta") and bool(o.get("delta"))


def anthropic_token(o):
    return isinstance(o, dict) and o.get("type") == "content_block_delta" and bool(
        (o["delta"].get("text") or o["delta"].get("thinking")))


def anthropic_visible(o):
    return isinstance(o, dict) and o.get("type") == "content_block_delta" and bool(
        o["delta"].get("text"))


def chat_token(o):
    return isinstance(o, dict) and any((c.get("delta") or {}).get("content")
                                       for c in o.get("choices", []))


CASES = {
    # format: (path, api, token predicate, visible predicate, tokens, events besides tokens)
    "responses": ("/v1/responses", "responses", responses_token, responses_token, 6, 6),
    "anthropic": ("/v1/messages", "messages", anthropic_token, anthropic_visible, 5, 6),
    "chat_n2": ("/v1/chat/completions", "chat", chat_token, chat_token, 4, 3),
}


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_stream_format(fmt, procs, tracer, tmp_path):
    path, api, is_tok, is_vis, n_tok, n_other = CASES[fmt]
    port = free_port()
    log = str(tmp_path / "server.log")
    srv = start_server(procs, [sys.executable, os.path.join(HERE, "mock_sse.py"), str(port), log])
    tr = tracer("-p", srv.pid)
    sock = socket.create_connection(("127.0.0.1", port))
    time.sleep(0.05)  # the server's connection thread blocks in its read
    timed = Timed(sock)
    results = []
    with realtime():
        for _ in range(2):  # keep-alive: two requests on one connection
            body = dict(SCHED, format=fmt, tokens=n_tok)
            results.append(post_stream(sock, timed, path, body, is_tok, is_vis))
    sock.close()
    tr.wait_requests(2)
    assert tr.stop() == 0, tr.stderr
    recs = by_client_port(tr.requests())
    got = recs.get(results[0].local_port, [])
    assert len(got) == 2, "ttftrace reported %s" % tr.requests()

    stamps = server_stamps(log, 2)
    for seq, (r, rec) in enumerate(zip(results, got)):
        st = stamps[(r.local_port, seq)]
        toks = [o for o, _ in r.events if is_tok(o)]
        assert len(toks) == n_tok  # the mock server did what it was asked
        assert len(r.events) == n_tok + n_other
        assert rec["status"] == 200 and rec["path"] == path and rec["api"] == api, rec
        assert rec["token_events"] == n_tok, rec
        assert rec["tokens"] == n_tok and rec["token_source"] == "usage", rec
        assert rec["stream_events"] == len(r.events), rec
        assert "stream" in rec["flags"] and "error" not in rec["flags"], rec
        head, pre, ttft = SCHED["head_ms"], SCHED["pre_ms"], SCHED["ttft_ms"]
        close_ms(rec["ttfb_ms"], r.t_head_ns, r.t_sent_ns, "TTFB", floor_ms=head,
                 server_ms=server_ms(st, "t_head_ns"))
        close_ms(rec["ttfe_ms"], r.t_first_event_ns, r.t_sent_ns, "TTFE", floor_ms=head + pre,
                 server_ms=server_ms(st, "t_first_event_ns"))
        close_ms(rec["ttft_ms"], r.t_first_token_ns, r.t_sent_ns, "TTFT",
                 floor_ms=head + pre + ttft, server_ms=server_ms(st, "t_first_token_ns"))
        close_ms(rec["ttfv_ms"], r.t_first_visible_ns, r.t_sent_ns, "TTFV",
                 floor_ms=head + pre + ttft, server_ms=server_ms(st, "t_first_token_ns"))
        # the schedule separates them: a head, then events, then tokens
        assert rec["ttfb_ms"] + 30 < rec["ttfe_ms"] + 0.5 < rec["ttft_ms"] - 50, rec
        if fmt == "anthropic":  # a thinking delta first, text 15 ms later
            assert rec["ttfv_ms"] - rec["ttft_ms"] > 10, rec
        else:
            assert rec["ttfv_ms"] == rec["ttft_ms"], rec
