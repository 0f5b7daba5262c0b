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

import pytest

from test_otlp import attrs, decode_pb

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
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
    # the provider named by the process: the driver's comms vllm and llama-server
    assert a["gen_ai.provider.name"] == "vllm"
    assert attrs(spans["hop.upstream"]["attributes"])["server.port"] == 8000
    err = spans["POST /v1/completions"]
    assert err["status"] == {"code": 2, "message": "HTTP server error"}
    ea = attrs(err["attributes"])
    assert ea["error.type"] == "503" and ea["server.address"] == "::1"
    assert ea["gen_ai.usage.input_tokens"] == 77
    assert ea["gen_ai.provider.name"] == "llama.cpp"
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
                                      "gen_ai.provider.name": "llama.cpp",
                                      "gen_ai.request.model": "llama-3-8b",
                                      "server.address": "::1", "server.port": 8000,
                                      "error.type": "503"}


DATA = os.path.join(ROOT, "tests", "root", "replay", "data")
TTFTRACE = os.path.join(ROOT, "ttftrace")
PROC_STAGES = {"frontend": ("read_wait", "frontend", "emit"), "engine": ("queue", "prefill"),
               "output": ("detokenize",)}


def rounded(x):
    """x with every float to 12 significant digits."""
    if isinstance(x, dict):
        return {k: rounded(v) for k, v in x.items()}
    if isinstance(x, list):
        return [rounded(v) for v in x]
    return float("%.12g" % x) if isinstance(x, float) else x


@pytest.mark.parametrize("name", ["vllm_split", "sglang_split"])
def test_message_hop_spans_from_replay(tmp_path, name):
    """The vLLM-shaped recording (frontend -> engine over zmq) and the
    SGLang-shaped one (-> scheduler -> detokenizer ->) replayed with
    --otlp-out (JSON, and protobuf decoded by the official definitions to
    the same): per request, hop.frontend over the TTFT in the frontend's
    resource, a child of the request span, and for each other process a
    CONSUMER span (hop.engine, hop.output) in that process's own resource
    (its pid and comm), a child of hop.frontend, over its stages, which are
    its attributes: all as in NDJSON."""
    out, pb = tmp_path / "o.json", tmp_path / "o.pb"
    for f in (out, pb):
        subprocess.run([TTFTRACE, "replay", os.path.join(DATA, name + ".rec"), "-q", "-o",
                        os.devnull, "--otlp-out", str(f)], check=True, timeout=60)
    body = json.loads(out.read_text())
    # the protobuf, decoded by the official definitions, holds the same (ids from the
    # recording; JSON writes doubles to 15 significant digits)
    assert rounded(decode_pb("traces", pb.read_bytes())) == rounded(body)
    recs = [json.loads(l) for l in open(os.path.join(DATA, name + ".ndjson"))
            if '"type":"request"' in l]
    procs = ["frontend", "engine", "output"][:len(recs[0]["hops"])]
    pids = [h["pid"] for h in recs[0]["hops"]]
    res = {}
    for rs in body["resourceSpans"]:
        ra = attrs(rs["resource"]["attributes"])
        res[ra["process.pid"]] = (ra, [sp for ss in rs["scopeSpans"] for sp in ss["spans"]])
    assert sorted(res) == sorted(pids)
    fe_spans = res[pids[0]][1]
    by_id = {sp["spanId"]: sp for sp in fe_spans}
    reqs = {attrs(sp["attributes"])["ttftrace.request.id"]: sp for sp in fe_spans
            if sp["kind"] == 2}
    assert len(reqs) == len(recs)
    off = None
    for k in range(1, len(procs)):
        ra, spans = res[pids[k]]
        assert ra["process.executable.name"] == recs[0]["hops"][k]["comm"] == "python3"
        assert {sp["name"] for sp in spans} == {"hop." + procs[k]} and len(spans) == len(recs)
        for sp in spans:
            fe = by_id[sp["parentSpanId"]]
            assert fe["name"] == "hop.frontend" and fe["traceId"] == sp["traceId"]
            req = by_id[fe["parentSpanId"]]
            rid = attrs(req["attributes"])["ttftrace.request.id"]
            r = [x for x in recs if x["id"] == rid][0]
            assert reqs[rid] is req and sp["kind"] == 5 and fe["kind"] == 1
            st, order = r["hop_stages_ms"], list(r["hop_stages_ms"])
            start = int(req["startTimeUnixNano"])
            off = start - r["t_arrival_ns"] if off is None else off
            assert start - r["t_arrival_ns"] == off     # one clock offset for all
            assert int(fe["startTimeUnixNano"]) == start
            assert int(fe["endTimeUnixNano"]) - start == r["t_first_token_ns"] - r["t_arrival_ns"]
            first = min(order.index(x) for x in PROC_STAGES[procs[k]])
            last = max(order.index(x) for x in PROC_STAGES[procs[k]])
            e0 = (int(sp["startTimeUnixNano"]) - start) / 1e6
            e1 = (int(sp["endTimeUnixNano"]) - start) / 1e6
            assert abs(e0 - sum(st[x] for x in order[:first])) <= 0.004
            assert abs(e1 - sum(st[x] for x in order[:last + 1])) <= 0.006
            sa = attrs(sp["attributes"])
            assert sa["process.pid"] == pids[k] and sa["ttftrace.hop"] == procs[k]
            for x in PROC_STAGES[procs[k]]:
                assert abs(sa["ttftrace.hop.stage." + x] * 1e3 - st[x]) <= 0.001, (x, sa)
            fa = attrs(fe["attributes"])
            assert fa["ttftrace.hop.join"] == "exact" and fa["process.pid"] == pids[0]
            assert abs(fa["ttftrace.hop.stage.emit"] * 1e3 - st["emit"]) <= 0.001
