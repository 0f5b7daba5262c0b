# SPDX-License-Identifier: GPL-2.0-only
"""Sockets driven by io_uring (docs/kernel.md B1.10, docs/cases.md #12).

tests/fixtures/uring_server makes every read and write of a connection in
one way (--mode): plain read/write, IORING_OP_RECV/SEND issued inline,
RECVMSG/SENDMSG, RECV/SEND forced to io-wq workers (IOSQE_ASYNC),
RECV/SEND on an SQPOLL ring, and READ/WRITEV on the socket. Under each, ttftrace must see every request,
with the fixture's schedule (TTFT within 2 ms), exact token counts, each
token's send time within 0.1 ms of the server's log of that send (after it
made or submitted the write, before the write returned or its CQE was
seen), the same offset from the log as the plain build (medians within
0.1 ms), the process that owns the io-wq and SQPOLL threads as the
request's pid, and the prompt in no output.
"""
import os
import sys

import pytest

from conftest import ROOT, RT_ARGS, Client, conn_client_port, needs_root, require_built

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "bpf"))
from test_net_metrics import check_request  # noqa: E402
from test_net_source import btf_without  # noqa: E402

pytestmark = needs_root

URING_SERVER = os.path.join(ROOT, ".output", "tests", "fixtures", "uring_server")
MODES = ("plain", "send", "msg", "async", "sqpoll", "rw")
TTFT_MS = 60
ITL_MS = 10
SIZES = (5, 8, 3, 6)
PROMPT = "uring-prompt-marker-5d1c"
# Per-token send time: ttftrace's against the server's log (the bound).
TOKEN_TOL_MS = 0.1


class UringServer:
    def __init__(self, procs, mode, log_path):
        require_built(URING_SERVER)
        import json
        import subprocess
        self._json = json
        self.log_path = log_path
        cmd = [URING_SERVER, "--port", "0", "--mode", mode, "--ttft-ms", str(TTFT_MS),
               "--itl-ms", str(ITL_MS), "--log", log_path] + RT_ARGS
        self.proc = procs.add(subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True))
        line = self.proc.stdout.readline()
        assert line.startswith("listening on 127.0.0.1:"), "uring_server said %r" % line
        self.port = int(line.rsplit(":", 1)[1])
        self.pid = self.proc.pid

    def truth(self):
        with open(self.log_path) as f:
            return [self._json.loads(l) for l in f if l.strip()]

    def thread_comm(self, tid):
        """Name of thread tid of the server; None when it is gone (idle io-wq workers exit)."""
        try:
            with open("/proc/%d/task/%d/comm" % (self.pid, tid)) as f:
                return f.read().strip()
        except FileNotFoundError:
            return None


def body(n):
    return {"model": "m", "stream": True, "max_tokens": n,
            "messages": [{"role": "user", "content": PROMPT}]}


def run(procs, tracer, tmp_path, mode, args=(), env=None, sizes=SIZES):
    """Trace a uring_server in mode while one connection makes len(sizes) requests.

    Returns (server, tracer, responses, the tracer's request records of that connection)."""
    srv = UringServer(procs, mode, str(tmp_path / ("truth-%s.ndjson" % mode)))
    tr = tracer("-p", srv.pid, *args, env=env)
    c = Client(srv.port)
    rs = [c.request(body=body(n)) for n in sizes]
    tr.wait_requests(len(sizes), timeout_s=5)
    # the threads' names while the connection (its thread, ring and SQPOLL thread) lives
    comms = {t: srv.thread_comm(t) for r in tr.requests() for t in (r["tid_rx"], r["tid_tx"])}
    c.close()
    assert tr.stop() == 0, tr.stderr
    port = rs[0].local_port
    recs = sorted((r for r in tr.requests() if conn_client_port(r) == port),
                  key=lambda r: r["conn_seq"])
    srv.comms = comms
    return srv, tr, rs, recs


