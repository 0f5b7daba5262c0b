# SPDX-License-Identifier: GPL-2.0-only
"""`ttftrace report` (no root): the page from committed NDJSON of real fixture runs,
rendered in headless Chromium (screenshot kept in tests/root/report/artifacts/), its data
checked against values computed here, bad input and exit codes."""
import json
import os
import re

import pytest

from report_helpers import (SAMPLE_ENGINE, SAMPLE_SSE, page_data, percentile, render, report,
                            requests_of)


def test_page_renders_with_waterfall_outliers_and_slos(tmp_path):
    out = tmp_path / "engine.html"
    # sample_engine: TTFT p95 92.079 ms, TPOT p95 8.725 ms, ITL p99 20.684 ms
    p = report(SAMPLE_ENGINE, "-o", out, "--slo", "ttft_p95=100ms,tpot_p95=8ms,itl_p99=50ms")
    assert p.returncode == 10, p.stderr          # tpot_p95 is not met
    assert "SLO tpot_p95 <= 8 ms: FAILED (8.725 ms)" in p.stderr, p.stderr
    dom, errors = render(tmp_path, out, "report_engine")
    assert not errors, errors
    assert 'id="ttf-rendered"' in dom and 'data-requests="40"' in dom, dom[-3000:]
    # one waterfall segment per non-zero stage of each request
    reqs = requests_of(SAMPLE_ENGINE)
    for st in ("read_wait", "frontend", "queue", "prefill", "emit"):
        want = sum((r["stages_ms"][st] or 0) > 0 for r in reqs)
        assert len(re.findall(r'data-stage="%s"' % st, dom)) == want, st
    assert sum((r["stages_ms"]["prefill"] or 0) > 0 for r in reqs) == 38
    # the one outlier of the run, with its cause on the point and in the tooltip
    assert len(re.findall(r'class="outlier[ "]', dom)) == 1
    assert 'data-cause="prefill of request 40"' in dom
    assert "cause: prefill of request 40" in dom
    assert "1 of 3 SLOs not met" in dom
    assert "tpot_p95" in dom and "8.725 ms" in dom


def test_page_statistics_match_the_ndjson(tmp_path):
    out = tmp_path / "sse.html"
    p = report(SAMPLE_SSE, "-o", out, "--slo", "ttft_p95=2s,tpot_p95=100ms")
    assert p.returncode == 0, p.stderr
    reqs = requests_of(SAMPLE_SSE)
    d = page_data(out)
    assert d["meta"]["requests"] == len(reqs) == 12
    stats = {s["name"]: s for s in d["stats"]}
    ttft = [r["ttft_ms"] for r in reqs]
    itl = [v for r in reqs for v in r["itl_ms"]]
    for k, p_ in (("p50", 50), ("p90", 90), ("p95", 95), ("p99", 99)):
        assert stats["ttft"][k] == pytest.approx(percentile(ttft, p_), abs=1e-9)
        assert stats["itl"][k] == pytest.approx(percentile(itl, p_), abs=1e-9)
    assert stats["itl"]["n"] == len(itl) == 12 * 23
    server = [r["stages_ms"]["server"] for r in reqs]
    assert stats["server"]["p99"] == pytest.approx(percentile(server, 99), abs=1e-9)
    assert "queue" not in stats          # no engine probes: merged into server
    grades = {g: sum(r["grade"] == g for r in reqs) for g in "ABC"}
    assert {g: d["grades"][g] for g in "ABC"} == grades
    assert [s["pass"] for s in d["slo"]] == [True, True]
    assert d["slo"][0]["value_ms"] == pytest.approx(percentile(ttft, 95), abs=1e-9)
    dom, errors = render(tmp_path, out, "report_sse")
    assert not errors, errors
    assert "All 2 SLOs met" in dom
    assert len(re.findall(r'data-stage="server"', dom)) == 12


def test_page_is_self_contained(tmp_path):
    out = tmp_path / "r.html"
    assert report(SAMPLE_ENGINE, "-o", out).returncode == 0
    html = out.read_text()
    assert not re.search(r"<script[^>]*\bsrc=|<link\b|@import|url\(\s*['\"]?https?:", html)
    assert not re.search(r"(src|href)\s*=\s*['\"]?(https?:)?//", html)
    # data never breaks out of its <script> block
    assert html.count("</script>") == 2


