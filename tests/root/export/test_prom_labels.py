# SPDX-License-Identifier: GPL-2.0-only
"""Labels no client controls: a storm of made-up model names against the SSE
fixture, read back from ttftrace's /metrics.

The truth is the client's own: which names it sent, on which path (the
fixture answers 404 off its API paths and streams any model on them), and
the server's stages in ttftrace's NDJSON. Names on 404s make no label value
and no series but one label set for all of them (route "unknown", model
"other"); a real model served after them gets its own label. Names on 200s
are served requests: the first PROM_MAX_MODELS (16) distinct names get
labels, the rest go to "other", so the scrape stays within 16 + 2 label sets
however many names come. Only stages the run saw have series (no `copy`
without a CUPTI collector).
"""
import re
import time

from conftest import Client, free_port, needs_root

import test_prometheus as tp

MAX_MODELS = 16     # user/export/prom/prom.h PROM_MAX_MODELS


def scrape(mport):
    return tp.http_get("http://127.0.0.1:%d/metrics" % mport)[2]


def samples(text):
    return [l for l in text.splitlines() if l and not l.startswith("#")]


def models(text):
    return set(re.findall(r'model="([^"]*)"', text))


def label_sets(text):
    return set(re.findall(r'^ttftrace_output_tokens_total\{([^}]*)\}', text, re.M))


def send(port, model, path="/v1/chat/completions", n=1):
    for _ in range(n):
        c = Client(port)
        body = {"model": model, "stream": True, "max_tokens": 2,
                "messages": [{"role": "user", "content": "hi"}]}
        r = c.request(path=path, body=body)
        c.close()
        assert r.status == (200 if path == "/v1/chat/completions" else 404), r.status


def wait_total(mport, n):
    deadline = time.monotonic() + 10
    while True:
        text = scrape(mport)
        got = sum(float(l.rsplit(" ", 1)[1]) for l in samples(text)
                  if l.startswith("ttftrace_requests_total{"))
        if got == n:
            return text
        assert time.monotonic() < deadline, (got, n)
        time.sleep(0.1)


@needs_root
def test_model_storm_keeps_series_bounded(sse_server, tracer):
    srv = sse_server("--ttft-ms", "5", "--itl-ms", "1", "--tokens", "2", "--nodelay")
    mport = free_port()
    tr = tracer("-p", srv.pid, "--metrics", str(mport))
    send(srv.port, "m")
    base = wait_total(mport, 1)
    per_set = len(samples(base)) - len([l for l in samples(base) if "model=" not in l])
    assert label_sets(base) == {'route="chat",comm="sse_server",model="m"'}

    # 40 404s, each naming a model no one serves
    for i in range(40):
        send(srv.port, "scan-%d" % i, path="/v1/nope")
    text = wait_total(mport, 41)
    assert not [m for m in models(text) if m.startswith("scan-")], models(text)
    assert label_sets(text) == {'route="chat",comm="sse_server",model="m"',
                                'route="unknown",comm="sse_server",model="other"'}
    after_404 = len(samples(text))
    assert after_404 <= len(samples(base)) + per_set, (len(samples(base)), after_404)
    assert 'ttftrace_requests_total{route="unknown",comm="sse_server",model="other",' \
           'status_class="4xx",outcome="error"} 40' in text
    # a real model served now gets its own label
    send(srv.port, "llama-3-real")
    text = wait_total(mport, 42)
    assert 'ttftrace_ttft_seconds_count{route="chat",comm="sse_server",model="llama-3-real"} 1' \
        in text, models(text)

    # 40 names on 200s: served requests, so each may name a real model; the
    # first 16 distinct keep labels, then "other", whatever the storm's size
    for i in range(40):
        send(srv.port, "made-up-%d" % i)
    text = wait_total(mport, 82)
    named = models(text) - {"other", "unknown"}
    assert len(named) == MAX_MODELS, sorted(named)
    assert {"m", "llama-3-real"} <= named
    assert len(label_sets(text)) == MAX_MODELS + 2, sorted(label_sets(text))
    assert len(samples(text)) <= len(samples(base)) + (MAX_MODELS + 1) * per_set
    assert 'ttftrace_ttft_seconds_count{route="chat",comm="sse_server",model="other"} %d' \
        % (40 - (MAX_MODELS - 2)) in text

    # only the stages this run had (no engine profile, no CUPTI): no copy series
    assert tr.stop() == 0, tr.stderr
    seen = {st for r in tr.requests() for st, ms in (r.get("stages_ms") or {}).items()
            if ms is not None and st != "tokenize"}
    exported = set(re.findall(r'^ttftrace_ttft_stage_seconds_count\{[^}]*stage="(\w+)"', text,
                              re.M))
    assert exported == seen, (exported, seen)
    assert "copy" not in exported and "prefill" not in exported, exported
    print("series: %d at 1 request, %d after 40 404s, %d after 40 made-up 200s (%d per label "
          "set)" % (len(samples(base)), after_404, len(samples(text)), per_set))
