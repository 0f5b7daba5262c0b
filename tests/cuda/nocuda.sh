#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# make cuda-none-check: ttftrace on a host without CUDA (docs/gpu.md "Building the
# collector"). A copy of the tree is built and tested in a mount namespace where every
# CUDA toolkit this machine has is hidden: each /usr/local/cuda-* under an empty tmpfs
# (so /usr/local/cuda and nvcc wrappers into it lead nowhere), Debian's /usr/include/cupti.h
# and cuda.h under /dev/null, CUDA_HOME unset. Checks: `make -j2 all` builds, says in one
# line that the collector is skipped, builds no collector and no tests/unit/cupti;
# --version and the tracer's start-up line say it was not built and how to build it;
# `tests/run.sh $TIERS` (default: unit noroot) passes with the CUPTI tests skipped, with
# the reason. TIERS=all runs every tier, as `make test` does; the copy then borrows this
# tree's demo engine, model and npm test tools (tools/setup.sh installed them here).
# Needs root (unshare -m); about 10 minutes on 2 cores (a full build, the fuzz build).
# Usage: [TIERS=...] tests/cuda/nocuda.sh [OUTDIR]   (default .output/nocuda; the copy is OUTDIR/tree)
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=$(realpath -m "${1:-.output/nocuda}")
W=$OUT/tree

if [ "$(id -u)" != 0 ]; then
	echo "Error: tests/cuda/nocuda.sh needs root (a mount namespace hides the CUDA toolkits)" >&2
	echo "HINT: run it as root: sudo make cuda-none-check" >&2
	exit 3
fi
rm -rf "$W"
mkdir -p "$W"
# tracked and untracked-but-not-ignored files: the tree as it is, without .output or ./ttftrace
git ls-files -co --exclude-standard -z | xargs -0 -I{} sh -c '[ -e "{}" ] && printf "%s\0" "{}"' \
	| tar --null -cf - -T - | tar -xf - -C "$W"
TIERS=${TIERS:-unit noroot}
[ "$TIERS" = all ] && TIERS=
for d in tools/demo/llama-server tools/demo/model tools/demo/node_modules \
	 tests/root/export/.otlp-npm tests/root/export/trace_engine/node_modules; do
	[ -e "$d" ] && ln -s "$PWD/$d" "$W/$d"
done
export TIERS

# shellcheck disable=SC2016
exec unshare -m bash -c '
set -euo pipefail
hidden=()
for d in /usr/local/cuda-*; do
	[ -d "$d" ] && [ ! -L "$d" ] && mount -t tmpfs none "$d" && hidden+=("$d")
done
for f in /usr/include/cupti.h /usr/include/cuda.h; do
	[ -e "$f" ] && mount --bind /dev/null "$f" && hidden+=("$f")
done
echo "hidden: ${hidden[*]:-nothing (no CUDA on this machine)}"
cd "$1"
unset CUDA_HOME
fail() { echo "FAIL: $*" >&2; exit 1; }
start=$(date +%s)
make -j2 all > "$2/build.log" 2>&1 || { tail -30 "$2/build.log"; fail "make all"; }
echo "build: $(( $(date +%s) - start )) s"
grep "SKIP.*CUPTI" "$2/build.log" || fail "no line saying the collector is skipped"
[ "$(grep -c "SKIP.*CUPTI" "$2/build.log")" = 1 ] || fail "more than one skip line"
grep -q "^built=0$" .output/cupti.conf || fail ".output/cupti.conf: $(cat .output/cupti.conf)"
[ ! -e .output/libttftrace-cupti.so ] || fail "the collector was built"
[ ! -e .output/tests/unit/cupti ] || fail "tests/unit/cupti was built"
./ttftrace --version | tee "$2/version.txt"
grep -q "^cupti collector not built: .*make CUDA_HOME=" "$2/version.txt" || fail "--version"
./ttftrace -c "sleep 0.3" > /dev/null 2> "$2/startup.txt" || true
grep "^GPU: the CUPTI collector was not built" "$2/startup.txt" \
	|| { cat "$2/startup.txt"; fail "start-up line"; }
start=$(date +%s)
rc=0
# shellcheck disable=SC2086
tests/run.sh $TIERS > "$2/tests.log" 2>&1 || rc=$?
echo "tests/run.sh ${TIERS:-(every tier)}: rc $rc, $(( $(date +%s) - start )) s"
tail -25 "$2/tests.log"
[ "$rc" = 0 ] || fail "tests/run.sh ${TIERS:-(every tier)}"
grep -q "SKIPPED.*not built: no " "$2/tests.log" \
	|| fail "no CUPTI test reported skipped with the reason"
echo "PASS: built and tested without CUDA"
' nocuda "$W" "$OUT"
