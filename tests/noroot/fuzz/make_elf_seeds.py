#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Write the seed corpora of fuzz_elf_sym and fuzz_profile
(tests/noroot/fuzz/corpus/<harness>/). Needs cc, strip and go (golang-go).

fuzz_elf_sym: real, small ELF files built here: a C program with symbols
(compact and default layouts), the same stripped (.dynsym only), a static
one without libc, a shared library, and `go_mini`: the functions main.hot
and main.main and the .go.buildinfo section copied byte for byte out of a
Go binary that golang-go builds from tests/root/uprobe/progs/hotgo, in a small
static ELF (a real Go binary is 1.8 MB; tests/noroot/fuzz/test_fuzz.py replays
one built at test time).
fuzz_profile: profiles/*.ini and variants."""
import glob
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, HERE)
from make_seeds import write  # noqa: E402

C_PROG = r"""
#include <stdio.h>
__attribute__((noinline)) int hot(int x) { return x > 7 ? x * 3 + 1 : x - 1; }
int main(int argc, char **argv) { printf("%d\n", hot(argc)); return 0; }
"""
C_LIB = r"""
__attribute__((noinline)) int hot_lib(int x) { return x + 7; }
int SSL_write(void *ssl, const void *buf, int n) { return n > 0 ? hot_lib(n) : -1; }
"""
C_STATIC = r"""
.text
.globl _start
.type _start,@function
_start:
  endbr64
  push %rbx
  xor %edi,%edi
  mov $60,%eax
  syscall
  pop %rbx
  ret
.size _start,.-_start
"""
COMPACT = ["-Wl,-z,noseparate-code", "-Wl,--build-id=none"]


def run(*cmd, **kw):
    subprocess.run(list(cmd), check=True, **kw)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def sections(blob):
    """{name: (sh_addr, sh_offset, sh_size)} of an ELF64 little-endian file."""
    shoff, = struct.unpack_from("<Q", blob, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", blob, 0x3a)
    hdrs = [struct.unpack_from("<IIQQQQIIQQ", blob, shoff + i * shentsize) for i in range(shnum)]
    strtab = hdrs[shstrndx]
    out = {}
    for h in hdrs:
        name = blob[strtab[4] + h[0]:blob.index(b"\0", strtab[4] + h[0])].decode()
        out[name] = (h[3], h[4], h[5])
    return out


def go_funcs(go, exe, names):
    """{name: bytes of the function} from `go tool nm -size`."""
    blob = read(exe)
    addr, off, _ = sections(blob)[".text"]
    nm = subprocess.run([go, "tool", "nm", "-size", exe], capture_output=True, text=True,
                        check=True).stdout
    out = {}
    for line in nm.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] == "T" and f[3] in names:
            a, n = int(f[0], 16), int(f[1])
            out[f[3]] = blob[a - addr + off:a - addr + off + n]
    return out


def asm_bytes(b):
    return "\n".join(".byte " + ",".join(str(x) for x in b[i:i + 16])
                     for i in range(0, len(b), 16))


def go_mini(tmp):
    go = shutil.which("go")
    if not go:
        sys.exit("make_elf_seeds: needs go (apt-get install golang-go)")
    src = os.path.join(tmp, "hotgo")
    shutil.copytree(os.path.join(ROOT, "tests", "root", "uprobe", "progs", "hotgo"), src)
    env = dict(os.environ, GOCACHE=os.path.join(tmp, "gocache"),
               GOPATH=os.path.join(tmp, "gopath"), GOFLAGS="-mod=mod", CGO_ENABLED="0",
               GOPROXY="off")
    exe = os.path.join(tmp, "hotgo.bin")
    run(go, "build", "-o", exe, ".", cwd=src, env=env)
    blob = read(exe)
    _, off, size = sections(blob)[".go.buildinfo"]
    funcs = go_funcs(go, exe, ("main.hot", "main.main"))
    s = ['.section .go.buildinfo,"aw"', asm_bytes(blob[off:off + size]), ".text",
         ".globl _start", "_start:", "xor %edi,%edi", "mov $60,%eax", "syscall"]
    for name, code in sorted(funcs.items()):
        s += ['.globl "%s"' % name, '.type "%s",@function' % name, '"%s":' % name,
              asm_bytes(code), '.size "%s",.-"%s"' % (name, name)]
    s += [".data", ".globl runtime.buildVersion", "runtime.buildVersion:", ".quad 0, 0"]
    asm = os.path.join(tmp, "go_mini.s")
    with open(asm, "w") as f:
        f.write("\n".join(s) + "\n")
    out = os.path.join(tmp, "go_mini")
    run("cc", "-nostdlib", "-static", *COMPACT, "-o", out, asm)
    return read(out)


def elf_seeds(tmp):
    c = os.path.join(tmp, "prog.c")
    with open(c, "w") as f:
        f.write(C_PROG)
    lib = os.path.join(tmp, "lib.c")
    with open(lib, "w") as f:
        f.write(C_LIB)
    st = os.path.join(tmp, "start.s")
    with open(st, "w") as f:
        f.write(C_STATIC)
    o = lambda n: os.path.join(tmp, n)  # noqa: E731
    run("cc", "-O2", "-rdynamic", *COMPACT, "-o", o("c_symbols"), c)
    run("cc", "-O2", "-o", o("c_default"), c)
    shutil.copy(o("c_symbols"), o("c_stripped"))
    run("strip", o("c_stripped"))
    run("cc", "-nostdlib", "-static", *COMPACT, "-o", o("c_static"), st)
    run("cc", "-O2", "-shared", "-fPIC", *COMPACT, "-o", o("libhot.so"), lib)
    for n in ("c_symbols", "c_default", "c_stripped", "c_static", "libhot.so"):
        write("elf_sym", n, read(o(n)))
    write("elf_sym", "go_mini", go_mini(tmp))


def profile_seeds():
    for p in sorted(glob.glob(os.path.join(ROOT, "profiles", "*.ini"))):
        write("profile", os.path.basename(p), read(p))
    write("profile", "batch_first", b"[engine]\nmatch = libx.so*\nmatch = /opt/*/x\n"
          b"[probe s]\nsymbol = x_step\nrole = step\n"
          b"batch = n_tokens:8, seq_id:16,pos:24\narg = llama_batch:16\n"
          b"[probe t]\nsymbol = x_tok\nrole = tokenize\nwant_return = no\narg = reg:2\n")
    write("profile", "specs", b"/usr/lib/libfoo.so:foo_step=step:llama_batch:8\n"
          b"libfoo.so*:foo_tok=tokenize:reg:3\nx:y=sync:stack:16\nllama_batch:0\n"
          b"n_tokens:0,pos:24,n_seq_id:32,seq_id:40,logits:48\n")
    write("profile", "errors", b"[engine]\nmatch = a\n[probe a]\nrole = stepp\n"
          b"want_return = maybe\n[other]\nk = v\nno equals\n")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        elf_seeds(tmp)
    profile_seeds()


if __name__ == "__main__":
    main()
