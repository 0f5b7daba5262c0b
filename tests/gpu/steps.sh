# SPDX-License-Identifier: GPL-2.0-only
# The steps of tests/gpu/run.sh (sourced; its variables and helpers in scope).
# Every step writes its raw outputs under $W and one $W/steps/NAME.json.

# --- environment: GPU facts, CUPTI headers and library, or the dry stand-ins ----------
env_probe() {
	if [ "$DRY" = 1 ]; then
		NVSMI=(cat "$ROOT/tests/gpu/dry/nvidia-smi-q.txt")
		NVSMI_IDLE=(cat "$ROOT/tests/gpu/dry/nvidia-smi-q-idle.txt")
		SYSFS=$ROOT/tests/noroot/pcie/trees/busy_gen4
		SYSFS_IDLE=$ROOT/tests/noroot/pcie/trees/idle_gen1
		export FAKE_PINNED_GBPS=4 FAKE_PAGEABLE_GBPS=2
		echo '{"dry": true}' >"$W/env.json"
	else
		NVSMI=(nvidia-smi -q)
		NVSMI_IDLE=(nvidia-smi -q)
		SYSFS=/sys
		SYSFS_IDLE=/sys
		nvidia-smi -L >"$W/nvidia-smi-L.txt" 2>&1
		timeout 60 "$PY" -c 'import json,torch,os;print(json.dumps({"torch":torch.__version__,"cuda":torch.version.cuda,"gpu":torch.cuda.is_available(),"name":torch.cuda.get_device_name(0),"site":os.path.dirname(os.path.dirname(torch.__file__))}))' \
			>"$W/env.json" 2>>"$LOG" || echo '{"error": "PyTorch not importable"}' >"$W/env.json"
	fi
	uname -r >"$W/uname.txt"
	SITE=$("$PY" -c 'import json,sys;print(json.load(open(sys.argv[1])).get("site",""))' "$W/env.json")
	note "env: $(cat "$W/env.json")"
}