def token_times_ns(rec):
    """ttftrace's send time of each token event: the first, then the ITLs (ms, 3 decimals)."""
    ts = [rec["t_first_token_ns"]]
    acc = 0.0
    for itl in rec["itl_ms"]:
        acc += itl
        ts.append(rec["t_first_token_ns"] + acc * 1e6)
    return ts


def token_offsets_ms(rec, truth):
    """Per token: (ttftrace's send time - the server's submit, its completion - ttftrace's), ms."""
    got = token_times_ns(rec)
    return [((g - sub) / 1e6, (done - g) / 1e6)
            for g, sub, done in zip(got, truth["t_token_submit_ns"], truth["t_token_ns"])]


def check_token_times(rec, truth, n):
    """Each token's send time within TOKEN_TOL_MS of the server's logged send: not
    before it made (or submitted) the write, nor after the write returned (or its
    CQE was seen). The ITLs are rounded to 1 us: 1 us per token more."""
    offs = token_offsets_ms(rec, truth)
    assert len(offs) == len(truth["t_token_ns"]) == n
    for i, (after_submit, before_done) in enumerate(offs):
        slack = TOKEN_TOL_MS + 1e-3 * (i + 1)
        assert after_submit >= -slack and before_done >= -slack, (
            "token %d of request %d: ttftrace %.3f ms after the server's submit, %.3f ms "
            "before its completion" % (i, rec["conn_seq"], after_submit, before_done))


def assert_no_prompt(tr):
    outs = [tr.stderr, tr.stdout]
    if tr.out_path and os.path.exists(tr.out_path):
        outs.append(open(tr.out_path, errors="replace").read())
    for text in outs:
        assert PROMPT not in text


@pytest.mark.parametrize("mode", MODES)
def test_uring_mode(procs, tracer, tmp_path, mode):
    srv, tr, rs, recs = run(procs, tracer, tmp_path, mode)
    assert [r["conn_seq"] for r in recs] == list(range(len(SIZES))), (recs, tr.stderr)
    assert "io_uring_submit_req not attached" not in tr.stderr, tr.stderr
    truth = sorted((t for t in srv.truth() if t["rport"] == rs[0].local_port),
                   key=lambda t: t["conn_seq"])
    assert len(truth) == len(SIZES)
    for rec, t, n, r in zip(recs, truth, SIZES, rs):
        assert t["mode"] == mode
        check_request(rec, t, n, ttft_ms=TTFT_MS, itl_ms=ITL_MS, resp=r)
        # the process that owns the io-wq/SQPOLL threads, whichever thread moved the bytes
        assert rec["pid"] == srv.pid, rec
        check_token_times(rec, t, n)
    counters = tr.summary()["counters"]
    assert counters["payload_args_missing"] == 0, counters
    assert counters["uring_payload_replaced"] == 0, counters
    assert counters["ringbuf_full"] == 0, counters
    # Which thread moved the bytes: the connection's own, or the io_uring worker the mode uses.
    tx = {srv.comms.get(r["tid_tx"]) for r in recs}
    rx = {srv.comms.get(r["tid_rx"]) for r in recs}
    if mode in ("plain", "send", "msg", "rw"):
        assert tx == rx == {"uring_server"}, srv.comms
        assert len({r["tid_tx"] for r in recs} | {r["tid_rx"] for r in recs}) == 1, recs
    elif mode == "async":
        # named after the thread that made the ring; found among the server's
        # tasks (None: a worker that had exited again, idle)
        named = tx - {None}
        assert all(n.startswith("iou-wrk-") for n in named), srv.comms
        if not named:   # every sender gone by then: read by a worker, or sent by another thread
            for r in recs:
                assert r["comm"].startswith("iou-wrk-") or r["tid_tx"] != r["tid_rx"], r
    else:
        assert len(tx) == 1 and tx == rx and tx.pop().startswith("iou-sqp-"), srv.comms
    assert_no_prompt(tr)


