#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# make container-test: deploy/docker/Dockerfile built and run with Debian's podman,
# without a registry. Debian 12 (bookworm, minbase) is debootstrapped from the Debian
# mirror and imported as the base image under the names the Dockerfile's FROM lines
# use (debian:12, debian:12-slim; --pull=never), in a podman store of its own
# ($(OUTPUT)/container). Then, each a check that fails the run:
#   1. the image builds from the Dockerfile as it is, its context cut by
#      Dockerfile.dockerignore; the build stage's /src holds only what it lets through
#   2. `ttftrace --version` in the image: the version and the commit of this tree
#   3. the image traces: ttftrace in it, run as docs/deploy.md says (--pid=host, the
#      three capabilities, seccomp unconfined), follows a request to the fixture
#      server on the host
#   4. `apt-get install ./ttftrace_*.deb` (make deb) in the bare base image pulls the
#      run-time libraries from the mirror, and /usr/bin/ttftrace --version runs
# Needs root and the network to the Debian mirror (DEBIAN_MIRROR); installs podman,
# runc and debootstrap when absent. runc, not crun: crun refuses a hybrid cgroup
# tree (cgroup v1 with a v2 hierarchy that has controllers); docs/deploy.md.
# Usage: tests/container/run.sh OUTDIR DEB
set -euo pipefail
cd "$(dirname "$0")/../.."

out=${1:?usage: run.sh OUTDIR DEB}
deb=${2:?usage: run.sh OUTDIR DEB}
# the Debian mirror: the one apt uses here for bookworm/main, unless DEBIAN_MIRROR says
mirror=${DEBIAN_MIRROR:-$(apt-cache policy 2>/dev/null |
	sed -n 's|^ *[0-9]* \(http[^ ]*\) bookworm/main .*|\1|p' | head -1)}
err() { echo "Error: $1" >&2; [ -n "${2:-}" ] && echo "HINT: $2" >&2; exit 1; }
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "PASS: $*"; }

[ "$(id -u)" -eq 0 ] || err "make container-test needs root (debootstrap, podman)" "run it as root"
[ -n "$mirror" ] || err "no Debian 12 mirror: apt has no bookworm/main source" \
	"DEBIAN_MIRROR=http://MIRROR/debian make container-test"
missing=()
for p in podman runc debootstrap; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "container-test: installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get -oDPkg::Lock::Timeout=300 install -y -qq \
		--no-install-recommends "${missing[@]}" >/dev/null
fi

mkdir -p "$out"
out=$(realpath "$out")
# a store of its own: the base image's names never shadow another user's debian:12
pm=(podman --root "$out/storage" --runroot "$out/run" --runtime runc --cgroup-manager cgroupfs)
# the limits a container gets: podman's defaults (RLIMIT_NOFILE 1048576, RLIMIT_NPROC
# 4194304) are over this machine's hard limits, which root cannot raise without
# CAP_SYS_RESOURCE; runc then fails with "error setting rlimit type 7" (6: NPROC).
# 16384 each, or lower: 65536 processes failed here under a hard limit of 96369.
n=$(ulimit -Hn); [ "$n" = unlimited ] || [ "$n" -gt 16384 ] && n=16384
u=$(ulimit -Hu); [ "$u" = unlimited ] || [ "$u" -gt 16384 ] && u=16384
lim=(--ulimit "nofile=$n:$n" --ulimit "nproc=$u:$u")
t0=$SECONDS

# --- the base image: bookworm minbase from the mirror --------------------------------
# kept as a tarball: a root tree under $(OUTPUT) would put etc/*.d where the
# Makefile's -include of $(OUTPUT)/*/.../*.d looks
base=$out/bookworm-minbase.tar
if [ ! -f "$base" ]; then
	rootfs=$(mktemp -d /var/tmp/ttftrace-debootstrap.XXXXXX)
	echo "container-test: debootstrap --variant=minbase bookworm from $mirror"
	debootstrap --variant=minbase bookworm "$rootfs" "$mirror" > "$out/debootstrap.log" 2>&1 ||
		{ tail -5 "$out/debootstrap.log" >&2; rm -rf "$rootfs"
		  err "debootstrap failed" "is $mirror reachable? (DEBIAN_MIRROR=...)"; }
	rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
	tar -C "$rootfs" -cf "$base.tmp" . && mv "$base.tmp" "$base"
	rm -rf "$rootfs"
fi
"${pm[@]}" import -q --change 'CMD ["/bin/bash"]' "$base" localhost/ttftrace-base:bookworm >/dev/null
"${pm[@]}" tag localhost/ttftrace-base:bookworm docker.io/library/debian:12 \
	docker.io/library/debian:12-slim
ok "base image: debootstrap bookworm minbase, imported as debian:12 and debian:12-slim ($((SECONDS - t0)) s)"

# --- 1. the image, from the Dockerfile as it is ---------------------------------------
commit=$(git describe --always --dirty --abbrev=12)
t=$SECONDS
"${pm[@]}" build --pull=never --network host "${lim[@]}" \
	-f deploy/docker/Dockerfile --ignorefile deploy/docker/Dockerfile.dockerignore \
	--build-arg TTF_GIT_COMMIT="$commit" -t localhost/ttftrace:test . > "$out/build.log" 2>&1 ||
	{ tail -20 "$out/build.log" >&2; fail "podman build (log: $out/build.log)"; }
size=$("${pm[@]}" image inspect --format '{{.Size}}' localhost/ttftrace:test)
ok "podman build -f deploy/docker/Dockerfile: $((SECONDS - t)) s, image $((size / 1000000)) MB"

