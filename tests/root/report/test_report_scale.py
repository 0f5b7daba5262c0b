# SPDX-License-Identifier: GPL-2.0-only
"""The report page at scale (no root): 10,000 synthetic requests (synth_run.py: a burst,
two models, two routes plus 404s on a third, four TTFT stalls of 9-15 s, 500s, aborted and
incomplete requests, no summary object) rendered in headless Chromium within 5 s of the
page's own clock (navigation start to drawn, performance.now(), set by the page on its
#ttf-rendered marker; the fastest of up to 3 loads, as other processes on a shared
machine only slow a load down); the waterfall aggregates into bands, the axis is clipped at P99
or log, the CDFs, the arrival view, the route/model tables and the error list hold what
the NDJSON says. The screenshot is kept in tests/root/report/artifacts/report_10k.png."""
import json
import re

import pytest

from report_helpers import chromium, page_data, page_errors, percentile, render, report
from synth_run import write_run

N = 10_000
RENDER_LIMIT_MS = 5000          # the bound: 10,000 requests drawn in under 5 s
FAILURE_FLAGS = ("aborted", "incomplete", "error", "unknown")


def success(r):
    return r["status"] is not None and 200 <= r["status"] <= 299 and \
        not set(r["flags"]) & set(FAILURE_FLAGS)


def marker(dom):
    m = re.search(r'<div id="ttf-rendered" hidden="" data-requests="(\d+)" data-render-ms="([\d.]+)"', dom)
    assert m, "the page did not finish rendering: " + dom[-2000:]
    return int(m.group(1)), float(m.group(2))


def attr(dom, elem_id, name):
    m = re.search(r'id="%s"[^>]*\b%s="([^"]*)"' % (elem_id, name), dom)
    assert m, (elem_id, name)
    return m.group(1)


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    d = tmp_path_factory.mktemp("scale")
    src, out = d / "run10k.ndjson", d / "run10k.html"
    reqs = write_run(src, N, seed=7)
    p = report(src, "-o", out)
    assert p.returncode == 0, p.stderr
    assert "10000 requests, no summary object" in p.stderr, p.stderr
    return reqs, out, d


def test_10k_requests_render_within_5s(big, tmp_path):
    reqs, out, _ = big
    ok = [r for r in reqs if success(r)]
    failed = [r for r in reqs if not success(r)]
    dom, errors = render(tmp_path, out, "report_10k", height=4300)
    assert not errors, errors
    n, render_ms = marker(dom)
    assert n == N
    # Other processes on a shared machine only add to a load's time: up to 3 loads, the
    # fastest counts (the bound itself is not loosened).
    times = [render_ms]
    while min(times) >= RENDER_LIMIT_MS and len(times) < 3:
        again, _ = chromium(tmp_path, "file://%s" % out, "--dump-dom")
        times.append(marker(again)[1])
    print("10,000 requests: page drawn %s ms after navigation start" % ", ".join("%.0f" % t for t in times))
    assert min(times) < RENDER_LIMIT_MS, times
    # waterfall: the 25 slowest one row each, the other successful ones in 40 bands
    assert attr(dom, "waterfall", "data-rows") == "25"
    assert attr(dom, "waterfall", "data-bands") == "40"
    assert len(re.findall(r'<g data-row="request"', dom)) == 0
    banded = sum(int(x) for x in re.findall(r'data-band="(\d+)"', dom))
    assert banded + 25 == len(ok)
    # 4 stalls of 9-15 s are far past 3 x P99: the axis starts clipped at P99
    p99 = percentile([r["ttft_ms"] for r in ok], 99)
    assert max(r["ttft_ms"] for r in ok) > 20 * p99
    clipped = int(attr(dom, "waterfall", "data-clipped"))
    assert clipped >= 4 and clipped <= 0.011 * len(ok), clipped
    assert attr(dom, "waterfall", "data-axis") == "linear"
    # one row per tail request, with its id, slowest first (the 4 stalls lead)
    stalls = sorted(ok, key=lambda r: -r["ttft_ms"])[:4]
    for r in stalls:
        assert ">#%d<" % r["id"] in dom
    # CDFs: one line for all and one per model
    assert len(re.findall(r'data-series="all"', dom)) == 2
    for m in ("llama-3.1-8b-instruct", "qwen2.5-7b-instruct"):
        assert len(re.findall(r'data-series="%s"' % m, dom)) == 2
    assert len(re.findall(r'data-mark="P99"', dom)) == 2
    # arrival view: every successful request is a point
    assert attr(dom, "arrival", "data-points") == str(len(ok))
    assert re.search(r'data-line="p95"', dom) and re.search(r'data-line="p50"', dom)
    # errors apart: the count, and one row each (up to 300)
    assert attr(dom, "errors", "data-failed") == str(len(failed))
    table = dom[dom.index('id="errors-table"'):]
    table = table[:table.index("</table>")]
    assert table.count("<tr>") == 1 + min(300, len(failed))
    assert "HTTP 404 + error</b> × %d" % sum(r["status"] == 404 for r in reqs) in dom


