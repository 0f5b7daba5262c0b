# SPDX-License-Identifier: GPL-2.0-only
"""The OTLP export behaves like an OpenTelemetry SDK's exporter (docs/otel.md O9).

Each test drives the fixture server (or a tiny Python server for a 5xx)
and reads what a local OTLP/HTTP receiver got, decoded with the official
.proto definitions (otlp_decode.js, no ttftrace code): which traces the
OTEL_TRACES_SAMPLER samplers let through (decided here from the trace ids
the test chose, with the spec's rule, not ttftrace's), the tracestate on
every span, the User-Agent, the ERROR status, gen_ai.provider.name, and
what ttftrace says on stderr at start-up and while the collector is down.
"""
import random
import re
import socket
import struct
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import TTFTRACE, Client, free_port, needs_root
from test_otlp import Receiver, attrs

pytestmark = needs_root

FAST = ("--ttft-ms", "1", "--itl-ms", "1", "--tokens", "2", "--nodelay")
RATIO = 0.25
# the rejection threshold of the spec's TraceIdRatioBased: sampled when R >= T,
# R the 7 rightmost bytes (56 bits) of the trace id
THRESHOLD = 2**56 - round(RATIO * 2**56)
NO_METRICS = {"OTEL_METRICS_EXPORTER": "none"}


@pytest.fixture
def receiver():
    made = []

    def make(*a, **kw):
        made.append(Receiver(*a, **kw))
        return made[-1]

    yield make
    for r in made:
        r.close()


def version():
    out = subprocess.run([TTFTRACE, "--version"], capture_output=True, text=True, check=True)
    return out.stdout.split()[1]


def randomness(trace_id_hex):
    return int(trace_id_hex[-14:], 16)


def trace_id(rng, sampled_by_ratio):
    """A random trace id whose 56-bit randomness lies on the chosen side of THRESHOLD."""
    while True:
        t = "%032x" % rng.getrandbits(128)
        if (randomness(t) >= THRESHOLD) == sampled_by_ratio and int(t, 16):
            return t


def send(port, headers="", n=1):
    for _ in range(n):
        c = Client(port)
        assert c.request(max_tokens=2, extra_headers=headers).status == 200
        c.close()


def server_spans(rx):
    return [sp for _, sp in rx.spans() if sp["kind"] == 2]


# parent sampled?, ratio says sampled? -> exported, per sampler; roots: ratio or all/none
CASES = [(True, True), (True, False), (False, True), (False, False)]
EXPECT = {
    "always_on": (lambda ps, rs: True, "all"),
    "always_off": (lambda ps, rs: False, "none"),
    "traceidratio": (lambda ps, rs: rs, "ratio"),
    "parentbased_always_on": (lambda ps, rs: ps, "all"),
    "parentbased_always_off": (lambda ps, rs: ps, "none"),
    "parentbased_traceidratio": (lambda ps, rs: ps, "ratio"),
}


@pytest.mark.parametrize("sampler", sorted(EXPECT))
def test_sampler(sse_server, tracer, receiver, sampler):
    """Requests with a traceparent (sampled flag 01 or 00; a trace id whose
    randomness is above or below the ratio's threshold, 3 of each kind) and
    12 without: exactly the expected ones arrive, the others are counted as
    sampled out, and metrics still count every request."""
    rng = random.Random(sampler)
    rule, roots = EXPECT[sampler]
    rx = receiver()
    srv = sse_server(*FAST)
    tr = tracer("-p", srv.pid, "--otlp", rx.base,
                env={"OTEL_TRACES_SAMPLER": sampler, "OTEL_TRACES_SAMPLER_ARG": str(RATIO)})
    want = set()
    sent = 0
    for parent_sampled, ratio_sampled in CASES:
        for _ in range(3):
            t = trace_id(rng, ratio_sampled)
            send(srv.port, "traceparent: 00-%s-%016x-%s\r\n"
                 % (t, rng.getrandbits(63) | 1, "01" if parent_sampled else "00"))
            sent += 1
            if rule(parent_sampled, ratio_sampled):
                want.add(t)
    n_roots = 12
    send(srv.port, n=n_roots)
    sent += n_roots
    tr.wait_requests(sent, timeout_s=10)
    assert tr.stop() == 0, tr.stderr
    counters = tr.summary()["counters"]
    got = [sp["traceId"] for sp in server_spans(rx)]
    assert len(got) == len(set(got))
    joined = {t for t in got if t in want or attrs_parent(rx, t)}
    assert joined == want, (sampler, sorted(joined ^ want))
    got_roots = [t for t in got if t not in joined]
    if roots == "all":
        assert len(got_roots) == n_roots
    elif roots == "none":
        assert got_roots == []
    else:
        # each root let through has randomness at or above the threshold
        assert all(randomness(t) >= THRESHOLD for t in got_roots), got_roots
    assert counters["otlp_requests_exported"] == len(got)
    assert counters["otlp_requests_sampled_out"] == sent - len(got), counters
    (p,) = rx.metrics()[("sse_server", "gen_ai.server.time_to_first_token")]
    assert int(p["count"]) == sent    # sampling is for traces only
    desc = "sampler %s" % sampler + (" %g" % RATIO if roots == "ratio" else "")
    assert desc in tr.stderr, tr.stderr


