# SPDX-License-Identifier: GPL-2.0-only
"""--otlp URL against a local OTLP/HTTP receiver (Python's http.server).

The fixture server's requests (TTFT 120 ms, 4 tokens 10 ms apart) must arrive
as one SERVER span each, with ttft.* children laid back to back that cover
exactly the request's TTFT, GenAI attributes equal to ttftrace's NDJSON, and
the traced server as the resource. A receiver that answers 503 twice gets the
same batch a third time; with no receiver at all the requests are dropped,
counted in the summary, and ttftrace still exits within its flush bound.
"""
import gzip
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time

import pytest

from conftest import Client, conn_client_port, free_port, needs_root

pytestmark = needs_root

TTFT_MS, ITL_MS, TOKENS = 120, 10, 4


DECODER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "otlp_decode.js")
NPM_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".otlp-npm", "node_modules")


def decode_pb(kind, body):
    """The OTLP JSON form of a protobuf body, decoded by the official definitions."""
    if not os.path.isdir(os.path.join(NPM_DIR, "@opentelemetry", "otlp-transformer")):
        pytest.fail("tests/root/export/.otlp-npm is not installed: run tools/setup.sh")
    out = subprocess.run(["node", DECODER, kind], input=body, capture_output=True, check=True)
    return json.loads(out.stdout)


class Receiver:
    """OTLP/HTTP receiver on host (127.0.0.1); answers `statuses` in turn, then 200.

    Takes /v1/traces and /v1/metrics in protobuf (decoded with the official
    .proto definitions) or JSON, gzip'ed or not; keeps each body with the
    request's headers. It answers before decoding (on first use of
    .bodies or .metric_bodies), so that a decoder slowed by a loaded machine
    cannot make ttftrace's POST time out and be sent again."""

    def __init__(self, statuses=(), prefix="", host="127.0.0.1"):
        self.raw, self.statuses, self.posts = [], list(statuses), 0
        self.headers = []
        self._decoded = {}
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers["Content-Length"])
                body = self.rfile.read(n)
                outer.posts += 1
                outer.headers.append((self.path, dict(self.headers)))
                code = outer.statuses.pop(0) if outer.statuses else 200
                if code == 200:
                    kind = {prefix + "/v1/traces": "traces",
                            prefix + "/v1/metrics": "metrics"}[self.path]
                    outer.raw.append((kind, self.headers.get("Content-Encoding"),
                                      self.headers["Content-Type"], body))
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer((host, 0), H)
        self.base = "http://%s:%d%s" % (host, self.httpd.server_address[1], prefix)
        self.url = self.base + "/v1/traces"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def _decode(self, i):
        if i not in self._decoded:
            kind, coding, ctype, body = self.raw[i]
            if coding == "gzip":
                body = gzip.decompress(body)
            if ctype == "application/json":
                self._decoded[i] = json.loads(body)
            else:
                assert ctype == "application/x-protobuf", ctype
                self._decoded[i] = decode_pb(kind, body)
        return self._decoded[i]

    def _of(self, want):
        return [self._decode(i) for i, r in enumerate(list(self.raw)) if r[0] == want]

    @property
    def bodies(self):
        return self._of("traces")

    @property
    def metric_bodies(self):
        return self._of("metrics")

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

    def metrics(self, body=-1):
        """{(resource service.name, metric name): [data point]} of one metrics body."""
        out = {}
        for rm in self.metric_bodies[body]["resourceMetrics"]:
            res = attrs(rm["resource"]["attributes"])
            for sm in rm["scopeMetrics"]:
                for m in sm["metrics"]:
                    assert m["unit"] == "s"
                    assert m["histogram"]["aggregationTemporality"] == 2
                    out.setdefault((res["service.name"], m["name"]), []).extend(
                        m["histogram"]["dataPoints"])
        return out


def attrs(kvs):
    out = {}
    for kv in kvs:
        (typ, v), = kv["value"].items()
        if typ == "intValue":
            v = int(v)
        elif typ == "boolValue":
            pass
        elif typ == "arrayValue":
            v = [x["stringValue"] for x in v.get("values", [])]
        out[kv["key"]] = v
    return out


def drive(port, n):
    """n requests, each on its own connection: {client port: response}."""
    out = {}
    for _ in range(n):
        c = Client(port)
        out[c.local_port] = c.request(max_tokens=TOKENS)
        assert out[c.local_port].status == 200
        c.close()
    return out


