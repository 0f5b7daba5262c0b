# SPDX-License-Identifier: GPL-2.0-only
"""deploy/prometheus/ttftrace-alerts.yml: `promtool check rules` passes, and
`promtool test rules` shows every alert firing on series shaped like a
ttftrace scrape (the metric and label names of tests/root/export) and staying
quiet where it must: a healthy run (whose routine counters, such as
sched_marks_trimmed, grow), a scanner's 404s, a target that is not ttftrace.
Each scenario runs twice: under a static job ("ttftrace") and under the job
that annotation scraping with kubernetes_sd makes (Prometheus' example
configuration: job "kubernetes-pods", instance POD_IP:PORT, the pod's labels
mapped and namespace/pod added), as deploy/kubernetes's DaemonSet is scraped.

promtool comes from Debian's `prometheus` package (tools/setup.sh). Without it
the tests skip, except under CI (CI=true), where they fail: a missing tool
must not pass the alert tests silently."""
import os
import shutil
import subprocess

import pytest
import yaml

from conftest import ROOT

RULES = os.path.join(ROOT, "deploy", "prometheus", "ttftrace-alerts.yml")
PROMTOOL = shutil.which("promtool")

STATIC = {"job": "ttftrace", "instance": "node1:9464"}
ANNOTATED = {"job": "kubernetes-pods", "instance": "10.1.2.3:9464",
             "namespace": "monitoring", "pod": "ttftrace-x7k2p",
             "app_kubernetes_io_name": "ttftrace"}
TARGETS = {"static": STATIC, "annotated": ANNOTATED}
SERIES = {"comm": "llama-server", "model": "m", "route": "chat"}


@pytest.fixture
def promtool():
    if PROMTOOL is None:
        msg = "promtool is not installed (apt-get install prometheus; tools/setup.sh does)"
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true: " + msg)
        pytest.skip(msg)
    return PROMTOOL


def sel(labels):
    return ", ".join('%s="%s"' % kv for kv in sorted(labels.items()))


def rules():
    with open(RULES) as f:
        return {r["alert"]: r for g in yaml.safe_load(f)["groups"] for r in g["rules"]}


def series(name, labels, values):
    return {"series": "%s{%s}" % (name, sel(labels)), "values": values}


def requests(t, n_per_min, status_class, outcome, **kw):
    lab = dict(t, **SERIES, status_class=status_class, outcome=outcome, **kw)
    return series("ttftrace_requests_total", lab, "0+%dx40" % n_per_min)


def histo(t, name, bounds_per_min, **kw):
    """A histogram whose requests (per minute) sit in the buckets given as {le: n}."""
    out, cum = [], 0
    for le, n in bounds_per_min:
        cum += n
        out.append(series(name + "_bucket", dict(t, **SERIES, le=le, **kw), "0+%dx40" % cum))
    return out


def healthy(t):
    """A run with nothing wrong: fast TTFT and TPOT, ok requests, a tracer
    whose routine counters grow and whose drop counters stay 0."""
    return (histo(t, "ttftrace_ttft_seconds", [("0.25", 60), ("2.5", 0), ("+Inf", 0)])
            + histo(t, "ttftrace_tpot_seconds", [("0.05", 60), ("0.25", 0), ("+Inf", 0)])
            + [requests(t, 60, "2xx", "ok"),
               series("ttftrace_dropped_events_total", dict(t, reason="ringbuf_full"), "0x40"),
               series("ttftrace_dropped_events_total", dict(t, reason="sched_overlays_cut"),
                      "0x40"),
               series("ttftrace_tracer_events_total", dict(t, name="sched_marks_trimmed"),
                      "0+5000x40"),
               series("ttftrace_tracer_events_total", dict(t, name="engine_steps_trimmed"),
                      "0+300x40"),
               series("ttftrace_build_info", dict(t, version="1"), "1x40"),
               series("up", t, "1x40")])


def quiet(at, names=None):
    return [{"eval_time": at, "alertname": n, "exp_alerts": []} for n in (names or rules())]


def fires(at, name, labels, summary):
    desc = rules()[name]["annotations"]["description"]
    if "instance" in labels:
        desc = desc.replace("{{ $labels.instance }}", labels["instance"])
    assert "{{" not in desc, desc
    return {"eval_time": at, "alertname": name,
            "exp_alerts": [{"exp_labels": dict(labels, severity="warning"),
                            "exp_annotations": {"summary": summary, "description": desc}}]}