def attrs_parent(rx, trace):
    """The trace's SERVER span has a remote parent (it came with a traceparent)."""
    return any(sp["traceId"] == trace and "parentSpanId" in sp for sp in server_spans(rx))


def test_traceidratio_roots_binomial(sse_server, tracer, receiver):
    """200 requests without a traceparent under parentbased_traceidratio 0.25:
    the count exported lies within 4.5 standard deviations of 50 (a false
    failure about once in 150,000 runs), and every exported trace id's
    randomness is at or above the threshold."""
    n = 200
    rx = receiver()
    srv = sse_server(*FAST)
    tr = tracer("-p", srv.pid, "--otlp", rx.url,
                env=dict(NO_METRICS, OTEL_TRACES_SAMPLER="parentbased_traceidratio",
                         OTEL_TRACES_SAMPLER_ARG=str(RATIO)))
    send(srv.port, n=n)
    tr.wait_requests(n, timeout_s=20)
    assert tr.stop() == 0, tr.stderr
    got = [sp["traceId"] for sp in server_spans(rx)]
    mean, sd = n * RATIO, (n * RATIO * (1 - RATIO)) ** 0.5
    assert abs(len(got) - mean) <= 4.5 * sd, len(got)
    assert all(randomness(t) >= THRESHOLD for t in got)
    assert tr.summary()["counters"]["otlp_requests_sampled_out"] == n - len(got)


def test_tracestate_passed_on_and_explicit_randomness(sse_server, tracer, receiver):
    """Two tracestate headers (the W3C example's members) make one list on
    every span of the trace; with an invalid traceparent the tracestate is
    not used (W3C). Under traceidratio an `ot=rv:` value in the tracestate
    decides instead of the trace id (explicit randomness)."""
    rx = receiver()
    srv = sse_server(*FAST)
    tr = tracer("-p", srv.pid, "--otlp", rx.url,
                env=dict(NO_METRICS, OTEL_TRACES_SAMPLER="traceidratio",
                         OTEL_TRACES_SAMPLER_ARG=str(RATIO)))
    rng = random.Random(7)
    keep, low_rv, high_rv = trace_id(rng, True), trace_id(rng, False), trace_id(rng, True)
    tp = "traceparent: 00-%s-00f067aa0ba902b7-01\r\n"
    send(srv.port, tp % keep + "tracestate: congo=t61rcWkgMzE\r\n"
         "tracestate: rojo=00f067aa0ba902b7\r\n")
    # invalid traceparent (upper case): a root span of its own, no trace_state
    send(srv.port, (tp % keep.upper()) + "tracestate: congo=ignored\r\n")
    # rv above the threshold keeps a trace whose id is below it; rv 0 drops one above
    send(srv.port, tp % low_rv + "tracestate: other=x,ot=th:0;rv:ffffffffffffff\r\n")
    send(srv.port, tp % high_rv + "tracestate: ot=rv:00000000000000\r\n")
    tr.wait_requests(4, timeout_s=10)
    assert tr.stop() == 0, tr.stderr
    spans = [sp for _, sp in rx.spans()]
    by_trace = {}
    for sp in spans:
        by_trace.setdefault(sp["traceId"], []).append(sp)
    assert len(by_trace[keep]) > 1      # the request span and its stage children
    for sp in by_trace[keep]:
        assert sp["traceState"] == "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7", sp
    others = [t for t in by_trace if t not in (keep, low_rv, high_rv)]
    for t in others:
        # the invalid traceparent's request: a root of ours, sampled or not by its id
        assert all(not sp.get("traceState") for sp in by_trace[t])
    assert low_rv in by_trace, "explicit rv ff.. did not keep the trace"
    assert by_trace[low_rv][0]["traceState"] == "other=x,ot=th:0;rv:ffffffffffffff"
    assert high_rv not in by_trace, "explicit rv 00.. did not drop the trace"