@pytest.fixture
def receiver():
    made = []

    def make(statuses=(), prefix=""):
        made.append(Receiver(statuses, prefix))
        return made[-1]

    yield make
    for r in made:
        r.close()


def server_args():
    return ("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS), "--tokens", str(TOKENS),
            "--nodelay")


@pytest.mark.parametrize("protocol", ["http/protobuf", "http/json"])
def test_otlp_spans_shape_and_values(sse_server, tracer, receiver, protocol):
    """Protobuf (the default, decoded with the official definitions) and JSON
    carry the same spans; --otlp .../v1/traces sends metrics to .../v1/metrics."""
    n_req = 4
    rx = receiver()
    srv = sse_server(*server_args())
    tr = tracer("-p", srv.pid, "--otlp", rx.url, env={"OTEL_EXPORTER_OTLP_PROTOCOL": protocol})
    t0 = time.time_ns()
    resp = drive(srv.port, n_req)
    assert tr.stop() == 0, tr.stderr
    truth = {t["rport"]: t for t in srv.truth()}
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
        assert res["service.name"] == "sse_server"     # the traced server's comm
        assert res["telemetry.sdk.name"] == "ttftrace"
        assert res["telemetry.sdk.language"] == "c"
        assert res["telemetry.sdk.version"]
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
        # TTFT and TPOT are metrics in the conventions: ttftrace's own names on the span
        assert "gen_ai.server.time_to_first_token" not in a
        assert "gen_ai.server.time_per_output_token" not in a
        assert abs(a["ttftrace.ttft"] * 1e3 - rec["ttft_ms"]) < 0.001
        # between the server's own view (its read to its first token write, from
        # its log) and the client's (its send to the first token's arrival)
        port = conn_client_port(rec)
        server_ms = (truth[port]["t_token_ns"][0] - truth[port]["t_read_ns"]) / 1e6
        client_ms = (resp[port].t_first_token_ns - resp[port].t_sent_ns) / 1e6
        assert server_ms - 0.5 <= a["ttftrace.ttft"] * 1e3 <= client_ms + 0.5, \
            (a["ttftrace.ttft"], server_ms, client_ms)
        assert abs(a["ttftrace.tpot"] * 1e3 - rec["tpot_ms"]) < 0.001
        assert a["gen_ai.request.model"] == "m"
        assert a["url.scheme"] == "http"
        assert a["server.address"] == "127.0.0.1"
        assert a["http.route"] == "/v1/chat/completions"
        assert "error.type" not in a
        assert a["gen_ai.usage.output_tokens"] == TOKENS
        assert a["gen_ai.operation.name"] == "chat"
        assert a["http.request.method"] == "POST"
        assert a["url.path"] == "/v1/chat/completions"
        assert a["http.response.status_code"] == 200
        assert a["server.port"] == srv.port
        assert a["ttftrace.attribution"] == rec["attribution"]
        assert "stream" in a["ttftrace.flags"]
        assert a["ttftrace.flags"] == rec["flags"]     # the NDJSON flags of the request
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
    tr = tracer("-p", srv.pid, "--otlp", rx.url, env={"OTEL_METRICS_EXPORTER": "none"})
    drive(srv.port, 2)
    assert tr.stop() == 0, tr.stderr
    counters = tr.summary()["counters"]
    assert rx.posts == 3, rx.posts
    assert {path for path, _ in rx.headers} == {"/v1/traces"}
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


def hist_point(points, **want):
    """The one data point whose attributes include want (dots as __; None: absent)."""
    want = {k.replace("__", "."): v for k, v in want.items()}
    got = [p for p in points if all(attrs(p["attributes"]).get(k) == v for k, v in want.items())]
    assert len(got) == 1, (want, [attrs(p["attributes"]) for p in points])
    return got[0]


TTFT_BOUNDS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
               5.0, 7.5, 10.0]