find_cuda() {
	local d s
	INC=()
	for d in "${CUDA_HOME:-}" /usr/local/cuda /usr/local/cuda-13.0 /usr/local/cuda-12; do
		[ -n "$d" ] || continue
		for s in include extras/CUPTI/include targets/x86_64-linux/include; do
			{ [ -f "$d/$s/cupti.h" ] || [ -f "$d/$s/cuda.h" ]; } && INC+=("-I$d/$s")
		done
	done
	for s in "$SITE"/nvidia/*/include; do
		[ -d "$s" ] && INC+=("-I$s")
	done
	CUPTI_LIB=${TTFTRACE_CUPTI_LIB:-}
	for f in "$SITE"/nvidia/cu13/lib/libcupti.so.13 "$SITE"/nvidia/cuda_cupti/lib/libcupti.so.1[23] \
		 "${CUDA_HOME:-/usr/local/cuda}"/extras/CUPTI/lib64/libcupti.so.1[23] \
		 /usr/local/cuda/lib64/libcupti.so.1[23]; do
		[ -z "$CUPTI_LIB" ] && [ -f "$f" ] && CUPTI_LIB=$f
	done
	CUDART=${TTF_CUDART:-}
	for f in "$SITE"/nvidia/cu13/lib/libcudart.so.13 "$SITE"/nvidia/cuda_runtime/lib/libcudart.so.1[23] \
		 /usr/local/cuda/lib64/libcudart.so.1[23]; do
		[ -z "$CUDART" ] && [ -f "$f" ] && CUDART=$f
	done
}

# --- build: everything with $CC (and nvcc for known_work), no BPF toolchain -----------
build() {
	local cf="-O2 -g -std=gnu11 -D_GNU_SOURCE -Wall -I$ROOT"
	find_cuda
	note "build: includes ${INC[*]}; libcupti ${CUPTI_LIB:-none}; libcudart ${CUDART:-none}"
	BUILD_WHY="ttftrace not built ($TTF)"
	[ -x "$TTF" ] || return 1
	$CC $cf tests/drivers/cupti_rx/main.c user/probe/gpu_rx.c user/model/gpu_store.c \
		user/model/gpu_join.c -o "$W/cupti_rx" >>"$LOG" 2>&1 || { BUILD_WHY="cupti_rx"; return 1; }
	if [ "$DRY" = 1 ]; then
		$CC $cf "${INC[@]}" -fPIC -shared tests/gpu/dry/gpu_feed.c cupti/sender.c cupti/clock.c \
			-lpthread -o "$W/libgpu_feed.so" >>"$LOG" 2>&1 || { BUILD_WHY="gpu_feed"; return 1; }
		$CC -O2 -Wall -fPIC -shared tests/gpu/dry/fake_cudart.c -o "$W/libcudart.so" \
			>>"$LOG" 2>&1 || { BUILD_WHY="fake cudart"; return 1; }
		CUDART=$W/libcudart.so
		ATTACH_LIB=$ROOT/.output/libttftrace-cupti.so
		return 0
	fi
	$CC $cf "${INC[@]}" -fPIC -shared cupti/*.c -ldl -lpthread -o "$W/libttftrace-cupti.so" \
		>>"$LOG" 2>&1 || { BUILD_WHY="libttftrace-cupti.so (see run.log)"; return 1; }
	${NVCC:-nvcc} -O2 -o "$W/known_work" tests/gpu/known_work.cu >>"$LOG" 2>&1 ||
		note "nvcc could not build known_work.cu (see run.log)"
	return 0
}

INJECT() { # env assignments that inject the collector (or nothing in the dry run)
	[ "$DRY" = 1 ] && return
	echo "CUDA_INJECTION64_PATH=$W/libttftrace-cupti.so TTFTRACE_CUPTI_SOCK=$SOCK" \
	     "${CUPTI_LIB:+TTFTRACE_CUPTI_LIB=$CUPTI_LIB}"
}

server_cmd() { # $1 = feed socket (dry run)
	if [ "$DRY" = 1 ]; then
		echo "$PY $ROOT/tests/gpu/server.py $PORT --dry $W/libgpu_feed.so $1"
	else
		echo "$PY $ROOT/tests/gpu/server.py $PORT"
	fi
}

wait_ready() { # $1 = server stdout file, $2 = pid that must live
	for _ in $(seq 1 600); do
		grep -q '"ready"' "$1" 2>/dev/null && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.2
	done
	return 1
}

server_pid() { "$PY" -c 'import json,sys;print(json.loads(open(sys.argv[1]).readline())["pid"])' "$1"; }

stop_pid() { # pid, then wait for it up to 10 s
	kill -TERM "$1" 2>/dev/null
	for _ in $(seq 1 100); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
	kill -KILL "$1" 2>/dev/null
}

load() { # tag, n, concurrency, first id
	timeout 180 "$PY" tests/gpu/load.py "$PORT" "$2" --concurrency "$3" --first "$4" \
		--prompt "$PROMPT" >"$W/load-$1.json" 2>>"$LOG" || note "load $1 failed"
}

# --- known: spin kernels, copies, a graph, under the collector -------------------------
step_known() {
	local rx
	if [ "$DRY" != 1 ] && [ ! -x "$W/known_work" ]; then
		step known skip "known_work.cu did not build (nvcc)"
		return
	fi
	"$W/cupti_rx" -s "$SOCK" -r "$W/known-spans.txt" -o "$W/known-rx.json" 2>>"$LOG" &
	rx=$!
	PIDS+=("$rx")
	sleep 0.3
	if [ "$DRY" = 1 ]; then
		(cd tests/gpu/dry && timeout 60 "$PY" known_work.py "$W/libgpu_feed.so" "$SOCK") \
			>"$W/known.txt" 2>>"$LOG"
	else
		env $(INJECT) timeout 60 "$W/known_work" >"$W/known.txt" 2>>"$LOG"
	fi
	local rc=$?
	sleep 0.5
	kill -TERM "$rx"
	wait "$rx" 2>/dev/null
	[ $rc = 0 ] && step known ok "" || step known fail "known work exited $rc"
}

# --- tracer: ttftrace -c on the server, collector injected, c=1 then c=8 ----------------
step_tracer() {
	local tp
	: >"$W/windows.txt"
	env $(INJECT) TTFTRACE_CUPTI_SOCK="$SOCK" WINDOWS_FILE="$W/windows.txt" \
		timeout 300 "$TTF" --json -o "$W/tracer.ndjson" -c "$(server_cmd "$SOCK")" \
		>"$W/server-tracer.out" 2>"$W/tracer.err" &
	tp=$!
	PIDS+=("$tp")
	if ! wait_ready "$W/server-tracer.out" "$tp"; then
		step tracer fail "ttftrace or the server did not start: $(grep -m1 -i 'error' "$W/tracer.err")"
		stop_pid "$tp"
		return
	fi
	sleep 1
	load tracer-c1 "$N1" 1 1
	load tracer-c8 "$N8" 8 101
	stop_pid "$(server_pid "$W/server-tracer.out")"
	wait "$tp" 2>/dev/null
	step tracer ok ""
}

# --- copybw: ttftrace copybw and PyTorch's own copies, same sizes -----------------------
COPY_SIZES=16777216,67108864,268435456
step_copybw() {
	local dry_rt=()
	[ "$DRY" = 1 ] && dry_rt=(--cudart "$CUDART")
	if [ -z "${CUDART:-}" ]; then
		step copybw skip "no libcudart found"
		return
	fi
	timeout 120 "$TTF" copybw --cudart "$CUDART" -s 16M,64M,256M -n 10 -w 3 -j -r "$SYSFS" \
		>"$W/copybw.json" 2>>"$LOG" || note "copybw exited $?"
	timeout 120 "$PY" tests/gpu/copy_ref.py "$COPY_SIZES" 10 3 "${dry_rt[@]}" \
		>"$W/copy-ref.json" 2>>"$LOG" || note "copy_ref exited $?"
	step copybw ok ""
}

# --- pcie: ttftrace pcie against nvidia-smi -q, idle and under copy load ----------------
step_pcie() {
	local busy=() bg dry_rt=()
	"${NVSMI_IDLE[@]}" >"$W/nvsmi-idle.txt" 2>>"$LOG"
	timeout 60 "$TTF" pcie -j -r "$SYSFS_IDLE" >"$W/pcie-idle.json" 2>>"$LOG"
	[ "$DRY" = 1 ] && dry_rt=(--cudart "$CUDART")
	timeout 60 "$PY" tests/gpu/copy_ref.py 268435456 400 0 "${dry_rt[@]}" >/dev/null 2>>"$LOG" &
	bg=$!
	PIDS+=("$bg")
	sleep 1.5
	"${NVSMI[@]}" >"$W/nvsmi-busy.txt" 2>>"$LOG"
	timeout 60 "$TTF" pcie -j --busy -r "$SYSFS" >"$W/pcie-busy.json" 2>>"$LOG"
	echo "pcie --busy exit $?" >>"$LOG"
	kill -TERM "$bg" 2>/dev/null
	wait "$bg" 2>/dev/null
	for f in current_link_speed current_link_width max_link_speed max_link_width; do
		for d in "$SYSFS"/bus/pci/devices/*; do
			[ "$(cat "$d/vendor" 2>/dev/null)" = 0x10de ] &&
				echo "$(basename "$d") $f $(cat "$d/$f" 2>/dev/null | tr ' ' _)"
		done
	done >"$W/sysfs-links.txt"
	step pcie ok ""
}

# --- attach: gpu-attach on a server started without injection ---------------------------
step_attach() {
	local sp pid rx rc
	: >"$W/windows-attach.txt"
	env WINDOWS_FILE="$W/windows-attach.txt" ${CUPTI_LIB:+TTFTRACE_CUPTI_LIB=$CUPTI_LIB} \
		$(server_cmd @ttftrace-gpu-check-nobody) \
		>"$W/server-attach.out" 2>"$W/server-attach.err" &
	sp=$!
	PIDS+=("$sp")
	if ! wait_ready "$W/server-attach.out" "$sp"; then
		step attach fail "server did not start (see server-attach.err)"
		return
	fi
	pid=$(server_pid "$W/server-attach.out")
	load attach-before "$N1" 1 201
	timeout 60 "$TTF" gpu-attach -p "$pid" --sock "$SOCK" \
		--lib "${ATTACH_LIB:-$W/libttftrace-cupti.so}" >"$W/attach1.out" 2>&1
	rc=$?
	"$W/cupti_rx" -s "$SOCK" -o "$W/attach-rx.json" 2>>"$LOG" &
	rx=$!
	PIDS+=("$rx")
	sleep 1.5
	load attach-after "$N1" 1 301
	timeout 60 "$TTF" gpu-attach -p "$pid" --sock "$SOCK" --wait-ms 0 \
		--lib "${ATTACH_LIB:-$W/libttftrace-cupti.so}" >"$W/attach2.out" 2>&1
	echo "{\"first_rc\": $rc, \"second_rc\": $?}" >"$W/attach-rc.json"
	stop_pid "$sp"
	kill -TERM "$rx"
	wait "$rx" 2>/dev/null
	step attach ok ""
}
