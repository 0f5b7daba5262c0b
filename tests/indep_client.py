# SPDX-License-Identifier: GPL-2.0-only
"""A streaming load client that shares no code with ttftrace: truth for the
end-to-end tests on the real engine.

loadgen (tools/loadgen) splits the stream with ttftrace's own SSE code
(user/proto/stream/sse.c), so a mistake in first-token detection would be
made on both sides and cancel out. This client is Python's standard library
only, over conftest.Client (its own HTTP/1.1 chunked reader and SSE split,
each event stamped with the kernel's receive time of the segment that carried
its last byte: SO_TIMESTAMPNS, so the client's own wake-up lag does not count;
each request's start bracketed by the clock read before and after its send()),
and judges tokens by its own rule, the OpenAI and llama.cpp wire formats as
documented: an event is a token event when choices[].delta.content,
choices[].text or content is a non-empty string. Its records have loadgen's field names
plus token_ns and token_shared (each token event's stamp, and whether the next
event shares it), so the tests join them to ttftrace's on
(client port, position on the connection) and hold ttftrace's TTFT, ITL and TPOT to
them with tests/client_bracket.py.
"""
import json
import os
import queue
import random
import socket
import string
import sys
import time
import threading

from conftest import SO_TIMESTAMPNS, Client

LETTERS = string.ascii_lowercase
RT_PRIORITY = 10


def _prompt(n, seed):
    """n printable characters, different per request (no prefix-cache hits)."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        space = i > 0 and out[-1] != " " and rnd.random() < 1 / 6
        out.append(" " if space else rnd.choice(LETTERS))
    return "".join(out)


def _body(path, idx, prompt_chars, max_tokens, include_usage, seed):
    prompt = _prompt(prompt_chars, seed * 1000003 + idx)
    if path == "/completion":
        return {"prompt": prompt, "n_predict": max_tokens, "stream": True, "seed": seed + idx}
    b = {"model": "demo", "max_tokens": max_tokens, "stream": True, "seed": seed + idx}
    if path == "/v1/chat/completions":
        b["messages"] = [{"role": "user", "content": prompt}]
    else:
        b["prompt"] = prompt
    if include_usage:
        b["stream_options"] = {"include_usage": True}
    return b


def token_text(ev):
    """The visible text an SSE data object carries ("" for none)."""
    if not isinstance(ev, dict):
        return ""
    text = ev.get("content") if isinstance(ev.get("content"), str) else ""
    for ch in ev.get("choices") or []:
        delta = ch.get("delta") or {}
        for v in (delta.get("content"), ch.get("text")):
            if isinstance(v, str):
                text += v
    return text


def _tokens(events, n_token_events):
    """usage.completion_tokens, else llama.cpp's tokens_predicted, else the events."""
    for ev in reversed(events):
        if isinstance(ev, dict) and isinstance(ev.get("usage"), dict) and \
                ev["usage"].get("completion_tokens") is not None:
            return ev["usage"]["completion_tokens"]
        if isinstance(ev, dict) and ev.get("tokens_predicted") is not None:
            return ev["tokens_predicted"]
    return n_token_events


def _record(idx, conn_seq, resp=None, error=None):
    r = {"index": idx, "conn_seq": conn_seq, "error": error, "status": 0, "tokens": 0,
         "events": 0, "local_port": 0, "start_ns": 0, "sent_ns": 0, "first_token_ns": 0,
         "end_ns": 0, "ttft_ms": None, "token_ns": [],
         "token_shared": []}
    if resp is None:
        return r
    tok = [e for e in resp.events if token_text(e)]
    # each token event's time, by this module's token rule (not conftest's), and
    # whether the next event (of any kind) carries the same stamp: a segment merged
    # into one not yet read (tests/client_bracket.py)
    ev_ns = resp.t_event_ns
    idx = [i for i, e in enumerate(resp.events) if token_text(e)]
    token_ns = [ev_ns[i] for i in idx]
    shared = [i + 1 < len(ev_ns) and ev_ns[i + 1] == ev_ns[i] for i in idx]
    r.update(status=resp.status, local_port=resp.local_port, start_ns=resp.t_sent_ns,
             sent_ns=resp.t_sent_after_ns, token_ns=token_ns, token_shared=shared,
             first_token_ns=token_ns[0] if token_ns else 0, end_ns=resp.t_end_ns,
             events=len(tok), tokens=_tokens(resp.events, len(tok)))
    if token_ns:
        r["ttft_ms"] = (token_ns[0] - resp.t_sent_ns) / 1e6
    return r


def stream_load(port, path="/v1/chat/completions", n=6, c=1, prompt_chars=64, max_tokens=16,
                include_usage=True, seed=1, timeout_s=60):
    """n streamed requests, c keep-alive connections at once; one record per
    request in index order."""
    work = [(path, _body(path, i, prompt_chars, max_tokens, include_usage, seed))
            for i in range(n)]
    return stream_work(port, work, c, timeout_s)


def stream_work(port, work, c=1, timeout_s=60):
    """Each (path, body) of work sent on one of c keep-alive connections at once;
    one record per item in order."""
    n = len(work)
    pending = queue.Queue()
    for i in range(n):
        pending.put(i)
    out = [None] * n

    def worker():
        # As root each worker runs SCHED_FIFO (as loadgen did under chrt): on 2 busy
        # cores a worker that waits for the CPU sends its next request late, which
        # changes the load the server sees (not the stamps, which the kernel takes).
        if os.geteuid() == 0:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(RT_PRIORITY))
        cl = Client(port, timeout_s=timeout_s, rx_stamps=True)
        seq = 0
        try:
            while True:
                try:
                    i = pending.get_nowait()
                except queue.Empty:
                    return
                try:
                    out[i] = _record(i, seq, cl.request(work[i][0], body=work[i][1]))
                except (OSError, ValueError, json.JSONDecodeError) as e:
                    out[i] = _record(i, seq, error=repr(e))
                    return
                seq += 1
        finally:
            cl.close()

    # a thread whose recv() returned waits for the GIL at most this long (default 5 ms)
    sys.setswitchinterval(0.0005)
    # The kernel stamps arriving packets only while some socket asks for it, and
    # turns that on from a work item (net/core/dev.c net_enable_timestamp): a
    # segment that arrives before it did is stamped when read. One socket asks
    # for the whole run, from before the first connection.
    keeper = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    keeper.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    time.sleep(0.05)
    threads = [threading.Thread(target=worker) for _ in range(c)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout_s * n)
    keeper.close()
    return [r if r is not None else _record(i, -1, error="not sent") for i, r in enumerate(out)]