def test_bad_input_and_exit_codes(tmp_path):
    p = report(tmp_path / "missing.ndjson", "-o", tmp_path / "x.html")
    assert p.returncode == 11 and p.stderr.startswith("Error:"), p.stderr
    text = tmp_path / "text.out"
    text.write_text("Tracing PID 1, listening on port 8080\n  id  ttft_ms\n")
    p = report(text, "-o", tmp_path / "x.html")
    assert p.returncode == 11 and "not a JSON object" in p.stderr, p.stderr
    other = tmp_path / "other.ndjson"
    other.write_text('{"a": 1}\n')
    p = report(other, "-o", tmp_path / "x.html")
    assert p.returncode == 11 and "no ttftrace request" in p.stderr, p.stderr
    assert not (tmp_path / "x.html").exists()
    assert not [f for f in os.listdir(tmp_path) if ".tmp." in f]
    p = report(SAMPLE_SSE, "-o", tmp_path / "x.html", "--slo", "ttft_p95=2")
    assert p.returncode == 2 and "Error: invalid --slo" in p.stderr, p.stderr
    p = report(SAMPLE_SSE, "-o", tmp_path / "no-dir" / "x.html")
    assert p.returncode == 8 and p.stderr.startswith("Error:"), p.stderr
    p = report()
    assert p.returncode == 2
    assert p.stderr.endswith("\nHINT: see `ttftrace report --help`\n"), p.stderr
    p = report(SAMPLE_SSE, "--bogus")
    assert p.returncode == 2 and p.stderr.startswith("Error: "), p.stderr
    h = report("--help")
    assert h.returncode == 0 and "11  the input is missing" in h.stdout
    assert "EXAMPLES:" in h.stdout


def test_truncated_last_line_is_skipped(tmp_path):
    """An interrupted run: a cut-off last line and no summary still make a page."""
    lines = open(SAMPLE_SSE).read().splitlines()
    cut = tmp_path / "cut.ndjson"
    cut.write_text("\n".join(lines[:5]) + "\n" + lines[5][:40])
    out = tmp_path / "cut.html"
    p = report(cut, "-o", out)
    assert p.returncode == 0, p.stderr
    assert "5 requests" in p.stderr and "truncated" in p.stderr, p.stderr
    d = page_data(out)
    assert d["meta"]["requests"] == 5 and d["meta"]["bad_lines"] == 1
    assert d["meta"]["no_summary"] is True


def test_failed_requests_are_left_out_of_the_statistics(tmp_path):
    """A 404 and an aborted request count as requests, not in the latency statistics."""
    reqs = requests_of(SAMPLE_SSE)
    bad = [dict(reqs[0], id=900, status=404, ttft_ms=0.15, flags=["nonstream", "error"]),
           dict(reqs[1], id=901, ttft_ms=9999.0, flags=reqs[1]["flags"] + ["aborted"])]
    src = tmp_path / "mixed.ndjson"
    with open(src, "w") as f:
        for r in reqs + bad:
            f.write(json.dumps(r) + "\n")
    out = tmp_path / "mixed.html"
    p = report(src, "-o", out)
    assert p.returncode == 0, p.stderr
    d = page_data(out)
    assert d["meta"]["requests"] == 14
    assert d["meta"]["left_out"] == 2
    stats = {s["name"]: s for s in d["stats"]}
    ttft = [r["ttft_ms"] for r in reqs]
    assert stats["ttft"]["n"] == 12
    assert stats["ttft"]["p99"] == pytest.approx(percentile(ttft, 99), abs=1e-9)


DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "replay", "data")
MSG_HOP_OF = {"net_in": "net", "read_wait": "frontend", "frontend": "frontend", "ipc_in": "ipc",
              "queue": "engine", "prefill": "engine", "ipc_out": "ipc", "detokenize": "output",
              "ipc_back": "ipc", "emit": "frontend", "net_out": "net"}
HOP_COLORS = {"net": "#b8c2cc", "ipc": "#f0a830", "frontend": "#36a86b", "engine": "#e8684a",
              "output": "#2f6db5"}


