# SPDX-License-Identifier: GPL-2.0-only
"""libFuzzer harnesses (tests/noroot/fuzz/fuzz_*.c), CI tier: builds them with
`make fuzz`, replays every kept crashing input
(tests/noroot/fuzz/regressions/<harness>/) and the seed corpus, then fuzzes each
harness for TTF_FUZZ_SECONDS (default 20) from the seeds. A crash, a leak, a
sanitizer report or a harness check (abort) fails the test; the input that
did it is copied to tests/noroot/fuzz/regressions/<harness>/ to be kept.

The long runs (10 million executions per harness, tests/noroot/fuzz/long_run.sh) are
in docs/robustness.md "Robustness tests".
No root needed.
"""
import glob
import os
import shutil
import subprocess

import pytest

from conftest import cupti_build

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
OUT = os.path.join(ROOT, ".output", "fuzz")
HARNESSES = sorted(os.path.basename(p)[5:-2] for p in glob.glob(os.path.join(HERE, "fuzz_*.c")))
SECONDS = int(os.environ.get("TTF_FUZZ_SECONDS", "20"))
MAX_LEN = {"record": 65536, "elf_sym": 32768}
DICT = {"http_sse": "http_sse.dict", "sse": "http_sse.dict"}
# Harnesses of the CUPTI decoder: `make fuzz` leaves them out without CUDA 13's headers.
NEEDS_CUPTI = {"cupti_decode"}


def harness_params():
    b = cupti_build()
    return [pytest.param(n, marks=pytest.mark.skip(
                reason="fuzz_%s not built: %s (make CUDA_HOME=/path/to/cuda-13)"
                % (n, b["why"] or b["tests_why"])))
            if n in NEEDS_CUPTI and not b["tests"] else n for n in HARNESSES]


@pytest.fixture(scope="module")
def built():
    # A make of its own: a parent make's jobserver does not reach this process.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    jobs = "-j%d" % min(2, os.cpu_count() or 1)
    p = subprocess.run(["make", "--no-print-directory", jobs, "fuzz"], capture_output=True,
                       text=True, cwd=ROOT, env=env, timeout=900)
    if p.returncode and "libclang_rt.fuzzer" in p.stderr:
        pytest.skip("clang has no libFuzzer runtime (tools/setup.sh installs libclang-rt-14-dev)")
    assert p.returncode == 0, p.stderr[-3000:]
    return OUT