def test_otlp_metrics_from_env_gzip_service_name_final_flush(sse_server, tracer, receiver):
    """OTEL_EXPORTER_OTLP_ENDPOINT alone turns the export on (base URL: the
    signal paths appended); gzip'ed protobuf; OTEL_SERVICE_NAME and
    OTEL_RESOURCE_ATTRIBUTES on the resource; the headers sent. With the
    default 60 s period the only metrics export is the final one at exit, and
    its histograms hold the fixture's known requests: 5 chat requests with
    TTFT 120 ms (the 0.1..0.25 bucket) and one 404 on /v1/responses, which
    is in the duration histogram with error.type 404 and nowhere else."""
    n_ok = 5
    rx = receiver(prefix="/otlp")
    srv = sse_server(*server_args())
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": rx.base + "/",
           "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
           "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=k%20ey,x-tenant=a",
           "OTEL_SERVICE_NAME": "llm-gateway",
           "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment.name=test,service.name=ignored"}
    tr = tracer("-p", srv.pid, env=env)
    drive(srv.port, n_ok)
    c = Client(srv.port)
    assert c.request(path="/v1/responses", body={"model": "m", "stream": True}).status == 404
    c.close()
    tr.wait_requests(n_ok + 1, timeout_s=5)
    time.sleep(0.3)
    assert rx.metric_bodies == [], "metrics before the period or the exit"
    assert tr.stop() == 0, tr.stderr
    recs = tr.requests()
    ok = [r for r in recs if r.get("status") == 200]
    assert len(ok) == n_ok and len(recs) == n_ok + 1
    counters = tr.summary()["counters"]
    assert counters["otlp_metric_exports"] == 1, counters
    assert counters["otlp_metric_exports_failed"] == 0

    assert len(rx.metric_bodies) == 1
    for path, h in rx.headers:
        assert path in ("/otlp/v1/traces", "/otlp/v1/metrics")
        assert h["Content-Encoding"] == "gzip"
        assert h["Content-Type"] == "application/x-protobuf"
        assert h["x-api-key"] == "k ey" and h["x-tenant"] == "a"
    for res, _ in rx.spans():
        assert res["service.name"] == "llm-gateway"
        assert res["deployment.environment.name"] == "test"
    m = rx.metrics()
    assert {k[0] for k in m} == {"llm-gateway"}
    ttft = hist_point(m[("llm-gateway", "gen_ai.server.time_to_first_token")],
                      gen_ai__operation__name="chat", gen_ai__request__model="m",
                      server__address="127.0.0.1", server__port=srv.port)
    assert len(m[("llm-gateway", "gen_ai.server.time_to_first_token")]) == 1, "404 has no TTFT"
    assert int(ttft["count"]) == n_ok
    assert abs(ttft["sum"] - sum(r["ttft_ms"] for r in ok) / 1e3) < 1e-5, ttft
    assert ttft["explicitBounds"] == TTFT_BOUNDS
    buckets = [int(b) for b in ttft["bucketCounts"]]
    assert len(buckets) == len(TTFT_BOUNDS) + 1
    assert buckets[TTFT_BOUNDS.index(0.25)] == n_ok, buckets   # (0.1, 0.25]
    assert abs(ttft["min"] - min(r["ttft_ms"] for r in ok) / 1e3) < 1e-6
    assert abs(ttft["max"] - max(r["ttft_ms"] for r in ok) / 1e3) < 1e-6
    tpot = hist_point(m[("llm-gateway", "gen_ai.server.time_per_output_token")])
    assert int(tpot["count"]) == n_ok
    assert abs(tpot["sum"] - sum(r["tpot_ms"] for r in ok) / 1e3) < 1e-5
    dur = m[("llm-gateway", "gen_ai.server.request.duration")]
    good = hist_point(dur, gen_ai__operation__name="chat", server__port=srv.port,
                      error__type=None)
    assert "error.type" not in attrs(good["attributes"])
    assert int(good["count"]) == n_ok
    assert abs(good["sum"] - sum(r["e2e_ms"] for r in ok) / 1e3) < 1e-5
    bad = hist_point(dur, error__type="404")
    assert int(bad["count"]) == 1
    assert int(ttft["startTimeUnixNano"]) < int(ttft["timeUnixNano"])