@pytest.mark.parametrize("name", ["vllm_split", "sglang_split"])
def test_message_hops_colour_the_waterfall_by_hop(tmp_path, name):
    """The vLLM- and SGLang-shaped runs (tests/root/replay/data; two and three
    processes over zmq): in
    the default hop split every bar is split into its message hop stages, each
    segment coloured by its hop (frontend, ipc, engine, net) with the stage
    and hop on it, each segment as wide as its stage; the legend lists the
    hops with their stages. #server goes back to the server stages."""
    src, out = os.path.join(DATA, name + ".ndjson"), tmp_path / (name + ".html")
    assert report(src, "-o", out).returncode == 0
    reqs = requests_of(src)
    dom, errors = render(tmp_path, out, "report_" + name, height=1200)
    assert not errors, errors
    assert re.search(r'id="waterfall"[^>]*data-split="hops"', dom)
    segs = re.findall(r'<rect ([^>]*data-stage="(\w+)"[^>]*)>', dom)
    drawn = [(st, a) for a, st in segs]
    want = sum(1 for r in reqs for k, v in r["hop_stages_ms"].items() if v > 0)
    assert len(drawn) == want, (len(drawn), want)
    for st, a in drawn:
        hop = re.search(r'data-hop="(\w+)"', a).group(1)
        assert hop == MSG_HOP_OF[st], (st, a)
        assert re.search(r'fill="%s"' % HOP_COLORS[hop], a), a
    # one row per request, slowest first: the segment widths follow the stages
    slow = max(reqs, key=lambda r: r["ttft_ms"])
    first = {}
    for st, a in drawn:
        first.setdefault(st, float(re.search(r'width="([\d.]+)"', a).group(1)))
    big = max((k for k in slow["hop_stages_ms"] if slow["hop_stages_ms"][k] > 0),
              key=lambda k: slow["hop_stages_ms"][k])
    assert first[big] == max(first.values())
    legend = re.findall(r'data-legend-hop="(\w+)"', dom)
    want_hops = {MSG_HOP_OF[k] for k in reqs[0]["hop_stages_ms"]}
    assert ("output" in want_hops) == (name == "sglang_split")
    assert set(legend) == want_hops, legend     # the waterfall's and the arrival view's
    assert "engine (queue, prefill)" in dom
    from report_helpers import chromium
    sdom, _ = chromium(tmp_path, "file://%s#server" % out, "--dump-dom")
    assert re.search(r'id="waterfall"[^>]*data-split="server"', sdom)
    assert not re.search(r'data-hop=', sdom)


PROBE = """<script>
/* the test's probe: where Chromium laid out the ITL chart's labels (CSS px) */
(function () {
	const out = [...document.querySelectorAll("#itl svg text.lbl")].map((t) => {
		const b = t.getBoundingClientRect();
		return { text: t.textContent, x: b.left, y: b.top, w: b.width, h: b.height };
	});
	const pre = document.createElement("pre");
	pre.id = "probe";
	pre.textContent = JSON.stringify(out);
	document.body.appendChild(pre);
})();
</script>
"""


def test_itl_outlier_labels_do_not_overlap(tmp_path):
    """30 ITL outliers close together in time and size, the largest in the last
    request: the largest is labelled with its cause, and no two labels overlap where
    Chromium laid them out (boxes measured by a probe script added to the page)."""
    import random
    from synth_run import make_requests
    rng = random.Random(3)
    reqs = make_requests(120, seed=9, span_s=40.0, n_outliers=0)
    ok = [r for r in reqs if r["status"] == 200 and "aborted" not in r["flags"]
          and "incomplete" not in r["flags"]]
    for r in ok[:30]:
        k = len(r["itl_ms"]) // 2
        r["itl_ms"][k] = round(r["tpot_ms"] * rng.uniform(5.5, 6.5), 3)
        r["outliers"] = [{"index": k, "itl_ms": r["itl_ms"][k],
                          "cause": "prefill of request %d (batch of 4)" % (r["id"] + 1)}]
    big = ok[29]
    k = big["outliers"][0]["index"]
    big["itl_ms"][k] = round(max(r["itl_ms"][len(r["itl_ms"]) // 2] for r in ok[:29]) * 1.3, 3)
    big["outliers"] = [{"index": k, "itl_ms": big["itl_ms"][k], "cause": "the largest stall"}]
    for r in ok[:30]:
        mean = sum(r["itl_ms"]) / len(r["itl_ms"])
        r["tpot_ms"] = r["itl_mean_ms"] = round(mean, 3)
    src, out = tmp_path / "outliers.ndjson", tmp_path / "outliers.html"
    with open(src, "w") as f:
        for r in reqs:
            f.write(json.dumps(r) + "\n")
    assert report(src, "-o", out).returncode == 0
    html = out.read_text()
    assert html.count("</body>") == 1
    out.write_text(html.replace("</body>", PROBE + "</body>"))
    dom, errors = render(tmp_path, out, "report_itl_labels", height=2600)
    assert not errors, errors
    assert len(re.findall(r'class="outlier[ "]', dom)) == sum(len(r["outliers"]) for r in ok)
    m = re.search(r'<pre id="probe">(.*?)</pre>', dom)
    assert m, dom[-2000:]
    labels = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    texts = [l["text"] for l in labels]
    assert "the largest stall" in texts, texts
    assert 2 <= len(labels) <= 12, texts
    for i, a in enumerate(labels):
        assert a["w"] > 0 and a["h"] > 0, a
        for b in labels[i + 1:]:
            overlap = (a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"] and
                       a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"])
            assert not overlap, (a, b)