def run_fuzzer(exe, args, env=None, timeout=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([exe] + args, capture_output=True, text=True, cwd=ROOT, env=e,
                          timeout=timeout)


def keep_crashes(name, art_dir):
    kept = []
    dest = os.path.join(HERE, "regressions", name)
    for f in glob.glob(os.path.join(art_dir, "*")):
        os.makedirs(dest, exist_ok=True)
        shutil.copy(f, dest)
        kept.append(os.path.join(dest, os.path.basename(f)))
    return kept


@pytest.mark.parametrize("name", harness_params())
def test_regressions_and_seeds_replay_clean(built, name):
    exe = os.path.join(built, "fuzz_" + name)
    inputs = sorted(glob.glob(os.path.join(HERE, "regressions", name, "*")))
    inputs += sorted(glob.glob(os.path.join(HERE, "corpus", name, "*")))
    assert inputs, "no seeds for %s" % name
    # files as arguments: each input is run once
    p = run_fuzzer(exe, inputs, env={"FUZZ_RECORD_REPLAY": "1"}, timeout=300)
    assert p.returncode == 0, p.stderr[-4000:]
    assert "Executed" in p.stderr


@pytest.mark.parametrize("name", harness_params())
def test_short_fuzz_run_finds_no_crash(built, name, tmp_path):
    exe = os.path.join(built, "fuzz_" + name)
    work = tmp_path / "corpus"
    art = tmp_path / "artifacts"
    work.mkdir()
    art.mkdir()
    args = ["-max_total_time=%d" % SECONDS, "-max_len=%d" % MAX_LEN.get(name, 8192),
            "-rss_limit_mb=1024", "-timeout=10", "-close_fd_mask=2", "-print_final_stats=1",
            "-artifact_prefix=%s/" % art, str(work), os.path.join(HERE, "corpus", name)]
    if name in DICT:
        args.insert(0, "-dict=" + os.path.join(HERE, DICT[name]))
    env = {}
    if name == "record":
        # a replay pass through the whole pipeline too (slow: ~50 ms a run)
        env["FUZZ_RECORD_REPLAY"] = "1"
    p = run_fuzzer(exe, args, env=env, timeout=SECONDS + 300)
    kept = keep_crashes(name, str(art))
    assert p.returncode == 0 and not kept, (
        "fuzz_%s failed (rc %d); inputs kept: %s\n%s" % (name, p.returncode, kept,
                                                         p.stderr[-4000:]))
    runs = [l for l in p.stderr.splitlines() if "stat::number_of_executed_units" in l]
    assert runs and int(runs[0].split(":")[-1]) > 0, p.stderr[-2000:]


def elf_report(built, path):
    """What fuzz_elf_sym found in one file (FUZZ_ELF_VERBOSE): {name: fields}, is_go."""
    p = run_fuzzer(os.path.join(built, "fuzz_elf_sym"), [path], env={"FUZZ_ELF_VERBOSE": "1"},
                   timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    funcs = {}
    for line in p.stderr.splitlines():
        f = line.split()
        if f[:1] == ["func"]:
            funcs[f[1]] = {"vaddr": int(f[3], 16), "size": int(f[5]), "off": int(f[7], 16),
                           "dynsym": "dynsym" in f, "rets": int(f[f.index("rets") + 1]),
                           "entry": int(f[f.index("entry") + 1].lstrip("+"))}
    return funcs, "go 1" in p.stderr


def test_elf_sym_harness_resolves_real_files(built, tmp_path):
    """The harness's view of real files: the symbols `nm` lists, from .dynsym once stripped."""
    corpus = os.path.join(HERE, "corpus", "elf_sym")
    for name, dynsym in (("c_symbols", False), ("c_stripped", True), ("libhot.so", False)):
        path = os.path.join(corpus, name)
        nm = subprocess.run(["nm", "-D" if dynsym else "-n", path], capture_output=True,
                            text=True, check=True).stdout
        want = {l.split()[2]: int(l.split()[0], 16) for l in nm.splitlines()
                if len(l.split()) == 3 and l.split()[1] == "T"}
        funcs, go = elf_report(built, path)
        assert not go
        sym = "hot_lib" if name == "libhot.so" else "hot"
        assert funcs[sym]["vaddr"] == want[sym] and funcs[sym]["dynsym"] == dynsym, funcs
        assert funcs[sym]["rets"] >= 1, funcs


def test_elf_sym_harness_on_a_real_go_binary(built, tmp_path):
    """A Go binary built by golang-go (1.8 MB, too big for the corpus): Go detected, RET
    sites found, the entry site after the stack check."""
    go = shutil.which("go")
    if not go:
        pytest.skip("needs the Go toolchain (apt-get install golang-go)")
    src = tmp_path / "hotgo"
    shutil.copytree(os.path.join(ROOT, "tests", "root", "uprobe", "progs", "hotgo"), src)
    env = dict(os.environ, GOCACHE=str(tmp_path / "gocache"), GOPATH=str(tmp_path / "gopath"),
               GOFLAGS="-mod=mod", CGO_ENABLED="0", GOPROXY="off")
    exe = str(tmp_path / "hotgo.bin")
    subprocess.run([go, "build", "-o", exe, "."], cwd=src, env=env, check=True)
    funcs, is_go = elf_report(built, exe)
    assert is_go
    hot = funcs["main.main"]
    assert hot["rets"] >= 1 and 0 < hot["entry"] < hot["size"], funcs
