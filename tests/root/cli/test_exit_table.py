# SPDX-License-Identifier: GPL-2.0-only
"""One exit-code table (user/lib/exit.h, README "Exit codes") for the tracer
and every subcommand; each command's --help lists its codes from that table
and has examples; the tracer's --help lists the subcommands of user/main.c's
table; only an exact subcommand name dispatches. No root needed."""
import os
import re
import subprocess

import pytest

from conftest import ROOT, TTFTRACE, require_built

COMMANDS = ["pcie", "copybw", "replay", "report", "gpu-attach"]


def run(*args):
    require_built(TTFTRACE)
    return subprocess.run([TTFTRACE, *args], capture_output=True, text=True, timeout=30)


def readme_table():
    text = open(os.path.join(ROOT, "README.md")).read()
    section = text.split("## Exit codes\n", 1)[1].split("\n## ", 1)[0]
    return {int(m.group(1)) for m in re.finditer(r"^\| (\d+) \|", section, re.M)}


def header_table():
    text = open(os.path.join(ROOT, "user", "lib", "exit.h")).read()
    return {int(v) for v in re.findall(r"TTF_EXIT_\w+ = (\d+),", text)}


def help_codes(out):
    section = out.split("EXIT STATUS", 1)[1].split("\n\n", 1)[0]
    return [int(c) for c in re.findall(r"^  (\d+) ", section, re.M)]


def test_readme_and_header_are_one_table():
    assert readme_table() == header_table() == set(range(15))


@pytest.mark.parametrize("cmd", [None] + COMMANDS)
def test_help_lists_codes_of_the_table_and_examples(cmd):
    p = run(*([cmd] if cmd else []), "--help")
    assert p.returncode == 0, p.stderr
    assert "EXAMPLES:" in p.stdout and "EXIT STATUS" in p.stdout, p.stdout
    codes = help_codes(p.stdout)
    assert codes and codes == sorted(codes) and 0 in codes and 2 in codes, codes
    assert set(codes) <= readme_table(), codes
    if cmd:
        assert p.stdout.startswith("Usage: ttftrace %s " % cmd), p.stdout


def test_tracer_help_lists_the_subcommands():
    out = run("--help").stdout
    listed = re.findall(r"^  ([\w-]+) ", out.split("COMMANDS:", 1)[1].split("\n\n", 1)[0], re.M)
    assert listed == COMMANDS, out


@pytest.mark.parametrize("word", ["help", "pcei", "Report"])
def test_unknown_first_word_is_a_usage_error(word):
    p = run(word)
    assert p.returncode == 2, p.stderr
    assert p.stderr == ("Error: unexpected argument '%s' (the commands are: %s)\n"
                        "HINT: see `ttftrace --help`\n" % (word, ", ".join(COMMANDS)))
    assert p.stdout == ""


@pytest.mark.parametrize("cmd", COMMANDS)
def test_subcommand_usage_error_form(cmd):
    p = run(cmd, "--no-such-option")
    assert p.returncode == 2, p.stderr
    assert p.stderr == ("Error: unknown or incomplete option '--no-such-option'\n"
                        "HINT: see `ttftrace %s --help`\n" % cmd)