def test_otlp_metric_interval_and_json(sse_server, tracer, receiver):
    """OTEL_METRIC_EXPORT_INTERVAL=400 (ms): cumulative exports while tracing,
    over http/json for metrics only (OTEL_EXPORTER_OTLP_METRICS_PROTOCOL)."""
    rx = receiver()
    srv = sse_server(*server_args())
    tr = tracer("-p", srv.pid, "--otlp", rx.base,
                env={"OTEL_METRIC_EXPORT_INTERVAL": "400",
                     "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/json"})
    drive(srv.port, 2)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not rx.metric_bodies:
        time.sleep(0.1)
    assert rx.metric_bodies, "no periodic metrics export"
    drive(srv.port, 1)
    time.sleep(1.0)
    assert tr.stop() == 0, tr.stderr
    types = {path: h["Content-Type"] for path, h in rx.headers}
    assert types == {"/v1/traces": "application/x-protobuf", "/v1/metrics": "application/json"}
    counts = [int(hist_point(rx.metrics(i)[("sse_server", "gen_ai.server.time_to_first_token")])
                  ["count"]) for i in range(len(rx.metric_bodies))]
    assert len(counts) >= 3, counts
    assert counts == sorted(counts) and counts[-1] == 3, counts   # cumulative
    assert tr.summary()["counters"]["otlp_metric_exports"] == len(counts)


def test_otlp_traceparent_becomes_parent(sse_server, tracer, receiver):
    """A client's W3C traceparent: the request span joins the client's trace
    as a child of its span (flags: sampled, remote parent). An invalid one
    (upper-case hex) is ignored and counted."""
    trace_id, parent_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    rx = receiver()
    srv = sse_server(*server_args())
    tr = tracer("-p", srv.pid, "--otlp", rx.url, env={"OTEL_METRICS_EXPORTER": "none"})
    for tp in ("00-%s-%s-01" % (trace_id, parent_id),
               "00-%s-%s-01" % (trace_id.upper(), parent_id)):
        c = Client(srv.port)
        assert c.request(max_tokens=TOKENS, extra_headers="traceparent: %s\r\n" % tp
                         ).status == 200
        c.close()
    assert tr.stop() == 0, tr.stderr
    assert tr.summary()["counters"]["traceparent_invalid"] == 1
    spans = [sp for _, sp in rx.spans()]
    reqs = sorted((sp for sp in spans if sp["kind"] == 2),
                  key=lambda sp: attrs(sp["attributes"])["ttftrace.request.id"])
    assert len(reqs) == 2
    joined, alone = reqs
    assert joined["traceId"] == trace_id
    assert joined["parentSpanId"] == parent_id
    assert joined["flags"] == 0x301
    kids = [sp for sp in spans if sp.get("parentSpanId") == joined["spanId"]]
    assert kids and all(k["traceId"] == trace_id for k in kids)
    assert alone["traceId"] != trace_id and "parentSpanId" not in alone


@pytest.mark.parametrize("signal", ["traces", "metrics"])
def test_otlp_signal_endpoint_used_as_is(sse_server, tracer, receiver, signal):
    """OTEL_EXPORTER_OTLP_{TRACES,METRICS}_ENDPOINT is used as is (the
    receiver's path is under /custom, nothing appended) and turns on that
    signal only."""
    rx = receiver(prefix="/custom")
    srv = sse_server(*server_args())
    url = rx.base + "/v1/" + signal
    tr = tracer("-p", srv.pid, env={"OTEL_EXPORTER_OTLP_%s_ENDPOINT" % signal.upper(): url})
    drive(srv.port, 1)
    assert tr.stop() == 0, tr.stderr
    assert {path for path, _ in rx.headers} == {"/custom/v1/" + signal}
    counters = tr.summary()["counters"]
    if signal == "traces":
        assert len([sp for _, sp in rx.spans() if sp["kind"] == 2]) == 1
        assert "otlp_metric_exports" not in counters
    else:
        assert rx.bodies == [] and "otlp_requests_exported" not in counters
        assert counters["otlp_metric_exports"] == 1
        (p,) = rx.metrics()[("sse_server", "gen_ai.server.time_to_first_token")]
        assert int(p["count"]) == 1


@pytest.mark.parametrize("var,value,what", [
    ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "not supported"),
    ("OTEL_EXPORTER_OTLP_COMPRESSION", "br", "not a compression"),
    ("OTEL_EXPORTER_OTLP_HEADERS", "novalue", "not key=value"),
    ("OTEL_METRIC_EXPORT_INTERVAL", "-5", "not a period"),
    ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "ftp://x", "not an http"),
])
def test_otlp_bad_env_values(sse_server, tracer, var, value, what):
    srv = sse_server(*server_args())
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:%d" % free_port(), var: value}
    tr = tracer("-p", srv.pid, env=env, wait_attach=False)
    assert tr.wait_exit() == 2
    err = "".join(tr.stderr_lines)
    assert "Error: %s" % var in err and what in err, err
    assert "HINT: " in err, err
