# SPDX-License-Identifier: GPL-2.0-only
"""deploy/prometheus/ttftrace-alerts.yml: `promtool check rules` passes, and
`promtool test rules` shows each alert firing on series shaped like a ttftrace
scrape (the metric and label names of tests/root/export) and staying quiet on
healthy ones."""
import os
import shutil
import subprocess

import pytest
import yaml

from conftest import ROOT

RULES = os.path.join(ROOT, "deploy", "prometheus", "ttftrace-alerts.yml")
PROMTOOL = shutil.which("promtool")
pytestmark = pytest.mark.skipif(PROMTOOL is None,
                                reason="promtool is not installed (apt-get install prometheus)")

L = 'job="ttftrace", instance="node1:9464", comm="llama-server", model="m", route="chat"'

# 1-minute samples. "slow": every request's TTFT in (2.5, 5] s; "fast": in (0.1, 0.25].
# 60 requests a minute, 10 of them errors on "bad"; drops grow on node1 from 20m on.
TESTS = """
rule_files:
  - %(rules)s
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'ttftrace_ttft_seconds_bucket{%(l)s, le="0.25"}'
        values: '0+0x40'
      - series: 'ttftrace_ttft_seconds_bucket{%(l)s, le="2.5"}'
        values: '0+0x40'
      - series: 'ttftrace_ttft_seconds_bucket{%(l)s, le="5"}'
        values: '0+50x40'
      - series: 'ttftrace_ttft_seconds_bucket{%(l)s, le="+Inf"}'
        values: '0+50x40'
      - series: 'ttftrace_ttft_seconds_bucket{%(f)s, le="0.25"}'
        values: '0+50x40'
      - series: 'ttftrace_ttft_seconds_bucket{%(f)s, le="+Inf"}'
        values: '0+50x40'
      - series: 'ttftrace_tpot_seconds_bucket{%(l)s, le="0.05"}'
        values: '0+0x40'
      - series: 'ttftrace_tpot_seconds_bucket{%(l)s, le="0.25"}'
        values: '0+50x40'
      - series: 'ttftrace_tpot_seconds_bucket{%(l)s, le="+Inf"}'
        values: '0+50x40'
      - series: 'ttftrace_requests_total{%(l)s, status_class="2xx", outcome="ok"}'
        values: '0+50x40'
      - series: 'ttftrace_requests_total{%(l)s, status_class="5xx", outcome="error"}'
        values: '0+10x40'
      - series: 'ttftrace_requests_total{%(l)s, status_class="2xx", outcome="aborted"}'
        values: '0+0x40'
      - series: 'ttftrace_requests_total{%(f)s, status_class="2xx", outcome="ok"}'
        values: '0+60x40'
      - series: 'ttftrace_requests_total{%(f)s, status_class="2xx", outcome="aborted"}'
        values: '0+30x40'
      - series: 'ttftrace_dropped_events_total{job="ttftrace", instance="node1:9464", reason="ringbuf_full"}'
        values: '0x20 5+5x20'
      - series: 'ttftrace_dropped_events_total{job="ttftrace", instance="node2:9464", reason="ringbuf_full"}'
        values: '0x40'
      - series: 'up{job="ttftrace", instance="node1:9464"}'
        values: '1x40'
      - series: 'up{job="ttftrace", instance="node2:9464"}'
        values: '1x10 0x30'
"""

N1 = {"severity": "warning", "job": "ttftrace", "instance": "node1:9464"}
# (eval time, alert, labels, summary): P95 inside the (2.5, 5] bucket is
# 2.5 + 2.5 x 0.95 = 4.875 s; TPOT in (0.05, 0.25]: 0.24 s; errors 10 of 60
EXPECTED = [
    ("5m", "TTFTraceTTFTP95OverSLO", None, None),
    ("30m", "TTFTraceTTFTP95OverSLO", dict(N1, comm="llama-server", model="m"),
     "TTFT P95 of llama-server (m) is 4.875s, over the 2 s SLO"),
    ("30m", "TTFTraceTPOTP95OverSLO", dict(N1, comm="llama-server", model="m"),
     "TPOT P95 of llama-server (m) is 240ms, over the 100 ms SLO"),
    ("30m", "TTFTraceErrorRatioHigh", dict(N1, comm="llama-server"),
     "16.67% of the requests to llama-server fail"),
    ("15m", "TTFTraceDroppingEvents", None, None),
    ("25m", "TTFTraceDroppingEvents", dict(N1, reason="ringbuf_full"),
     "ttftrace on node1:9464 dropped events (ringbuf_full)"),
    ("5m", "TTFTraceDown", None, None),
    ("30m", "TTFTraceDown", dict(N1, instance="node2:9464"),
     "ttftrace on node2:9464 is not scraped"),
]


def alert_tests():
    with open(RULES) as f:
        rules = {r["alert"]: r for g in yaml.safe_load(f)["groups"] for r in g["rules"]}
    assert set(rules) == {e[1] for e in EXPECTED}, sorted(rules)
    out = []
    for at, name, labels, summary in EXPECTED:
        t = {"eval_time": at, "alertname": name, "exp_alerts": []}
        if labels:
            desc = rules[name]["annotations"]["description"].replace(
                "{{ $labels.instance }}", labels["instance"])
            assert "{{" not in desc, desc
            t["exp_alerts"] = [{"exp_labels": labels,
                                "exp_annotations": {"summary": summary, "description": desc}}]
        out.append(t)
    return out


def test_promtool_check_rules():
    p = subprocess.run([PROMTOOL, "check", "rules", RULES], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "SUCCESS: 5 rules found" in p.stdout, p.stdout


def test_alerts_fire_on_ttftrace_series(tmp_path):
    # another server, fast and healthy (its aborted requests are not errors)
    f = L.replace('comm="llama-server"', 'comm="vllm"')
    t = tmp_path / "tests.yml"
    spec = yaml.safe_load(TESTS % {"rules": RULES, "l": L, "f": f})
    spec["tests"][0]["alert_rule_test"] = alert_tests()
    t.write_text(yaml.safe_dump(spec))
    p = subprocess.run([PROMTOOL, "test", "rules", str(t)], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "SUCCESS" in p.stdout, p.stdout
