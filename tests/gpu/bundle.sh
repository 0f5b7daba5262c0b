#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Pack ./ttftrace and the shared libraries it needs beyond glibc into
# .output/gpu-bundle, for a GPU machine that has CUDA, PyTorch and a C
# compiler but no BPF toolchain (docs/gpu.md "The GPU check"). There:
#   .output/gpu-bundle/run-there.sh      (writes results under $OUT or .output)
set -euo pipefail
cd "$(dirname "$0")/../.."
B=.output/gpu-bundle
[ -x ttftrace ] || { echo "Error: ./ttftrace is not built" >&2; echo "HINT: run make first" >&2; exit 1; }
rm -rf "$B"
mkdir -p "$B/lib"
cp ttftrace "$B/"
ldd ttftrace | awk '/=> \//{print $3}' |
	grep -vE '/(libc|libm|libresolv|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
	xargs -I{} cp -L {} "$B/lib/"
cat >"$B/run-there.sh" <<'EOS'
#!/usr/bin/env bash
# Run the GPU check with the bundled ttftrace; results in ${OUT:-.output/gpu-out}.
cd "$(dirname "$0")/../.."
O=${OUT:-$PWD/.output/gpu-out}
mkdir -p "$O"
export LD_LIBRARY_PATH=$PWD/.output/gpu-bundle/lib
[ -d /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
ulimit -l unlimited
{ uname -a; ls -la /sys/kernel/btf/vmlinux; nvidia-smi -L; nvcc --version | tail -1; } >"$O/probe.txt" 2>&1
GPU_WORK=/tmp/gpu-check-w TTFTRACE=$PWD/.output/gpu-bundle/ttftrace timeout 450 \
	tests/gpu/run.sh "$O/results.json" >"$O/stdout.txt" 2>&1
echo "run.sh exit $?" >>"$O/stdout.txt"
tar czf "$O/work.tgz" -C /tmp gpu-check-w
tail -60 "$O/stdout.txt"
EOS
chmod +x "$B/run-there.sh"
du -sh "$B"