# the context: the build stage's /src, less what make wrote, against the ignore file
"${pm[@]}" build --pull=never --network host "${lim[@]}" --target build \
	-f deploy/docker/Dockerfile --ignorefile deploy/docker/Dockerfile.dockerignore \
	--build-arg TTF_GIT_COMMIT="$commit" -t localhost/ttftrace-build:test . > "$out/build-stage.log" 2>&1 ||
	fail "podman build --target build (log: $out/build-stage.log)"
src=$("${pm[@]}" run --rm "${lim[@]}" --entrypoint sh localhost/ttftrace-build:test -c \
	'cd /src && ls -A | grep -vx .output | sort | tr "\n" " "; echo; du -sk --exclude=.output . | cut -f1')
want="LICENSE Makefile bpf cupti deploy profiles user vmlinux "
[ "$(echo "$src" | head -1)" = "$want" ] || fail "build context /src holds: $(echo "$src" | head -1) (want: $want)"
ok "build context: $want($(echo "$src" | tail -1) KiB)"

# --- 2. ttftrace --version in the image -----------------------------------------------
v=$("${pm[@]}" run --rm "${lim[@]}" localhost/ttftrace:test --version) ||
	fail "ttftrace --version in the image: $v"
want_v=$(sed -n 's/^#define TTF_VERSION "\(.*\)"$/\1/p' user/lib/version.h)
[ "$(echo "$v" | sed -n 1p)" = "ttftrace $want_v" ] && [ "$(echo "$v" | sed -n 2p)" = "commit $commit" ] ||
	fail "ttftrace --version in the image said: $v"
ok "ttftrace --version in the image: $(echo "$v" | head -2 | tr '\n' ' ')"

# --- 3. the image traces a request on the host ----------------------------------------
srv_out=$out/sse_server.out
.output/tests/fixtures/sse_server --port 0 --ttft-ms 40 --itl-ms 5 --tokens 4 > "$srv_out" &
srv=$!
trap 'kill $srv 2>/dev/null || true' EXIT
for _ in $(seq 50); do grep -q listening "$srv_out" && break; sleep 0.1; done
port=$(sed -n 's/^listening on 127.0.0.1://p' "$srv_out")
[ -n "$port" ] || fail "the fixture server did not start"
"${pm[@]}" rm -f ttftrace-test >/dev/null 2>&1 || true
"${pm[@]}" run -d --name ttftrace-test --pid=host --network host "${lim[@]}" \
	--cap-drop all --cap-add BPF --cap-add PERFMON --cap-add SYS_PTRACE \
	--security-opt seccomp=unconfined localhost/ttftrace:test --json -p "$srv" >/dev/null
for _ in $(seq 300); do
	"${pm[@]}" logs ttftrace-test 2>&1 | grep -q "Hit Ctrl-C to end" && break
	"${pm[@]}" container exists ttftrace-test || break
	sleep 0.1
done
"${pm[@]}" logs ttftrace-test 2>&1 | grep -q "Hit Ctrl-C to end" ||
	{ "${pm[@]}" logs ttftrace-test >&2 || true; fail "ttftrace in the container did not attach"; }
code=$(curl -sS -N -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
	-d '{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}' \
	"http://127.0.0.1:$port/v1/chat/completions")
[ "$code" = 200 ] || fail "curl to the fixture server: HTTP $code"
sleep 0.5
"${pm[@]}" kill --signal INT ttftrace-test >/dev/null
rc=$("${pm[@]}" wait ttftrace-test)
"${pm[@]}" logs ttftrace-test > "$out/trace.ndjson" 2>&1 || true
"${pm[@]}" rm -f ttftrace-test >/dev/null 2>&1 || true
[ "$rc" = 0 ] || { cat "$out/trace.ndjson" >&2; fail "ttftrace in the container exited $rc"; }
req=$(grep '"type":"request"' "$out/trace.ndjson" || true)
[ "$(echo "$req" | grep -c .)" = 1 ] && echo "$req" | grep -q '"status":200' &&
	echo "$req" | grep -q '"tokens":4' && echo "$req" | grep -q "\"pid\":$srv," ||
	{ cat "$out/trace.ndjson" >&2; fail "ttftrace in the container: not one 200 request of 4 tokens from PID $srv"; }
ok "ttftrace in the container (--pid=host, CAP_BPF CAP_PERFMON CAP_SYS_PTRACE) traced the host's request: ttft_ms $(echo "$req" | sed 's/.*"ttft_ms":\([0-9.]*\).*/\1/')"

# --- 4. the .deb on a bare Debian 12: apt pulls the run-time libraries -----------------
t=$SECONDS
log=$out/deb-install.log
"${pm[@]}" run --rm --network host "${lim[@]}" -v "$(realpath "$deb"):/tmp/$(basename "$deb"):ro" \
	localhost/ttftrace-base:bookworm sh -c "set -e
		apt-get update -qq
		if dpkg-query -W libbpf1 2>/dev/null; then echo 'libbpf1 is in the bare image'; exit 1; fi
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends /tmp/$(basename "$deb")
		dpkg-query -W libbpf1 libelf1 libcjson1 libinih1 libmicrohttpd12 libcapstone4
		/usr/bin/ttftrace --version" > "$log" 2>&1 ||
	{ tail -20 "$log" >&2; fail "apt-get install of $(basename "$deb") in the bare base image (log: $log)"; }
grep -q "^commit $commit" "$log" || fail "the package's ttftrace --version (log: $log)"
ok "apt-get install ./$(basename "$deb") on bare bookworm: $(grep -c '^Setting up' "$log") packages set up, --version runs ($((SECONDS - t)) s)"
echo "container-test: all checks passed ($((SECONDS - t0)) s)"