def scenarios(t):
    """(name, input series, alert tests) for target labels t."""
    inst = t["instance"]
    key = {"job": t["job"], "instance": inst}
    down = dict(t, instance=inst.replace("9464", "9465"))
    yield "healthy", healthy(t), quiet("30m")
    # a scanner: 10 404s a second with made-up models next to 1 ok request a second
    scan = [requests(t, 600, "4xx", "error")]
    scan[0]["series"] = scan[0]["series"].replace('route="chat"', 'route="unknown"')
    yield "scanner 404s", healthy(t) + scan, quiet("30m")
    # 10 of 60 requests fail on the server's side: 5xx errors, or aborted streams
    five = [s for s in healthy(t) if "requests_total" not in s["series"]]
    five += [requests(t, 50, "2xx", "ok"), requests(t, 10, "5xx", "error")]
    yield "5xx", five, [fires("30m", "TTFTraceErrorRatioHigh", dict(key, comm="llama-server"),
                              "16.67% of the requests to llama-server fail")]
    ab = [s for s in five if 'status_class="5xx"' not in s["series"]]
    ab += [requests(t, 10, "2xx", "aborted")]
    yield "aborted", ab, [fires("30m", "TTFTraceErrorRatioHigh", dict(key, comm="llama-server"),
                                "16.67% of the requests to llama-server fail")]
    # every TTFT in (2.5, 5] s: P95 2.5 + 2.5 x 0.95; every TPOT in (0.05, 0.25]: 0.24 s
    slow = [s for s in healthy(t) if "_seconds_bucket" not in s["series"]]
    slow += histo(t, "ttftrace_ttft_seconds", [("0.25", 0), ("2.5", 0), ("5", 60), ("+Inf", 0)])
    slow += histo(t, "ttftrace_tpot_seconds", [("0.05", 0), ("0.25", 60), ("+Inf", 0)])
    lab = dict(key, comm="llama-server", model="m")
    yield "slow", slow, [
        {"eval_time": "5m", "alertname": "TTFTraceTTFTP95OverSLO", "exp_alerts": []},
        fires("30m", "TTFTraceTTFTP95OverSLO", lab,
              "TTFT P95 of llama-server (m) is 4.875s, over the 2 s SLO"),
        fires("30m", "TTFTraceTPOTP95OverSLO", lab,
              "TPOT P95 of llama-server (m) is 240ms, over the 100 ms SLO")]
    # ring buffer drops from 20m on
    drops = [s for s in healthy(t) if 'reason="ringbuf_full"' not in s["series"]]
    drops.append(series("ttftrace_dropped_events_total", dict(t, reason="ringbuf_full"),
                        "0x20 5+5x20"))
    yield "drops", drops, [
        {"eval_time": "15m", "alertname": "TTFTraceDroppingEvents", "exp_alerts": []},
        fires("25m", "TTFTraceDroppingEvents", dict(key, reason="ringbuf_full"),
              "ttftrace on %s dropped events (ringbuf_full)" % inst)]
    # a second ttftrace target stops answering at 10m; a target that is not
    # ttftrace (node_exporter) is down too and must not page as ttftrace
    gone = healthy(t) + [series("ttftrace_build_info", dict(down, version="1"), "1x10"),
                         series("up", down, "1x10 0x30"),
                         series("up", {"job": "node", "instance": "node1:9100"}, "0x40")]
    yield "down", gone, [
        {"eval_time": "12m", "alertname": "TTFTraceDown", "exp_alerts": []},
        fires("30m", "TTFTraceDown", down,
              "ttftrace on %s is not scraped" % down["instance"]),
    ] + quiet("30m", ["TTFTraceAbsent"])


def run_tests(promtool, tmp_path, tests):
    t = tmp_path / "tests.yml"
    t.write_text(yaml.safe_dump({"rule_files": [RULES], "evaluation_interval": "1m",
                                 "tests": tests}))
    p = subprocess.run([promtool, "test", "rules", str(t)], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "SUCCESS" in p.stdout, p.stdout


def test_promtool_check_rules(promtool):
    p = subprocess.run([promtool, "check", "rules", RULES], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "SUCCESS: %d rules found" % len(rules()) in p.stdout, p.stdout


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_alerts_fire_and_stay_quiet(promtool, tmp_path, target):
    tests, covered = [], set()
    for name, inputs, alerts in scenarios(TARGETS[target]):
        tests.append({"name": name, "interval": "1m", "input_series": inputs,
                      "alert_rule_test": alerts})
        covered |= {a["alertname"] for a in alerts if a["exp_alerts"]}
    # every shipped alert but TTFTraceAbsent (below) fires in some scenario
    assert covered == set(rules()) - {"TTFTraceAbsent"}, covered
    run_tests(promtool, tmp_path, tests)


def test_absent_fires_without_any_ttftrace(promtool, tmp_path):
    other = series("up", {"job": "node", "instance": "node1:9100"}, "1x40")
    run_tests(promtool, tmp_path, [
        {"name": "no ttftrace", "interval": "1m", "input_series": [other],
         "alert_rule_test": [
             {"eval_time": "5m", "alertname": "TTFTraceAbsent", "exp_alerts": []},
             fires("15m", "TTFTraceAbsent", {}, "No ttftrace is scraped")]
         + quiet("15m", ["TTFTraceDown", "TTFTraceDroppingEvents"])},
    ])


def test_promtool_missing_fails_under_ci(tmp_path):
    """The fixture above: under CI=true a missing promtool fails, it does not skip."""
    env = dict(os.environ, CI="true", PATH=str(tmp_path))
    p = subprocess.run(["/usr/bin/python3", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-k", "check_rules", __file__], capture_output=True, text=True,
                       timeout=120, env=env, cwd=ROOT)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "CI=true: promtool is not installed" in p.stdout, p.stdout
