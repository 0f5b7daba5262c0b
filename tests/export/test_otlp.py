# SPDX-License-Identifier: GPL-2.0-only
"""--otlp URL against a local OTLP/HTTP receiver (Python's http.server).

The fixture server's requests (TTFT 120 ms, 4 tokens 10 ms apart) must arrive
as one SERVER span each, with ttft.* children laid back to back that cover
exactly the request's TTFT, GenAI attributes equal to ttftrace's NDJSON, and
the traced server as the resource. A receiver that answers 503 twice gets the
same batch a third time; with no receiver at all the requests are dropped,
counted in the summary, and ttftrace still exits within its flush bound.
"""
import http.server
import json
import os
import re
import sys
import threading
import time

import pytest

from conftest import Client, free_port, needs_root

pytestmark = needs_root

TTFT_MS, ITL_MS, TOKENS = 120, 10, 4


class Receiver:
    """OTLP/HTTP receiver on 127.0.0.1; answers `statuses` in turn, then 200."""

    def __init__(self, statuses=()):
        self.bodies, self.statuses, self.posts = [], list(statuses), 0
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers["Content-Length"])
                body = self.rfile.read(n)
                outer.posts += 1
                code = outer.statuses.pop(0) if outer.statuses else 200
                if code == 200:
                    assert self.path == "/v1/traces"
                    assert self.headers["Content-Type"] == "application/json"
                    outer.bodies.append(json.loads(body))
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d/v1/traces" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def spans(self):
        """(resource attributes, span) of every span received."""
        out = []
        for b in self.bodies:
            for rs in b["resourceSpans"]:
                res = attrs(rs["resource"]["attributes"])
                for ss in rs["scopeSpans"]:
                    assert ss["scope"]["name"] == "ttftrace"
                    out += [(res, sp) for sp in ss["spans"]]
        return out


def attrs(kvs):
    out = {}
    for kv in kvs:
        (typ, v), = kv["value"].items()
        if typ == "intValue":
            v = int(v)
        elif typ == "arrayValue":
            v = [x["stringValue"] for x in v.get("values", [])]
        out[kv["key"]] = v
    return out


def drive(port, n):
    for _ in range(n):
        c = Client(port)
        assert c.request(max_tokens=TOKENS).status == 200
        c.close()


@pytest.fixture
def receiver():
    made = []

    def make(statuses=()):
        made.append(Receiver(statuses))
        return made[-1]

    yield make
    for r in made:
        r.close()


def server_args():
    return ("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS), "--tokens", str(TOKENS),
            "--nodelay")


def test_otlp_spans_shape_and_values(sse_server, tracer, receiver):
    n_req = 4
    rx = receiver()
    srv = sse_server(*server_args())
    tr = tracer("-p", srv.pid, "--otlp", rx.url)
    t0 = time.time_ns()
    drive(srv.port, n_req)
    assert tr.stop() == 0, tr.stderr
    t1 = time.time_ns()
    recs = {r["id"]: r for r in tr.requests()}
    counters = tr.summary()["counters"]
    assert len(recs) == n_req
    assert counters["otlp_requests_exported"] == n_req, counters
    assert counters["otlp_requests_dropped_queue_full"] == 0
    assert counters["otlp_requests_dropped_send_failed"] == 0
    assert counters["otlp_requests_dropped_at_exit"] == 0

    spans = rx.spans()
    parents = [(res, sp) for res, sp in spans if "parentSpanId" not in sp]
    assert len(parents) == n_req
    by_id = {}
    for res, sp in spans:
        assert re.fullmatch(r"[0-9a-f]{32}", sp["traceId"]), sp
        assert re.fullmatch(r"[0-9a-f]{16}", sp["spanId"]), sp
        assert isinstance(sp["startTimeUnixNano"], str) and isinstance(sp["endTimeUnixNano"], str)
        assert int(sp["startTimeUnixNano"]) <= int(sp["endTimeUnixNano"])
        assert res["service.name"] == "ttftrace"
        assert res["process.pid"] == srv.pid
        assert res["process.executable.name"] == "sse_server"
        assert res["host.name"]
        by_id[sp["spanId"]] = sp
    assert len(by_id) == len(spans), "span ids repeat"
    assert len({sp["traceId"] for _, sp in parents}) == n_req

    for _, p in parents:
        a = attrs(p["attributes"])
        rec = recs[a["ttftrace.request.id"]]
        assert p["name"] == "POST /v1/chat/completions"
        assert p["kind"] == 2
        start, end = int(p["startTimeUnixNano"]), int(p["endTimeUnixNano"])
        assert t0 - 10**9 < start < end < t1, (t0, start, end, t1)
        # the span covers first request byte .. last response byte (e2e)
        assert abs((end - start) / 1e6 - rec["e2e_ms"]) < 0.002
        assert abs(a["gen_ai.server.time_to_first_token"] * 1e3 - rec["ttft_ms"]) < 0.001
        assert abs(a["gen_ai.server.time_to_first_token"] - TTFT_MS / 1e3) < 3e-3
        assert abs(a["gen_ai.server.time_per_output_token"] * 1e3 - rec["tpot_ms"]) < 0.001
        assert a["gen_ai.usage.output_tokens"] == TOKENS
        assert a["gen_ai.operation.name"] == "chat"
        assert a["http.request.method"] == "POST"
        assert a["url.path"] == "/v1/chat/completions"
        assert a["http.response.status_code"] == 200
        assert a["server.port"] == srv.port
        assert a["ttftrace.attribution"] == rec["attribution"]
        assert set(a["ttftrace.flags"]) >= {"stream"}
        # children: back to back from the request's start, covering exactly its TTFT
        kids = sorted((sp for sp in by_id.values()
                       if sp.get("parentSpanId") == p["spanId"]),
                      key=lambda sp: int(sp["startTimeUnixNano"]))
        assert kids, "no stage spans"
        assert int(kids[0]["startTimeUnixNano"]) == start
        for k1, k2 in zip(kids, kids[1:]):
            assert k1["endTimeUnixNano"] == k2["startTimeUnixNano"]
        ttft_ns = int(kids[-1]["endTimeUnixNano"]) - start
        assert abs(ttft_ns / 1e6 - rec["ttft_ms"]) < 0.001, (ttft_ns, rec["ttft_ms"])
        stages = {k["name"][len("ttft."):]: (int(k["endTimeUnixNano"]) -
                                             int(k["startTimeUnixNano"])) / 1e6 for k in kids}
        assert all(k["kind"] == 1 for k in kids)
        for st, ms in stages.items():
            assert abs(ms - rec["stages_ms"][st]) < 0.001, (st, ms, rec["stages_ms"])
        assert set(stages) == {s for s, v in rec["stages_ms"].items()
                               if v is not None and s != "tokenize"}


