# SPDX-License-Identifier: GPL-2.0-only
"""ttftrace against the programmable fixture server (root, BTF).

The server writes the first content token 150 ms after it read the request and
then one token every 20 ms; ttftrace must report TTFT within 2 ms of that, TPOT
within 1 ms and exact token counts. The server's --log (CLOCK_MONOTONIC ns, the
clock of bpf_ktime_get_ns) is the per-event truth the kernel timestamps are
compared with.
"""
import os
import threading
from statistics import median

import pytest

from conftest import Client, check_tpot, tpot_bounds, conn_client_port, conn_server_port, needs_root

pytestmark = needs_root

TTFT_MS = 150
ITL_MS = 20
BASE = ("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS), "--nodelay")


def run(sse_server, tracer, server_args, drive, wait=True):
    """Start the server and ttftrace -p, drive requests, stop with SIGINT.

    Returns (server, tracer, responses, {(client_port, conn_seq): record}, rc).
    """
    srv = sse_server(*(BASE + tuple(server_args)))
    tr = tracer("-p", srv.pid)
    responses = drive(srv.port)
    if wait:
        tr.wait_requests(len(responses))
    rc = tr.stop()
    recs = tr.requests()
    by_key = {}
    for rec in recs:
        key = (conn_client_port(rec), rec["conn_seq"])
        assert key not in by_key, "request reported twice: %s" % rec
        by_key[key] = rec
    assert rc == 0, tr.stderr
    assert len(recs) == len(responses), (
        "ttftrace reported %d requests, client made %d: %s" % (len(recs), len(responses), recs))
    return srv, tr, responses, by_key, rc


def truth_for(srv, port, seq):
    (t,) = [x for x in srv.truth() if x["rport"] == port and x["conn_seq"] == seq]
    return t


def check_end(rec, truth):
    """The last byte reached the device inside the write that logged the end:
    up to 1 ms before that write returned, or from when it began (a write the
    machine stalled after its transmit returns late)."""
    d_end_ms = (rec["t_end_ns"] - truth["t_end_ns"]) / 1e6
    lo_ms = -1.0
    if truth.get("t_end_pre_ns"):
        lo_ms = min(lo_ms, (truth["t_end_pre_ns"] - truth["t_end_ns"]) / 1e6 - 0.1)
    assert lo_ms < d_end_ms <= 0.0, "end %.3f ms from the server's last write (began %.3f ms before)" % (
        d_end_ms, -lo_ms)


def check_request(rec, truth, tokens, ttft_ms=TTFT_MS, itl_ms=ITL_MS, coalesced=False,
                  resp=None):
    """The per-request assertions shared by the scenarios. resp: the client's
    Response for this request, whose send time bounds the arrival from below."""
    ts = truth["t_token_ns"]
    # The ground truth itself: did the fixture keep its schedule? On a loaded
    # machine it can write late; then the programmed values are not the truth
    # and only the comparisons with its log below apply.
    on_schedule = True
    if ts:
        late_ms = (ts[0] - truth["t_read_ns"]) / 1e6 - ttft_ms
        assert late_ms >= 0, "fixture wrote its first token %.3f ms early" % -late_ms
        on_schedule = late_ms < 1.0
        if not on_schedule:
            print("fixture wrote its first token %.3f ms late: checking against its log only"
                  % late_ms)
    assert rec["status"] == 200
    assert rec["method"] == "POST"
    assert rec["path"] == truth["path"]
    assert rec["tokens"] == tokens, rec
    assert rec["token_events"] == tokens, rec
    assert "stream" in rec["flags"], rec
    assert not {"aborted", "incomplete", "buffered"} & set(rec["flags"]), rec
    assert rec["ttft_end"] == "xmit", rec
    # what the server did: read_wait (arrival -> read) is outside its schedule
    server = "server: read %.3f ms after arrival, first token %.3f ms after read" % (
        (truth["t_read_ns"] - rec["t_arrival_ns"]) / 1e6,
        (truth["t_first_ns"] - truth["t_read_ns"]) / 1e6)
    if on_schedule:
        # The schedule starts at the server's read; a request that waited in the
        # socket (the server thread slow to wake on a loaded machine) waited
        # that long on top: ttftrace shows it as read_wait, the log as t_read.
        read_wait_ms = max(0.0, (truth["t_read_ns"] - rec["t_arrival_ns"]) / 1e6 - 0.5)
        assert abs(rec["ttft_ms"] - read_wait_ms - ttft_ms) <= 2.0, (
            "ttft %.3f ms, programmed %d; %s" % (rec["ttft_ms"], ttft_ms, server))
    if tokens > 1 and len(ts) > 1:
        truth_tpot = check_tpot(rec, truth)
        if on_schedule and abs(truth_tpot - itl_ms) < 0.5:
            assert abs(rec["tpot_ms"] - itl_ms) <= 1.0, "tpot %.3f ms, programmed %d" % (
                rec["tpot_ms"], itl_ms)

    # Against the server's own clock: arrival precedes the read that returned
    # it. From below, the client's clock where the test has it (the bytes
    # cannot arrive before the client began to send them, however late the
    # server read them on a loaded machine), else within 5 ms of the read.
    lo_ns = resp.t_sent_ns if resp is not None else truth["t_read_ns"] - 5e6
    assert lo_ns <= rec["t_arrival_ns"] <= truth["t_read_ns"], (
        rec["t_arrival_ns"] - lo_ns, rec["t_arrival_ns"] - truth["t_read_ns"])
    # The first token reached the device inside the write that logged it: up to
    # 1 ms before the write returned, or from when it began (was submitted: an
    # io_uring server that reaps its completion late logs it late; SQPOLL)
    d_first_ms = (rec["t_first_token_ns"] - truth["t_first_ns"]) / 1e6
    pre = truth.get("t_token_pre_ns") or truth.get("t_token_submit_ns")
    lo_ms = -1.0
    if pre and ts:
        lo_ms = min(lo_ms, (pre[0] - ts[0]) / 1e6 - 0.1)
    assert lo_ms < d_first_ms <= 0.0, "first token %.3f ms from the server's write (began %.3f ms before)" % (
        d_first_ms, -lo_ms)
    check_end(rec, truth)
    assert rec["t_first_token_ns"] - rec["t_arrival_ns"] == pytest.approx(
        rec["ttft_ms"] * 1e6, abs=1e3)

    # One ITL per gap between token events, each equal to the server's gap
    # (0 between events coalesced into one write).
    # The server logs each token when its write returned (and since, just
    # before the write began): the token left inside that window, so a gap
    # is known to within the two writes' durations; a write that the
    # machine stalled after the transmit widens it.
    want = [(b - a) / 1e6 for a, b in zip(ts, ts[1:])]
    pre = truth.get("t_token_pre_ns") or truth.get("t_token_submit_ns") or ts
    assert len(rec["itl_ms"]) == len(want), rec["itl_ms"]
    for i, (got, exp) in enumerate(zip(rec["itl_ms"], want)):
        lo = (pre[i + 1] - ts[i]) / 1e6 - 1.0
        hi = (ts[i + 1] - pre[i]) / 1e6 + 1.0
        assert lo <= got <= hi, "itl[%d] %.3f ms, server wrote %.3f ms apart (writes %.3f and %.3f ms)" % (
            i, got, exp, (ts[i] - pre[i]) / 1e6, (ts[i + 1] - pre[i + 1]) / 1e6)
    if coalesced:
        assert 0 in [round(x, 3) for x in rec["itl_ms"]]


def test_keepalive_three_requests(sse_server, tracer):
    def drive(port):
        c = Client(port)
        rs = [c.request(max_tokens=n) for n in (5, 8, 3)]
        c.close()
        return rs

    srv, tr, rs, by_key, _ = run(sse_server, tracer, (), drive)
    port = rs[0].local_port
    assert sorted(by_key) == [(port, 0), (port, 1), (port, 2)]
    for seq, n in enumerate((5, 8, 3)):
        rec = by_key[(port, seq)]
        assert conn_server_port(rec) == srv.port
        assert rec["pid"] == srv.pid
        assert rec["conn"] == "127.0.0.1:%d<-127.0.0.1:%d" % (srv.port, port)
        check_request(rec, truth_for(srv, port, seq), n, resp=rs[seq])
    assert len({r["id"] for r in by_key.values()}) == 3

    s = tr.summary()
    assert s["requests"] == 3
    assert s["ttft_ms"]["n"] == 3
    # The summary's medians against the server's log, not the programmed
    # schedule: a fixture the machine delayed (CI: 153.4 ms against 150) is
    # late in its log too. Each request's TTFT lies between its first token's
    # write beginning after the read and that write returning after the
    # client sent; the median lies between the medians of those bounds.
    truths = [truth_for(srv, port, seq) for seq in range(3)]
    lo = median((t["t_token_pre_ns"][0] - t["t_read_ns"]) / 1e6 - 1.0 for t in truths)
    hi = median((t["t_first_ns"] - r.t_sent_ns) / 1e6 for t, r in zip(truths, rs))
    assert lo <= s["ttft_ms"]["p50"] <= hi, (s["ttft_ms"], lo, hi)
    lo = median(tpot_bounds(t)[0] for t in truths)
    hi = median(tpot_bounds(t)[1] for t in truths)
    assert lo <= s["tpot_ms"]["p50"] <= hi, (s["tpot_ms"], lo, hi)
    assert s["counters"]["ringbuf_full"] == 0



def test_role_chunk_is_not_a_token(sse_server, tracer):
    def drive(port):
        c = Client(port)
        r = c.request(max_tokens=6)
        c.close()
        return [r]

    srv, _, rs, by_key, _ = run(sse_server, tracer, ("--role-chunk",), drive)
    # the client saw the role chunk long before the first token
    assert rs[0].events[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    port = rs[0].local_port
    check_request(by_key[(port, 0)], truth_for(srv, port, 0), 6, resp=rs[0])


def test_coalesced_events_each_counted(sse_server, tracer):
    def drive(port):
        c = Client(port)
        r = c.request(max_tokens=13)
        c.close()
        return [r]

    srv, _, rs, by_key, _ = run(sse_server, tracer, ("--coalesce", "4"), drive)
    port = rs[0].local_port
    rec = by_key[(port, 0)]
    # 1 + 3 writes of 4 events: every event counted, 4 tokens per write
    check_request(rec, truth_for(srv, port, 0), 13, coalesced=True, resp=rs[0])
    assert rec["tokens_per_event"] == pytest.approx(1.0)


def test_usage_chunk_not_a_token(sse_server, tracer):
    def drive(port):
        c = Client(port)
        r = c.request(max_tokens=7)
        c.close()
        return [r]

    srv, _, rs, by_key, _ = run(sse_server, tracer, ("--usage", "--role-chunk"), drive)
    assert rs[0].events[-2]["choices"] == []
    port = rs[0].local_port
    rec = by_key[(port, 0)]
    check_request(rec, truth_for(srv, port, 0), 7, resp=rs[0])
    assert rec["token_source"] == "usage"


@pytest.mark.parametrize("extra", [(), ("--read-max", "48")], ids=["whole", "split-reads"])
def test_all_syscall_variants(sse_server, tracer, extra):
    """write/writev/send/sendto/sendmsg and read/readv/recv/recvfrom/recvmsg in
    rotation, with a recv(MSG_PEEK) of the whole request before each read."""
    sizes = (4, 6, 3, 5, 7, 2)

    def drive(port):
        c = Client(port)
        rs = [c.request(max_tokens=n) for n in sizes]
        c.close()
        return rs

    srv, _, rs, by_key, _ = run(sse_server, tracer,
                                ("--syscalls", "cycle", "--usage") + extra, drive)
    port = rs[0].local_port
    # MSG_PEEK must not turn into a second request
    assert sorted(by_key) == [(port, i) for i in range(len(sizes))]
    for seq, n in enumerate(sizes):
        check_request(by_key[(port, seq)], truth_for(srv, port, seq), n, resp=rs[seq])


@pytest.mark.parametrize("path", ["/v1/completions", "/completion"])
def test_other_apis(sse_server, tracer, path):
    def drive(port):
        c = Client(port)
        r = c.request(path=path, max_tokens=5)
        c.close()
        return [r]

    srv, _, rs, by_key, _ = run(sse_server, tracer, (), drive)
    port = rs[0].local_port
    rec = by_key[(port, 0)]
    check_request(rec, truth_for(srv, port, 0), 5, resp=rs[0])
    assert rec["api"] not in ("", None, "unknown")


def test_nonstream_ttft_equals_e2e(sse_server, tracer):
    def drive(port):
        c = Client(port)
        r = c.request(max_tokens=4, stream=False)
        c.close()
        return [r]

    srv, _, rs, by_key, _ = run(sse_server, tracer, ("--nonstream",), drive)
    assert rs[0].headers["content-type"] == "application/json"
    port = rs[0].local_port
    rec = by_key[(port, 0)]
    want_ms = TTFT_MS + 3 * ITL_MS  # the fixture answers after the whole generation
    assert "nonstream" in rec["flags"] and "stream" not in rec["flags"], rec
    assert rec["ttft_ms"] == pytest.approx(rec["e2e_ms"], abs=1e-3)
    t = truth_for(srv, port, 0)
    late_ms = (t["t_end_ns"] - t["t_read_ns"]) / 1e6 - want_ms
    if late_ms < 1.0:	# the fixture kept its schedule: the programmed value is the truth
        assert abs(rec["ttft_ms"] - want_ms) <= 2.0, rec["ttft_ms"]
    # against the fixture's log, always: the body left inside its write
    check_end(rec, t)
    assert t["t_read_ns"] - 5e6 < rec["t_arrival_ns"] <= t["t_read_ns"]


def test_four_concurrent_connections(sse_server, tracer):
    sizes = {0: 6, 1: 9, 2: 4, 3: 11}

    def drive(port):
        out = {}
        start = threading.Barrier(4)

        def one(i):
            c = Client(port)
            start.wait()
            out[i] = [c.request(max_tokens=sizes[i]), c.request(max_tokens=sizes[i])]
            c.close()

        ths = [threading.Thread(target=one, args=(i,)) for i in range(4)]
        for t in ths:
            t.start()
        for t in ths:
            t.join(30)
        return [r for i in sorted(out) for r in out[i]]

    srv, tr, rs, by_key, _ = run(sse_server, tracer, (), drive)
    assert len(rs) == 8
    for i in range(4):
        port = rs[2 * i].local_port
        for seq in (0, 1):
            check_request(by_key[(port, seq)], truth_for(srv, port, seq), sizes[i],
                          resp=rs[2 * i + seq])
    assert tr.summary()["requests"] == 8


def test_sigint_right_after_last_response_loses_nothing(sse_server, tracer):
    def drive(port):
        c = Client(port)
        rs = [c.request(max_tokens=3), c.request(max_tokens=2)]
        c.close()
        return rs

    srv, tr, rs, by_key, _ = run(sse_server, tracer, (), drive, wait=False)
    port = rs[0].local_port
    assert sorted(by_key) == [(port, 0), (port, 1)]
    assert by_key[(port, 1)]["tokens"] == 2
    assert tr.summary()["requests"] == 2


def test_client_and_tracer_agree(sse_server, tracer):
    """Over loopback the client's TTFT is the tracer's plus the client's read."""
    def drive(port):
        # Real-time client thread, so that other work on the machine does not
        # delay its reads (the kernel timestamps do not depend on it).
        old = os.sched_getscheduler(0), os.sched_getparam(0)
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(5))
        try:
            c = Client(port)
            rs = [c.request(max_tokens=4) for _ in range(3)]
            c.close()
        finally:
            os.sched_setscheduler(0, old[0], old[1])
        return rs

    _, _, rs, by_key, _ = run(sse_server, tracer, (), drive)
    for seq, r in enumerate(rs):
        rec = by_key[(r.local_port, seq)]
        client_ms = (r.t_first_token_ns - r.t_sent_ns) / 1e6
        assert 0 <= client_ms - rec["ttft_ms"] < 2.0, (client_ms, rec["ttft_ms"])