def test_10k_page_data_matches_the_requests(big):
    reqs, out, _ = big
    d = page_data(out)
    ok = [r for r in reqs if success(r)]
    # no summary: the outcome counts come from the requests' flags, as the summary counts them
    assert d["outcomes_from"] == "requests"
    oc = d["outcomes"]
    for k in ("aborted", "incomplete", "error"):
        assert oc[k] == sum(k in r["flags"] for r in reqs), k
    assert oc["ok"] == sum(not set(r["flags"]) & set(FAILURE_FLAGS) for r in reqs)
    assert oc["ok"] + oc["aborted"] + oc["incomplete"] + oc["error"] == N
    assert d["meta"]["left_out"] == N - len(ok)
    assert sum(r["ok"] for r in d["requests"]) == len(ok)
    # by model and by route: counts exact, percentiles of the successful requests
    # (user/lib/stats.h past 2048 samples: within 0.39%)
    for key, groups, keyf in (("model", d["by_model"], lambda r: r["model"]),
                              ("route", d["by_route"], lambda r: r["path"])):
        names = sorted({keyf(r) for r in reqs})
        assert sorted(g["key"] for g in groups) == names, key
        for g in groups:
            mine = [r for r in reqs if keyf(r) == g["key"]]
            good = [r for r in mine if success(r)]
            assert g["n"] == len(mine) and g["failed"] == len(mine) - len(good)
            assert g["ttft"]["n"] == len(good)
            if not good:
                assert g["ttft"]["p99"] is None
                continue
            for p in (50, 95, 99):
                assert g["ttft"]["p%d" % p] == pytest.approx(
                    percentile([r["ttft_ms"] for r in good], p), rel=0.004)
                assert g["tpot"]["p%d" % p] == pytest.approx(
                    percentile([r["tpot_ms"] for r in good], p), rel=0.004)
    assert [g["key"] for g in d["by_route"]][-1] == "/v1/embeddings"   # most requests first


def test_log_axis_from_the_address(big, tmp_path):
    _, out, _ = big
    dom, err = chromium(tmp_path, "file://%s#log" % out, "--dump-dom")
    assert not page_errors(err), page_errors(err)
    assert attr(dom, "waterfall", "data-axis") == "log"
    assert attr(dom, "waterfall", "data-clipped") == "0"      # log: the stalls fit
    assert "TTFT ms (log)" in dom


def test_hop_stages_colour_the_waterfall(tmp_path):
    src, out = tmp_path / "hops.ndjson", tmp_path / "hops.html"
    reqs = write_run(src, 300, seed=3, hops=True)
    assert report(src, "-o", out).returncode == 0
    d = page_data(out)
    assert sum("hops" in r for r in d["requests"]) == sum("hop_stages_ms" in r for r in reqs) > 250
    dom, errors = render(tmp_path, out, "report_hops")
    assert not errors, errors
    assert attr(dom, "waterfall", "data-split") == "hops"
    assert re.search(r'id="split-box"(?![^>]*hidden)', dom)
    # the 25 tail rows, split into hop stages: the upstream stage of each
    assert len(re.findall(r'data-stage="upstream"', dom)) == 25
    assert len(re.findall(r'data-stage="queue"', dom)) == 0
    dom, _ = chromium(tmp_path, "file://%s#server" % out, "--dump-dom")
    assert attr(dom, "waterfall", "data-split") == "server"
    assert len(re.findall(r'data-stage="queue"', dom)) == 25
    assert len(re.findall(r'data-stage="upstream"', dom)) == 0


def test_no_summary_counts_outcomes_from_the_requests(tmp_path):
    """An interrupted run of a few requests: ok/aborted/error counted from the flags."""
    src, out = tmp_path / "few.ndjson", tmp_path / "few.html"
    reqs = write_run(src, 400, seed=11)
    want = {k: sum(k in r["flags"] for r in reqs) for k in ("aborted", "incomplete", "error")}
    assert all(want.values())
    assert report(src, "-o", out).returncode == 0
    dom, errors = render(tmp_path, out, "report_no_summary")
    assert not errors, errors
    ok = sum(not set(r["flags"]) & set(FAILURE_FLAGS) for r in reqs)
    assert "%d ok, %d aborted, %d incomplete, %d errors (counted from the requests)" % (
        ok, want["aborted"], want["incomplete"], want["error"]) in dom


def test_model_groups_are_bounded(tmp_path):
    """30 models: the first 24 seen get a row each, the later ones share "other"."""
    from synth_run import make_requests
    reqs = make_requests(300, seed=5)
    for r in reqs:
        r["model"] = "m%02d" % (r["id"] % 30)
    src, out = tmp_path / "models.ndjson", tmp_path / "models.html"
    with open(src, "w") as f:
        for r in reqs:
            f.write(json.dumps(r) + "\n")
    assert report(src, "-o", out).returncode == 0
    groups = {g["key"]: g for g in page_data(out)["by_model"]}
    first = []
    for r in reqs:
        if r["model"] not in first:
            first.append(r["model"])
    own, rest = first[:24], first[24:]
    assert sorted(groups) == sorted(own + ["other"])
    assert groups["other"]["n"] == sum(r["model"] in rest for r in reqs) == 6 * 10
    assert sum(g["n"] for g in groups.values()) == 300
