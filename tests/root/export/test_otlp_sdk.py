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
import os
import random
import re
import socket
import struct
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import ROOT, TTFTRACE, Client, free_port, needs_root
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
