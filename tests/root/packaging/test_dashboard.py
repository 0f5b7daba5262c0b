# SPDX-License-Identifier: GPL-2.0-only
"""The Grafana dashboard's queries return data from a real Prometheus.

A real Prometheus (Debian's) scrapes `ttftrace --metrics --profile fixture`
every second while a client streams requests to the fixture engine
(tests/fixtures/engine.c: tokenize, queue, prefill and decode, so that every
stage and the tokenize panel have data), a few of them to a path it answers
404 (so the error panels have a series). Then every panel's
expression, with the dashboard's template variables set as Grafana's "All"
sets them (.*) and $__rate_interval as Grafana computes it for a 1 s scrape
interval at most, goes through Prometheus' HTTP API: each one must return at
least one series with a finite value. Each template variable's
label_values() query must return the values of this run.
"""
import json
import math
import subprocess
import os
import re
import sys
import threading
import time
import urllib.parse

import pytest

from conftest import ROOT, Client, free_port, needs_root, require_built

sys.path.insert(0, os.path.join(ROOT, "tests", "root", "export"))
import test_prometheus as tp  # noqa: E402  (its real-Prometheus helpers)

pytestmark = [needs_root, pytest.mark.skipif(tp._prom_reason() is not None,
                                             reason=tp._prom_reason() or "")]

DASHBOARD = os.path.join(ROOT, "deploy", "grafana", "ttftrace-dashboard.json")
ENGINE = os.path.join(ROOT, ".output", "tests", "fixtures", "engine")
PROFILE = os.path.join(ROOT, "profiles", "fixture.ini")
# Grafana: max(4 x scrape interval, interval + scrape interval); 1 s scrapes -> 4 s;
# a wider window keeps two samples inside it on a busy machine
RATE_INTERVAL = "15s"
VARS_ALL = {"job": ".*", "instance": ".*", "comm": ".*", "model": ".*", "route": ".*"}


def substitute(expr):
    expr = expr.replace("$__rate_interval", RATE_INTERVAL).replace("$__interval", RATE_INTERVAL)
    for k, v in VARS_ALL.items():
        expr = expr.replace("$" + k, v).replace("${%s}" % k, v)
    assert "$" not in expr, expr
    return expr


def panels(dash):
    for p in dash["panels"]:
        yield p
        yield from p.get("panels", [])


def finite_values(api, expr):
    res = tp.query(api, expr)
    vals = [float(r["value"][1]) for r in res]
    return res, [v for v in vals if not math.isnan(v) and not math.isinf(v)]


def start_engine(procs, tmp_path):
    require_built(ENGINE)
    p = procs.add(subprocess.Popen(
        [ENGINE, "--port", "0", "--nodelay", "--truth", str(tmp_path / "truth.ndjson"),
         "--tokenize-us-per-token", "20", "--decode-us", "3000"],
        stdout=subprocess.PIPE, text=True))
    line = p.stdout.readline()
    assert line.startswith("listening on 127.0.0.1:"), "engine said %r" % line
    return p.pid, int(line.rsplit(":", 1)[1])


def _load(port, stop, counts):
    c = Client(port)
    while not stop.is_set():
        assert c.request(max_tokens=4).status == 200
        counts[0] += 1
        if counts[0] % 10 == 0:
            assert c.request(path="/v1/nope").status == 404
            counts[1] += 1
    c.close()


def test_dashboard_queries_return_data(tracer, procs, tmp_path):
    with open(DASHBOARD) as f:
        dash = json.load(f)
    # the hop-stage panel has data only through a gateway or a message hop
    # (tests/root/export/test_dashboard_values.py checks its query)
    targets = [(p["title"], t["expr"]) for p in panels(dash) for t in p.get("targets", [])
               if not p["title"].startswith("Hop stages")]
    assert len(targets) >= 15, targets
    ds_vars = [v for v in dash["templating"]["list"] if v["type"] == "datasource"]
    assert len(ds_vars) == 1 and ds_vars[0]["query"] == "prometheus"
    # every panel reads from the datasource variable, never a fixed one
    for p in panels(dash):
        if p["type"] != "row":
            assert p["datasource"]["uid"] == "${datasource}", p["title"]
    # every ttftrace metric family the dashboard names exists in a scrape (below)
    names = set(re.findall(r"\b(ttftrace_[a-z0-9_]+)", " ".join(e for _, e in targets)))

    pid, port = start_engine(procs, tmp_path)
    mport = free_port()
    tr = tracer("-p", pid, "--profile", PROFILE, "--metrics", str(mport), "--cost")
    api = tp.start_prometheus(procs, tmp_path, mport)
    stop, counts = threading.Event(), [0, 0]
    th = threading.Thread(target=_load, args=(port, stop, counts), daemon=True)
    th.start()
    try:
        # load for long enough that every rate window holds several scrapes
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if finite_values(api, substitute(
                    'sum(rate(ttftrace_requests_total{outcome="error"}[$__rate_interval]))'))[1] \
                    and time.monotonic() - tr.t_attached > 12:
                break
            time.sleep(0.5)
        scrape = tp.http_get("http://127.0.0.1:%d/metrics" % mport)[2]
        for n in names:
            assert re.search(r"^%s(_bucket|_sum|_count)?[{ ]" % n, scrape, re.M), n
        empty = []
        for title, expr in targets:
            res, vals = finite_values(api, substitute(expr))
            if not vals:
                empty.append("%s: %s -> %s" % (title, substitute(expr), res))
        assert not empty, "\n".join(empty)
        # the variables: label_values(METRIC{...}, LABEL) through the series API
        for v in dash["templating"]["list"]:
            if v["type"] != "query":
                continue
            m = re.fullmatch(r"label_values\((.+), *(\w+)\)", v["query"]["query"])
            assert m, v
            url = "http://127.0.0.1:%d/api/v1/series?%s" % (
                api, urllib.parse.urlencode({"match[]": substitute(m.group(1))}))
            series = json.loads(tp.http_get(url)[2])["data"]
            got = {s[m.group(2)] for s in series if m.group(2) in s}
            # comm: the engine names its frontend threads fx-http
            want = {"job": {"ttftrace"}, "instance": {"127.0.0.1:%d" % mport},
                    "comm": {"fx-http"}, "model": {"m"},
                    "route": {"chat", "unknown"}}[v["name"]]
            assert want <= got, (v["name"], got)
    finally:
        stop.set()
        th.join(20)
    assert tr.stop() == 0, tr.stderr
    assert counts[0] > 20 and counts[1] >= 2, counts
