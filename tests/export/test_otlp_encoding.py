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


VLLM_SPLIT = os.path.join(ROOT, "tests", "replay", "data", "vllm_split")
TTFTRACE = os.path.join(ROOT, "ttftrace")


def test_message_hop_spans_from_replay(tmp_path):
    """The vLLM-shaped recording (frontend -> engine over zmq) replayed with
    --otlp-out (JSON, and protobuf decoded by the official definitions to
    the same): per request, hop.frontend over the TTFT in the frontend's
    resource, a child of the request span, and hop.engine (CONSUMER) in the
    engine process's own resource (its pid and comm), a child of
    hop.frontend, from the engine's read of the request to its first output
    message, with queue and prefill as attributes: all as in NDJSON."""
    out, pb = tmp_path / "o.json", tmp_path / "o.pb"
    for f in (out, pb):
        subprocess.run([TTFTRACE, "replay", VLLM_SPLIT + ".rec", "-q", "-o", os.devnull,
                        "--otlp-out", str(f)], check=True, timeout=60)
    body = json.loads(out.read_text())
    # the protobuf, decoded by the official definitions, holds the same (ids from the recording)
    assert decode_pb("traces", pb.read_bytes()) == body
    recs = [json.loads(l) for l in open(VLLM_SPLIT + ".ndjson") if '"type":"request"' in l]
    fe_pid, eng_pid = recs[0]["hops"][0]["pid"], recs[0]["hops"][1]["pid"]
    res = {}
    for rs in body["resourceSpans"]:
        ra = attrs(rs["resource"]["attributes"])
        res[ra["process.pid"]] = (ra, [sp for ss in rs["scopeSpans"] for sp in ss["spans"]])
    assert sorted(res) == sorted([fe_pid, eng_pid])
    assert res[eng_pid][0]["process.executable.name"] == recs[0]["hops"][1]["comm"] == "python3"
    fe_spans, eng_spans = res[fe_pid][1], res[eng_pid][1]
    assert {sp["name"] for sp in eng_spans} == {"hop.engine"} and len(eng_spans) == len(recs)
    by_id = {sp["spanId"]: sp for sp in fe_spans}
    reqs = {attrs(sp["attributes"])["ttftrace.request.id"]: sp for sp in fe_spans
            if sp["kind"] == 2}
    off = None
    for eng in eng_spans:
        fe = by_id[eng["parentSpanId"]]
        assert fe["name"] == "hop.frontend" and fe["traceId"] == eng["traceId"]
        req = by_id[fe["parentSpanId"]]
        rid = attrs(req["attributes"])["ttftrace.request.id"]
        r = [x for x in recs if x["id"] == rid][0]
        assert reqs[rid] is req and eng["kind"] == 5 and fe["kind"] == 1
        st = r["hop_stages_ms"]
        start = int(req["startTimeUnixNano"])
        off = start - r["t_arrival_ns"] if off is None else off
        assert start - r["t_arrival_ns"] == off     # one clock offset for all
        assert int(fe["startTimeUnixNano"]) == start
        assert int(fe["endTimeUnixNano"]) - start == r["t_first_token_ns"] - r["t_arrival_ns"]
        before = sum(st[k] for k in ("net_in", "read_wait", "frontend", "ipc_in"))
        e0 = (int(eng["startTimeUnixNano"]) - start) / 1e6
        e1 = (int(eng["endTimeUnixNano"]) - start) / 1e6
        assert abs(e0 - before) <= 0.003 and abs(e1 - before - st["queue"] - st["prefill"]) <= 0.004
        ea = attrs(eng["attributes"])
        assert ea["process.pid"] == eng_pid and ea["ttftrace.hop"] == "engine"
        assert abs(ea["ttftrace.hop.stage.queue"] * 1e3 - st["queue"]) <= 0.001
        assert abs(ea["ttftrace.hop.stage.prefill"] * 1e3 - st["prefill"]) <= 0.001
        fa = attrs(fe["attributes"])
        assert fa["ttftrace.hop.join"] == "exact" and fa["process.pid"] == fe_pid
        assert abs(fa["ttftrace.hop.stage.emit"] * 1e3 - st["emit"]) <= 0.001