def test_otlp_retries_after_503(sse_server, tracer, receiver):
    rx = receiver(statuses=(503, 503))
    srv = sse_server(*server_args())
    tr = tracer("-p", srv.pid, "--otlp", rx.url)
    drive(srv.port, 2)
    assert tr.stop() == 0, tr.stderr
    counters = tr.summary()["counters"]
    assert rx.posts == 3, rx.posts
    assert len([sp for _, sp in rx.spans() if "parentSpanId" not in sp]) == 2
    assert counters["otlp_posts_retried"] == 2
    assert counters["otlp_requests_exported"] == 2
    assert counters["otlp_requests_dropped_send_failed"] == 0


def test_otlp_collector_down_drops_counted(sse_server, tracer):
    srv = sse_server(*server_args())
    url = "http://127.0.0.1:%d/v1/traces" % free_port()   # nobody listens
    tr = tracer("-p", srv.pid, "--otlp", url)
    drive(srv.port, 3)
    t = time.monotonic()
    rc = tr.stop()
    took = time.monotonic() - t
    assert rc == 0, tr.stderr
    counters = tr.summary()["counters"]
    assert counters["otlp_requests_exported"] == 0
    assert (counters["otlp_requests_dropped_send_failed"] +
            counters["otlp_requests_dropped_at_exit"]) == 3, counters
    # flush bound OTLP_FLUSH_MS = 3 s, plus tracer teardown
    assert took < 8, "ttftrace took %.1f s to exit" % took


@pytest.fixture
def fixture_engine(procs, tmp_path):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "attrib"))
    from attrib_helpers import Engine, require_attribution
    require_attribution()
    return lambda *args: Engine(procs, args, str(tmp_path / "truth.ndjson"))


def test_otlp_prefill_step_spans_from_engine_uprobes(fixture_engine, tracer, receiver):
    """The fixture engine prefills a 300-token prompt in --chunk 128 steps
    (128, 128, 44 tokens, 20 us per token): the request's trace has one
    prefill.step span per step, at the engine's own times (its truth file),
    on the engine thread."""
    from attrib_helpers import PROFILE
    eng = fixture_engine("--prefill-us-per-token", "20", "--decode-us", "500", "--chunk", "128")
    rec = receiver()
    tr = tracer("-p", eng.pid, "--profile", PROFILE, "--otlp", rec.url)
    c = Client(eng.port)
    assert c.request(path="/v1/completions", body={
        "model": "m", "stream": True, "max_tokens": 3, "prompt_tokens": 300}).status == 200
    c.close()
    (truth,) = eng.wait_truth(1)
    tr.wait_requests(1, timeout_s=5)
    assert tr.stop() == 0, tr.stderr
    spans = [sp for _, sp in rec.spans()]
    (req,) = [sp for sp in spans if sp["kind"] == 2]
    steps = sorted((sp for sp in spans if sp["name"] == "prefill.step"),
                   key=lambda sp: int(sp["startTimeUnixNano"]))
    assert [attrs(sp["attributes"])["ttftrace.step.tokens"] for sp in steps] == [128, 128, 44]
    assert [attrs(sp["attributes"])["ttftrace.step.index"] for sp in steps] == [1, 2, 3]
    assert all(sp["parentSpanId"] == req["spanId"] for sp in steps)
    assert len({attrs(sp["attributes"])["thread.id"] for sp in steps}) == 1
    (out,) = tr.requests()
    assert out["prefill_steps"] == 3 and truth["prefill_steps"] == 3
    # the steps span the engine's prefill: span times are realtime, the truth is
    # CLOCK_MONOTONIC; compare durations, and each step's length with its tokens
    first, last = int(steps[0]["startTimeUnixNano"]), int(steps[-1]["endTimeUnixNano"])
    truth_ns = truth["t_prefill_end"] - truth["t_prefill_start"]
    # within 1 ms or 3% (the attribution tier's tolerance: a preemption between
    # the uprobe and the engine's own clock read lands in the difference)
    assert abs((last - first) - truth_ns) <= max(1e6, 0.03 * truth_ns), (last - first, truth_ns)
    for sp, tokens in zip(steps, (128, 128, 44)):
        dur_ms = (int(sp["endTimeUnixNano"]) - int(sp["startTimeUnixNano"])) / 1e6
        assert dur_ms >= tokens * 0.020, (dur_ms, tokens)
