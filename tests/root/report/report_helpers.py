# SPDX-License-Identifier: GPL-2.0-only
"""Helpers of the report tier: `ttftrace report`, headless Chromium, the page's data."""
import json
import os
import re
import shutil
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
TTFTRACE = os.path.join(ROOT, "ttftrace")
ARTIFACTS = os.path.join(HERE, "artifacts")
SAMPLE_ENGINE = os.path.join(HERE, "sample_engine.ndjson")   # fixture engine, 40 requests, c=6
SAMPLE_SSE = os.path.join(HERE, "sample_sse.ndjson")         # fixture sse_server, 12 requests

# Debian's chromium; tools/setup.sh installs it.
CHROMIUM = shutil.which("chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run",
                  "--enable-logging=stderr", "--v=0"]


def report(*args):
    return subprocess.run([TTFTRACE, "report"] + [str(a) for a in args], capture_output=True,
                          text=True, timeout=60)


def page_data(html_path):
    """The JSON object embedded in the page (the TTF_DATA line)."""
    with open(html_path) as f:
        html = f.read()
    m = re.search(r'<script id="ttf-data" type="application/json">\n(.*)\n</script>', html)
    assert m, "no data block in the page"
    return json.loads(m.group(1))


def chromium(tmp_path, url, *extra, timeout_s=90):
    """Run headless Chromium once; returns (stdout, stderr)."""
    if not CHROMIUM:
        pytest.fail("chromium is not installed: run tools/setup.sh (Debian package chromium)")
    prof = tmp_path / "chromium-profile"
    p = subprocess.run([CHROMIUM] + CHROMIUM_FLAGS + ["--user-data-dir=%s" % prof] + list(extra) +
                       [url], capture_output=True, text=True, timeout=timeout_s)
    return p.stdout, p.stderr


def page_errors(stderr):
    """JavaScript errors that Chromium logged for the page."""
    return [l for l in stderr.splitlines()
            if "CONSOLE" in l and ("Uncaught" in l or "Error" in l)]


def render(tmp_path, html_path, name, height=1800):
    """Screenshot the page (1400 x HEIGHT) into tests/root/report/artifacts/NAME.png and dump
    its DOM. Returns (dom, errors)."""
    os.makedirs(ARTIFACTS, exist_ok=True)
    png = os.path.join(ARTIFACTS, name + ".png")
    if os.path.exists(png):
        os.unlink(png)
    url = "file://" + os.path.abspath(html_path)
    _, err1 = chromium(tmp_path, url, "--screenshot=%s" % png, "--window-size=1400,%d" % height)
    assert os.path.exists(png) and os.path.getsize(png) > 20000, "no screenshot: " + err1[-2000:]
    dom, err2 = chromium(tmp_path, url, "--dump-dom")
    return dom, page_errors(err1) + page_errors(err2)


def percentile(values, p):
    """numpy's default (linear) percentile, as user/lib/stats.h defines it."""
    v = sorted(values)
    rank = p / 100.0 * (len(v) - 1)
    i = int(rank)
    return v[i] if i == len(v) - 1 else v[i] + (rank - i) * (v[i + 1] - v[i])


def requests_of(ndjson_path):
    with open(ndjson_path) as f:
        recs = [json.loads(l) for l in f if l.strip()]
    return [r for r in recs if r.get("type") == "request"]