def test_startup_lines_user_agent_unknown_sampler(sse_server, tracer, receiver):
    """At start-up ttftrace says where each signal goes, how, and with which
    sampler; an unknown OTEL_TRACES_SAMPLER is warned about (with the value)
    and the default parentbased_always_on used, as the SDK environment spec
    asks. Every POST carries User-Agent ttftrace/VERSION."""
    rx = receiver()
    srv = sse_server(*FAST)
    tr = tracer("-p", srv.pid, "--otlp", rx.base,
                env={"OTEL_TRACES_SAMPLER": "sometimes", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
                     "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/json"})
    send(srv.port, n=2)
    tr.wait_requests(2, timeout_s=10)
    assert tr.stop() == 0, tr.stderr
    err = tr.stderr
    assert "Warning: OTEL_TRACES_SAMPLER 'sometimes' is not a sampler ttftrace knows: " \
        "using parentbased_always_on" in err, err
    assert "otlp: traces to %s/v1/traces (http/protobuf, gzip, sampler parentbased_always_on)" \
        % rx.base in err, err
    assert "otlp: metrics to %s/v1/metrics (http/json, gzip, every 60000 ms and at exit)" \
        % rx.base in err, err
    # the start-up lines come before tracing starts
    assert err.index("otlp: traces to") < err.index("Hit Ctrl-C to end")
    assert {p for p, _ in rx.headers} == {"/v1/traces", "/v1/metrics"}
    assert {h["User-Agent"] for _, h in rx.headers} == {"ttftrace/" + version()}
    assert len(server_spans(rx)) == 2
    assert "OTLP export to" not in err


def test_collector_down_warns_at_most_every_10s(sse_server, tracer):
    """Nobody listens at the endpoint: the first failed post is on stderr
    within seconds, later ones at most once per 10 s, each line with what
    failed since the last; the lines' dropped requests add up to every
    request sent (the last line at exit), as the summary's counters do."""
    srv = sse_server(*FAST)
    url = "http://127.0.0.1:%d/v1/traces" % free_port()
    tr = tracer("-p", srv.pid, "--otlp", url, env=NO_METRICS)
    seen = []       # (arrival time, line) of each warning

    def poll():
        lines = [l for l in tr.stderr_lines if "OTLP export to" in l]
        for l in lines[len(seen):]:
            seen.append((time.monotonic(), l))

    t0 = time.monotonic()
    sent = 0
    while time.monotonic() - t0 < 13:
        send(srv.port)
        sent += 1
        poll()
        time.sleep(0.25)
    poll()
    assert tr.stop() == 0, tr.stderr
    poll()
    counters = tr.summary()["counters"]
    assert counters["otlp_requests_exported"] == 0
    lost = (counters["otlp_requests_dropped_send_failed"] + counters["otlp_requests_dropped_at_exit"]
            + counters["otlp_requests_dropped_queue_full"])
    assert lost == sent, (counters, sent)
    pat = re.compile(r"Warning: OTLP export to %s: (.+); since the last warning: (\d+) posts "
                     r"failed, (\d+) requests dropped, 0 metric exports failed" % re.escape(url))
    parsed = [pat.search(l) for _, l in seen]
    assert all(parsed), seen
    assert "Couldn't connect" in parsed[0].group(1), seen[0]
    # the first within the first batch's wait (1 s) and its post, well under 5 s
    assert seen[0][0] - t0 < 5, seen
    live = [t for t, l in seen if "retrying" in l]
    assert 2 <= len(live) <= 2, seen           # t ~1 s and ~11 s of a 13 s run
    assert all(b - a >= 9.5 for a, b in zip(live, live[1:])), seen
    assert sum(int(m.group(3)) for m in parsed) == sent, (seen, sent)
    assert sum(int(m.group(2)) for m in parsed) >= 5     # each batch: 5 tries


