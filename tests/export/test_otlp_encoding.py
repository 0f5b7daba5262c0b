# SPDX-License-Identifier: GPL-2.0-only
"""ttftrace's protobuf and JSON bodies carry the same content.

tests/drivers/otlp-encode writes the bodies of a fixed set of requests (spans
with stages, steps, hops and a client traceparent; a 503 over IPv6; an
unknown path) in both encodings. The protobuf is decoded with the official
opentelemetry-proto definitions (@opentelemetry/otlp-transformer's generated
protobufjs root) and must equal the JSON, which must also hold the values the
driver put in. No root needed."""
import json
import os
import subprocess

from test_otlp import attrs, decode_pb

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVER = os.path.join(ROOT, ".output", "bin", "otlp-encode")


def bodies(tmp_path):
    assert os.access(DRIVER, os.X_OK), "run `make` first"
    subprocess.run([DRIVER, str(tmp_path)], check=True)
    out = {}
    for kind in ("traces", "metrics"):
        with open(tmp_path / (kind + ".pb"), "rb") as f:
            pb = decode_pb(kind, f.read())
        with open(tmp_path / (kind + ".json")) as f:
            js = json.load(f)
        out[kind] = (pb, js)
    return out


def test_protobuf_equals_json(tmp_path):
    for kind, (pb, js) in bodies(tmp_path).items():
        assert pb == js, kind


def test_content(tmp_path):
    b = bodies(tmp_path)
    pb, mpb = b["traces"][0], b["metrics"][0]
    rss = pb["resourceSpans"]
    assert [attrs(r["resource"]["attributes"])["service.name"] for r in rss] == \
        ["vllm", "llama-server"]
    spans = {sp["name"]: sp for r in rss for ss in r["scopeSpans"] for sp in ss["spans"]}
    chat = spans["POST /v1/chat/completions"]
    assert chat["traceId"] == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert chat["parentSpanId"] == "00f067aa0ba902b7"
    assert chat["flags"] == 0x301
    assert chat["startTimeUnixNano"] == "1700000001000000000"
    a = attrs(chat["attributes"])
    assert a["ttftrace.tpot"] == 0.0250000005
    assert a["server.address"] == "10.1.2.3"
    assert a["ttftrace.tail_causes"] == ["itl #3 41.200 ms: prefill of request 12"]
    assert attrs(spans["hop.upstream"]["attributes"])["server.port"] == 8000
    err = spans["POST /v1/completions"]
    assert err["status"] == {"code": 2, "message": "HTTP server error"}
    ea = attrs(err["attributes"])
    assert ea["error.type"] == "503" and ea["server.address"] == "::1"
    assert ea["gen_ai.usage.input_tokens"] == 77
    assert "POST" in spans and "POST /admin" not in spans
    n_steps = sum(sp["name"] == "prefill.step" for r in rss for ss in r["scopeSpans"]
                  for sp in ss["spans"])
    assert n_steps == 2

    names = {}
    for rm in mpb["resourceMetrics"]:
        svc = attrs(rm["resource"]["attributes"])["service.name"]
        for m in rm["scopeMetrics"][0]["metrics"]:
            names[(svc, m["name"])] = m["histogram"]["dataPoints"]
    # the unknown path is in no metric; the 503 only in the duration
    assert sorted(names) == [("llama-server", "gen_ai.server.request.duration"),
                             ("vllm", "gen_ai.server.request.duration"),
                             ("vllm", "gen_ai.server.time_per_output_token"),
                             ("vllm", "gen_ai.server.time_to_first_token")]
    (p,) = names[("vllm", "gen_ai.server.time_to_first_token")]
    assert p["count"] == "1" and p["sum"] == 0.15
    assert p["bucketCounts"][8] == "1" and sum(map(int, p["bucketCounts"])) == 1
    (p,) = names[("llama-server", "gen_ai.server.request.duration")]
    assert attrs(p["attributes"]) == {"gen_ai.operation.name": "text_completion",
                                      "gen_ai.request.model": "llama-3-8b",
                                      "server.address": "::1", "server.port": 8000,
                                      "error.type": "503"}