# Not sqpoll: three SQPOLL threads (SCHED_OTHER, so as not to starve the
# machine) on this loaded 2-core machine read requests up to 24 ms after
# they arrived.
@pytest.mark.parametrize("mode", ("send", "async", "rw"))
def test_uring_concurrent_connections(procs, tracer, tmp_path, mode):
    """Three connections at once, each with its own thread and ring: every
    request of each is seen, with its own truth, tokens and send times; no
    buffer was taken for another's."""
    import threading
    srv = UringServer(procs, mode, str(tmp_path / ("truth-%s.ndjson" % mode)))
    tr = tracer("-p", srv.pid)
    sizes = (4, 6, 5)
    rs, errs = [], []

    def client():
        try:
            c = Client(srv.port)
            rs.extend(c.request(body=body(n)) for n in sizes)
            c.close()
        except Exception as e:  # surfaced below
            errs.append(e)

    ths = [threading.Thread(target=client) for _ in range(3)]
    for t in ths:
        t.start()
    for t in ths:
        t.join(30)
    assert not errs, errs
    tr.wait_requests(9, timeout_s=5)
    assert tr.stop() == 0, tr.stderr
    truth = {(t["rport"], t["conn_seq"]): t for t in srv.truth()}
    recs = {(conn_client_port(r), r["conn_seq"]): r for r in tr.requests()}
    assert len(truth) == 9 and sorted(recs) == sorted(truth), (sorted(recs), sorted(truth))
    # each client's responses in its own order: the connection's conn_seq
    resp = {}
    for r in rs:
        resp[(r.local_port, sum(k[0] == r.local_port for k in resp))] = r
    for key, rec in recs.items():
        n = sizes[key[1]]
        check_request(rec, truth[key], n, ttft_ms=TTFT_MS, itl_ms=ITL_MS, resp=resp[key])
        check_token_times(rec, truth[key], n)
        assert rec["pid"] == srv.pid
    counters = tr.summary()["counters"]
    assert counters["payload_args_missing"] == 0, counters
    assert counters["uring_payload_replaced"] == 0, counters
    assert_no_prompt(tr)


def test_uring_token_times_match_plain(procs, tracer, tmp_path):
    """The same server built on plain syscalls and on each io_uring way: the
    median of (the server's completion - ttftrace's send time) over all tokens
    is within TOKEN_TOL_MS of the plain build's."""
    med = {}
    for mode in MODES:
        srv, tr, rs, recs = run(procs, tracer, tmp_path, mode, sizes=(10, 10))
        truth = sorted((t for t in srv.truth() if t["rport"] == rs[0].local_port),
                       key=lambda t: t["conn_seq"])
        assert len(recs) == len(truth) == 2, (recs, tr.stderr)
        done = sorted(d for rec, t in zip(recs, truth) for _, d in token_offsets_ms(rec, t))
        med[mode] = done[len(done) // 2]
    print("median completion - ttftrace send, ms: %s" % med)
    for mode in MODES[1:]:
        assert abs(med[mode] - med["plain"]) <= TOKEN_TOL_MS, med


def test_uring_without_submit_tracepoint(procs, tracer, tmp_path):
    """A kernel without io_uring_submit_req (its BTF typedef renamed): a
    start-up warning that names it and what is lost; io_uring requests are
    then not recognised, and their payload-less reads and writes counted."""
    env = {"TTFTRACE_SYS_BTF": btf_without(tmp_path, "io_uring_submit_req")}
    srv, tr, rs, recs = run(procs, tracer, tmp_path, "send", env=env, sizes=(3, 3))
    assert "io_uring_submit_req not attached: socket I/O through io_uring is seen without " \
        "its payload" in tr.stderr, tr.stderr
    assert recs == []
    assert tr.summary()["counters"]["payload_args_missing"] >= 4
    assert_no_prompt(tr)


def test_uring_syscall_source_warns(procs, tracer, tmp_path):
    """The syscall source (kernels before 6.3) sees no io_uring I/O, and says so."""
    srv, tr, rs, recs = run(procs, tracer, tmp_path, "send", ("--net-source", "syscall"),
                            sizes=(3,))
    assert "not attached: reads and writes are taken at the syscall's return" in tr.stderr
    assert "(io_uring, in-kernel senders) is not seen" in tr.stderr, tr.stderr
    assert recs == []
