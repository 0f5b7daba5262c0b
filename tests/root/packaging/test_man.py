# SPDX-License-Identifier: GPL-2.0-only
"""The man page ttftrace(8) and the bash completion.

The page renders with groff's warnings on and `man -l` says nothing on
stderr; it has a section for every command, and names every option that a
command's --help lists (so an option added to --help and not to the page
fails here). The completion offers every such option too.
"""
import os
import re
import shutil
import subprocess

import pytest

from conftest import ROOT, TTFTRACE, require_built

MAN = os.path.join(ROOT, "deploy", "man", "ttftrace.8")
COMPLETION = os.path.join(ROOT, "deploy", "completion", "ttftrace.bash")
COMMANDS = ["pcie", "copybw", "replay", "report", "gpu-attach"]


def help_options(cmd):
    """Long and short options of `ttftrace [cmd] --help`."""
    require_built(TTFTRACE)
    p = subprocess.run([TTFTRACE] + ([cmd] if cmd else []) + ["--help"], capture_output=True,
                       text=True, timeout=30, env=dict(os.environ, COLUMNS="200"))
    assert p.returncode == 0, p.stderr
    opts = set()
    for line in p.stdout.splitlines():
        m = re.match(r"^ {2}(-\S, )?(--[a-z0-9-]+)", line) or re.match(r"^ {2}(-\S)(,|$| )", line)
        if not m:
            m2 = re.match(r"^ {6}(--[a-z0-9-]+)", line)
            if m2:
                opts.add(m2.group(1))
            continue
        for g in m.groups():
            if g and g.startswith("-"):
                opts.add(g.rstrip(", "))
    assert "--help" in opts or "-h" in opts, opts
    return opts


def rendered():
    env = dict(os.environ, MANWIDTH="80", LANG="C.UTF-8")
    p = subprocess.run(["man", "-l", "-Tutf8", MAN], capture_output=True, text=True,
                       timeout=60, env=env)
    return p


def section(text, title, level="SS"):
    """The man source from `.SH title` to the next .SH, or `.SS title` to the next heading."""
    end = r"^\.SH " if level == "SH" else r"^\.S[HS] "
    m = re.search(r"^\.%s %s\b.*?(?=%s)" % (level, re.escape(title), end), text, re.M | re.S)
    assert m, title
    return m.group(0)


def man_options(src):
    """Options in roff source: \\-\\-name and \\-x, with roff's escapes undone."""
    plain = src.replace("\\-", "-").replace("\\fB", "").replace("\\fP", "").replace("\\fI", "")
    return set(re.findall(r"(?<![\w-])(--[a-z0-9-]+|-[a-zA-Z?])(?![\w-])", plain))


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_man_page_renders_without_warnings():
    p = subprocess.run(["groff", "-ww", "-z", "-man", MAN], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0 and not p.stderr, p.stderr
    if shutil.which("man"):
        p = rendered()
        assert p.returncode == 0 and not p.stderr, p.stderr
        text = re.sub(".\x08", "", p.stdout)    # no terminal: bold and underline overstruck
        for h in ("NAME", "SYNOPSIS", "DESCRIPTION", "TRACE OPTIONS", "COMMANDS",
                  "EXIT STATUS", "ENVIRONMENT", "FILES", "PRIVILEGES", "EXAMPLES"):
            assert re.search(r"^%s$" % h, text, re.M), h
        assert max(len(l) for l in text.splitlines()) <= 80


def test_man_page_names_every_option():
    with open(MAN) as f:
        src = f.read()
    missing = []
    trace = man_options(section(src, "TRACE OPTIONS", "SH"))
    missing += ["ttftrace " + o for o in help_options("") - trace]
    for cmd in COMMANDS:
        sec = man_options(section(src, "ttftrace " + cmd.replace("-", "\\-")))
        # every command has -h/--help (said once, above the commands)
        missing += ["ttftrace %s %s" % (cmd, o) for o in help_options(cmd) - sec - {"-h", "--help"}]
    assert not missing, missing
    # the exit codes are the README's table
    with open(os.path.join(ROOT, "README.md")) as f:
        readme_codes = set(re.findall(r"^\| (\d+) \|", f.read(), re.M))
    man_codes = set(re.findall(r"^\.B (\d+)$", section(src, "EXIT STATUS", "SH"), re.M))
    assert man_codes == readme_codes, (man_codes, readme_codes)


def test_completion_offers_every_option():
    with open(COMPLETION) as f:
        src = f.read()
    assert subprocess.run(["bash", "-n", COMPLETION], timeout=30).returncode == 0
    lists = dict(re.findall(r'^_ttftrace_opts_(\w+)="([^"]*)"', src, re.M))
    missing = []
    for cmd in [""] + COMMANDS:
        key = cmd.replace("-", "_") or "trace"
        have = set(lists[key].split())
        missing += ["%s %s" % (cmd or "ttftrace", o) for o in help_options(cmd) - have]
    assert not missing, missing


def test_completion_completes():
    """bash itself, with the completion sourced: commands, options, fixed values."""
    script = r'''
source %s
c() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _ttftrace; echo "${COMPREPLY[*]}"; }
c ttftrace gpu
c ttftrace --net-source s
c ttftrace pcie --bu
c ttftrace copybw --memory p
c ttftrace --inter
''' % COMPLETION
    p = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["gpu-attach", "sock syscall", "--busy",
                                     "pinned pageable", "--interval"], p.stdout