def abort_request(port):
    """A streaming request the client resets after its first event."""
    s = socket.create_connection(("127.0.0.1", port))
    body = b'{"model":"m","stream":true,"max_tokens":200,"messages":[]}'
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
              b"application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    got = b""
    while b"data:" not in got:
        got += s.recv(65536)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


ERROR_SERVER = textwrap.dedent("""
    import http.server, sys
    with open("/proc/self/comm", "w") as f:
        f.write("llama-server")     # as llama.cpp's server names itself
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            body = b'{"error":{"code":503,"message":"loading model"}}'
            self.send_response(503)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *a):
            pass
    srv = http.server.HTTPServer(("127.0.0.1", 0), H)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()
""")


def test_error_status_and_provider(sse_server, tracer, receiver, procs):
    """Status ERROR with error.type kept: a request the client aborted
    (aborted) and a 503 (503); a 404 is the client's error and leaves the
    status unset. gen_ai.provider.name: guessed from the process name
    (llama-server: llama.cpp), and the one given in OTEL_RESOURCE_ATTRIBUTES
    wins, on spans and metric points, and is not a resource attribute."""
    rx = receiver()
    srv = sse_server("--ttft-ms", "5", "--itl-ms", "20", "--tokens", "200", "--nodelay")
    py = procs.add(subprocess.Popen([sys.executable, "-c", ERROR_SERVER],
                                    stdout=subprocess.PIPE, text=True))
    py_port = int(py.stdout.readline())
    # one target per tracer: the fixture server first, then the 503 server
    tr = tracer("-p", srv.pid, "--otlp", rx.base)
    abort_request(srv.port)
    c = Client(srv.port)
    assert c.request(path="/v1/responses", body={"model": "m", "stream": True}).status == 404
    c.close()
    tr.wait_requests(2, timeout_s=10)
    assert tr.stop() == 0, tr.stderr
    tr = tracer("-p", py.pid, "--otlp", rx.base)
    c = Client(py_port)
    assert c.request(max_tokens=2).status == 503
    c.close()
    tr.wait_requests(1, timeout_s=10)
    assert tr.stop() == 0, tr.stderr
    spans = {}
    for res, sp in rx.spans():
        if sp["kind"] == 2:
            spans[res["process.executable.name"], attrs(sp["attributes"]).get("error.type")] = \
                (res, sp)
    assert set(spans) == {("sse_server", "aborted"), ("llama-server", "503"),
                          ("sse_server", "404")}, set(spans)
    _, ab = spans["sse_server", "aborted"]
    assert ab["status"]["code"] == 2, ab
    assert "aborted" in attrs(ab["attributes"])["ttftrace.flags"]
    res, e503 = spans["llama-server", "503"]
    assert e503["status"]["code"] == 2
    assert attrs(e503["attributes"])["gen_ai.provider.name"] == "llama.cpp"
    assert "gen_ai.provider.name" not in res
    _, e404 = spans["sse_server", "404"]
    assert e404.get("status", {}).get("code", 0) == 0, e404
    # sse_server names no engine: no guess
    assert "gen_ai.provider.name" not in attrs(ab["attributes"])


def test_provider_from_resource_attributes(sse_server, tracer, receiver):
    rx = receiver()
    srv = sse_server(*FAST)
    tr = tracer("-p", srv.pid, "--otlp", rx.base,
                env={"OTEL_RESOURCE_ATTRIBUTES": "gen_ai.provider.name=acme.llm,team=a"})
    send(srv.port)
    tr.wait_requests(1, timeout_s=10)
    assert tr.stop() == 0, tr.stderr
    ((res, sp),) = [(r, s) for r, s in rx.spans() if s["kind"] == 2]
    assert attrs(sp["attributes"])["gen_ai.provider.name"] == "acme.llm"
    assert "gen_ai.provider.name" not in res and res["team"] == "a"
    (p,) = rx.metrics()[("sse_server", "gen_ai.server.time_to_first_token")]
    assert attrs(p["attributes"])["gen_ai.provider.name"] == "acme.llm"
