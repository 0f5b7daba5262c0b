# SPDX-License-Identifier: GPL-2.0-only
"""Hostile files (docs/deploy.md "Privileges and privacy", hostile input): ttftrace
runs as root and parses ELF files that the traced process (a container)
controls, to place uprobes.

- A truncated library that the server has mapped, and a corrupt file named
  by --probe: the real tracer skips each with a warning that names it, says
  what is wrong and what is lost, and traces the server's requests on.
- A chroot()ed process (chroot(1)) whose --probe path goes through a
  symlink to an absolute host path: the file is looked up inside the
  process's root (not found there: a warning), never the host file the
  symlink names, which a plain open of /proc/PID/root/... reaches; an
  absolute symlink that stays inside the root resolves there and its probe
  counts every call.
The resolver's own cases (openat2 and the fallback walk) are in
tests/unit/probe/test_proc_root.c, the parsers' fuzzing in tests/noroot/fuzz.
"""
import os
import shutil
import subprocess
import sys
import time

import pytest

from conftest import RT_ARGS, ROOT, SSE_SERVER, Client, needs_root, require_built

sys.path.insert(0, os.path.join(ROOT, "tests", "root", "uprobe"))
from test_uprobe import PROGS, Probe, Target, cc, wait_mapped  # noqa: E402

pytestmark = needs_root


def start_server(procs, tmp_path, env):
    require_built(SSE_SERVER)
    cmd = [SSE_SERVER, "--port", "0", "--log", str(tmp_path / "truth.ndjson")] + RT_ARGS
    srv = procs.add(subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env))
    line = srv.stdout.readline()
    assert line.startswith("listening on 127.0.0.1:"), line
    return srv, int(line.rsplit(":", 1)[1])


# LD_PRELOADed into the server: maps $TTF_MAP_EXEC executable, as a loader would,
# and never touches it (a DSO that ld.so loaded would be read again and fault
# with SIGBUS once cut short).
MAP_EXEC_C = r"""
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
__attribute__((constructor)) static void map_exec(void)
{
	const char *p = getenv("TTF_MAP_EXEC");
	struct stat st;
	int fd = p ? open(p, O_RDONLY) : -1;

	if (fd >= 0 && !fstat(fd, &st))
		mmap(NULL, st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
}
"""


def test_truncated_and_corrupt_elf_skipped_with_warning_tracing_goes_on(tmp_path, procs, tracer):
    lib = cc(tmp_path / "libvictim.so", "-shared", "-fPIC", os.path.join(PROGS, "libhot.c"))
    src = tmp_path / "map_exec.c"
    src.write_text(MAP_EXEC_C)
    helper = cc(tmp_path / "map_exec.so", "-shared", "-fPIC", src)
    srv, port = start_server(procs, tmp_path,
                             dict(os.environ, LD_PRELOAD=helper, TTF_MAP_EXEC=lib))
    wait_mapped(srv.pid, "libvictim.so")
    # cut the mapped library in half: ELF header kept, section headers gone
    os.truncate(lib, os.path.getsize(lib) // 2)
    garbage = tmp_path / "libgarbage.so"
    garbage.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 4)
    t = tracer("-p", srv.pid, "--probe", "libvictim.so:hot_lib=step",
               "--probe", "%s:hot_lib=tokenize" % garbage)
    c = Client(port)
    for _ in range(3):
        r = c.request(max_tokens=4)
        assert r.status == 200
    c.close()
    t.wait_requests(3, timeout_s=10)
    assert t.stop() == 0, t.stderr
    err = t.stderr
    root = "/proc/%d/root" % srv.pid
    assert ("Warning: skipping %s (opened as %s%s): malformed or truncated ELF file (section "
            "headers (offset " % (lib, root, lib)) in err, err
    assert "truncated); hot_lib not probed there: no engine steps" in err, err
    assert ("Warning: --probe %s:hot_lib: %s%s is not an ELF executable or library (malformed "
            "or truncated ELF file: " % (garbage, root, garbage)) in err, err
    assert "tokenize stage merges into frontend" in err, err
    reqs = t.requests()
    assert len(reqs) == 3, err
    assert all(r.get("ttft_ms", 0) > 0 for r in reqs), reqs


def wait_exe(pid, suffix, timeout_s=10):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            if os.readlink("/proc/%d/exe" % pid).endswith(suffix):
                return
        except OSError:
            pass
        time.sleep(0.02)
    pytest.fail("pid %d never ran %s" % (pid, suffix))


def test_probe_path_symlink_out_of_chroot_is_not_followed(tmp_path):
    if not shutil.which("chroot"):
        pytest.skip("needs chroot(1)")
    jail = tmp_path / "jail"
    (jail / "bin").mkdir(parents=True)
    cc(jail / "bin" / "hot", "-static", os.path.join(PROGS, "hot.c"))
    host = tmp_path / "host"
    host.mkdir()
    decoy = cc(host / "hot", "-static", "-DDECOY", os.path.join(PROGS, "hot.c"))
    os.symlink(str(host), str(jail / "evil"))  # absolute, to a host directory
    os.symlink("/bin", str(jail / "good"))  # absolute, inside the jail
    n = 200
    t = Target(["chroot", str(jail), "/bin/hot", str(n)])
    try:
        wait_exe(t.pid, "/jail/bin/hot")
        # what a plain open of /proc/PID/root/evil/hot reaches: the host's decoy
        assert os.stat("/proc/%d/root/evil/hot" % t.pid).st_ino == os.stat(decoy).st_ino
        p = Probe([t.pid], ["--probe", "/evil/hot:hot=step", "--probe", "/good/hot:hot=step"])
        t.go()
        rc, out = t.finish()
        assert rc == 0 and int(out) == sum(3 * i + 1 for i in range(n))
        res = p.result()
    finally:
        t.kill()
    log = "".join(p.log)
    assert ("--probe /evil/hot:hot: cannot open /evil/hot inside the root of PID %d (No such "
            "file or directory)" % t.pid) in log, log
    assert len(res["attachments"]) == 1, res
    a = res["attachments"][0]
    assert a["path"] == "/proc/%d/root/good/hot" % t.pid
    assert (a["hits"], a["returns"]) == (n, n)
