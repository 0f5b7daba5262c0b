#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# ttftrace overhead against no tracer and a bpftrace baseline (root).
#
# Two targets: the demo llama.cpp server (tools/demo/server.mjs) and the
# fixture engine (.output/tests/fixtures/engine, profiles/fixture.ini). At each
# concurrency (CONCURRENCY, default 1 8 16 64) one server runs ROUNDS rounds of loadgen under each
# configuration, interleaved and rotated per round (N T B, T B N, B N T, ...)
# so that slow drift of a noisy machine hits all alike:
#   N  no tracer;
#   T  ttftrace with its default probe families (net + sched + engine profile:
#      auto llamacpp on the demo, --profile profiles/fixture.ini on the fixture);
#   B  bench/bpftrace_baseline.bt: the same socket and scheduler tracepoints and
#      engine uprobes in bpftrace, printing a few fields per event to a file.
# In round 1 one more round, E, runs with an empty BPF program on every hook
# ttftrace uses (bench/empty_hooks.bpf.c, same tp_btf hooks and uprobes).
# Prints throughput (tokens/s) and TTFT p50/p99 ratios against N, per target
# and concurrency, and per BPF program the ns/run of ttftrace's, the empty
# program's on the same hook, and bpftrace's, from the kernel's BPF run-time
# stats (kernel.bpf_stats_enabled: on only during T, B and E rounds, restored
# after each; the stats add two clock reads per program run to T and B alike).
#
# Settings (environment): ROUNDS (3) rounds per configuration; CONCURRENCY
# ("1 8 16 64"); requests per round DEMO_N1 (24), DEMO_N8 (48), DEMO_N16 (64),
# DEMO_N64 (128), FIX_N1 (48), FIX_N8 (96), FIX_N16 (192), FIX_N64 (384), for
# other concurrencies 4 x c (at least 24); P (64) prompt characters, M (32)
# max tokens; fixture costs
# FIX_DECODE_US (1000) per decode step, FIX_PREFILL_US (20) per prompt token,
# FIX_TOKENIZE_US (1) per prompt token; TARGETS ("demo fixture"); KEEP=1 keeps
# the work directory. The demo server runs --parallel 1 at c=1 and --parallel 8
# above; the fixture engine --slots 64.
# tracefs is mounted on /sys/kernel/tracing for bpftrace's tracepoints when it
# is missing, and unmounted at exit.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3} P=${P:-64} M=${M:-32}
CONCURRENCY=${CONCURRENCY:-1 8 16 64}
DEMO_N1=${DEMO_N1:-24} DEMO_N8=${DEMO_N8:-48} DEMO_N16=${DEMO_N16:-64} DEMO_N64=${DEMO_N64:-128}
FIX_N1=${FIX_N1:-48} FIX_N8=${FIX_N8:-96} FIX_N16=${FIX_N16:-192} FIX_N64=${FIX_N64:-384}
export CONCURRENCY
FIX_DECODE_US=${FIX_DECODE_US:-1000} FIX_PREFILL_US=${FIX_PREFILL_US:-20}
FIX_TOKENIZE_US=${FIX_TOKENIZE_US:-1}
TARGETS=${TARGETS:-demo fixture}
TTFTRACE=${TTFTRACE:-./ttftrace}
LOADGEN=${LOADGEN:-.output/bin/loadgen}
ENGINE=${ENGINE:-.output/tests/fixtures/engine}
STATS=/proc/sys/kernel/bpf_stats_enabled
TRACEFS=/sys/kernel/tracing
. tools/lib.sh

[ "$(id -u)" -eq 0 ] || die "the benchmark loads BPF programs and must run as root" \
	"sudo bench/overhead.sh"
[ -x "$TTFTRACE" ] && [ -x "$LOADGEN" ] && [ -x "$ENGINE" ] ||
	die "ttftrace, loadgen or the fixture engine not built" "make"
case " $TARGETS " in *" demo "*)
	[ -f tools/demo/model/demo.gguf ] && [ -d tools/demo/node_modules/node-llama-cpp ] ||
		die "the demo engine or model is not installed" "tools/demo/install.sh";;
esac
for t in bpftool bpftrace clang gcc; do
	command -v "$t" >/dev/null || die "$t not found" "tools/setup.sh"
done
[ -w "$STATS" ] || die "cannot write $STATS" "needs root and a kernel with BPF stats"

work=$(mktemp -d /tmp/ttftrace-overhead.XXXXXX)
stats_orig=$(cat "$STATS")
server_pid= tracer_pid= mounted_tracefs=

cleanup() {
	echo "$stats_orig" >"$STATS" 2>/dev/null || true
	stop "$tracer_pid" INT
	stop "$server_pid" TERM
	[ -z "$mounted_tracefs" ] || umount "$TRACEFS" 2>/dev/null || true
	if [ "${KEEP:-0}" = 1 ]; then
		echo "overhead: work files kept in $work" >&2
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ ! -e "$TRACEFS/events/sock/sock_send_length" ]; then
	mount -t tracefs nodev "$TRACEFS" ||
		die "cannot mount tracefs on $TRACEFS (bpftrace's tracepoint probes need it)"
	mounted_tracefs=1
fi

# The empty-program object and its loader (not part of the ttftrace build).
clang -g -O2 -target bpf -D__TARGET_ARCH_"$(uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')" \
	-I "vmlinux/$(uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')" \
	-c bench/empty_hooks.bpf.c -o "$work/empty_hooks.bpf.o" || die "cannot build empty_hooks.bpf.o"
gcc -O2 -Wall -Wextra bench/empty_hooks.c -o "$work/empty_hooks" -lbpf ||
	die "cannot build empty_hooks"

# load C N OUT: one round of N chat requests at concurrency C.
load() {
	"$LOADGEN" -u "http://127.0.0.1:$port/v1/chat/completions" -c "$1" -n "$2" -P "$P" -m "$M" \
		--include-usage -q -o "$3" || die "loadgen failed (exit $?)" "see $3"
}

# BPF program ids process $1 holds open (kernel fdinfo "prog_id:"), one a line.
prog_ids() {
	grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -un
}

cpu_ticks() {
	awk '{print $14 + $15}' /proc/"$1"/stat
}

# Engine uprobes of target $1 as PATH:SYMBOL:ROLE lines (what ttftrace's profile attaches).
uprobe_specs() {
	if [ "$1" = fixture ]; then
		echo "$(realpath "$ENGINE"):fixture_decode:step"
		echo "$(realpath "$ENGINE"):fixture_tokenize:other"
	else
		local lib
		lib=$(grep -o '/[^ ]*libllama\.v[^ ]*\.so' /proc/"$server_pid"/maps | head -1)
		[ -n "$lib" ] || die "libllama is not mapped in the demo server"
		for s in llama_decode:step llama_tokenize:other llama_sampler_sample:other \
			 llama_synchronize:other; do
			echo "$lib:$s"
		done
	fi
}

# bpftrace script for the server: the baseline plus its engine uprobes.
bpftrace_script() {
	cat bench/bpftrace_baseline.bt
	uprobe_specs "$1" | while IFS=: read -r path sym role; do
		if [ "$role" = step ]; then
			# llama_batch in memory at sp + 8: n_tokens and the first token's seq id.
			printf 'uprobe:"%s":%s /pid == $1/ { $b = reg("sp") + 8; ' "$path" "$sym"
			printf 'printf("S %%d %%llu %%d %%d\\n", tid, nsecs, *(int32 *)$b, '
			printf '*(int32 *)(*(uint64 *)(*(uint64 *)($b + 40)))); }\n'
		else
			printf 'uprobe:"%s":%s /pid == $1/ { printf("U %%d %%llu\\n", tid, nsecs); }\n' \
				"$path" "$sym"
		fi
		printf 'uretprobe:"%s":%s /pid == $1/ { printf("u %%d %%llu %%d\\n", tid, nsecs, retval); }\n' \
			"$path" "$sym"
	done
}

# attach CFG TAG: start the tracer of configuration CFG (T, B, E) for round TAG;
# sets tracer_pid and bpf_pid (the process holding the BPF programs).
attach() {
	local log="$work/$2.log" specs
	case $1 in
	T)
		local prof=()
		[ "$target" = fixture ] && prof=(--profile profiles/fixture.ini)
		"$TTFTRACE" --port "$port" "${prof[@]}" --json -o "$work/$2.ndjson" \
			>"$work/$2.out" 2>"$log" &
		tracer_pid=$! bpf_pid=$!
		wait_for "$log" "Tracing" 60 "$tracer_pid" ||
			die "ttftrace did not start" "$(cat "$log")"
		;;
	B)
		bpftrace_script "$target" >"$work/$target.bt"
		# timeout: an async job of a script ignores SIGINT, and bpftrace stops on
		# SIGINT only; timeout's child starts with its default (and forwards it).
		BPFTRACE_STRLEN=200 timeout -s INT 3600 bpftrace -o "$work/$2.out" \
			"$work/$target.bt" "$server_pid" "$port" 2>"$log" &
		tracer_pid=$!
		wait_for "$work/$2.out" "^Attaching" 120 "$tracer_pid" ||
			die "bpftrace did not start" "$(cat "$log")"
		sleep 1	# "Attaching" is printed before the probes are attached
		bpf_pid=$(cat /proc/"$tracer_pid"/task/*/children | awk '{print $1}')
		;;
	E)
		mapfile -t specs < <(uprobe_specs "$target" | cut -d: -f1,2)
		"$work/empty_hooks" "$work/empty_hooks.bpf.o" "${specs[@]}" >"$work/$2.out" 2>"$log" &
		tracer_pid=$! bpf_pid=$!
		wait_for "$work/$2.out" "^attached" 30 "$tracer_pid" ||
			die "empty_hooks did not start" "$(cat "$log")"
		;;
	esac
}

# round CFG C N TAG: one loadgen round under configuration CFG.
round() {
	local tag=$4
	if [ "$1" = N ]; then
		load "$2" "$3" "$work/$tag.json"
		return
	fi
	attach "$1" "$tag"
	prog_ids "$bpf_pid" >"$work/$tag.ids"
	cpu0=$(cpu_ticks "$bpf_pid")
	echo 1 >"$STATS"
	load "$2" "$3" "$work/$tag.json"
	# Programs unload with their process: read the stats while it runs.
	bpftool prog show -j >"$work/$tag.bpf.json"
	echo "$stats_orig" >"$STATS"
	echo $(($(cpu_ticks "$bpf_pid") - cpu0)) >"$work/$tag.cputicks"
	stop "$tracer_pid" INT
	tracer_pid=
}

start_server() {
	local out="$work/server-$target-c$c.out" log="$work/server-$target-c$c.log"
	if [ "$target" = demo ]; then
		node tools/demo/server.mjs --port 0 --parallel "$(( c < 8 ? c : 8 ))" >"$out" 2>"$log" &
	else
		"$ENGINE" --port 0 --slots 64 --decode-us "$FIX_DECODE_US" \
			--prefill-us-per-token "$FIX_PREFILL_US" \
			--tokenize-us-per-token "$FIX_TOKENIZE_US" >"$out" 2>"$log" &
	fi
	server_pid=$!
	wait_for "$out" "^listening on " 120 "$server_pid" ||
		die "the $target server did not start" "$(cat "$log")"
	port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$out")
}

echo "overhead: targets $TARGETS; c=${CONCURRENCY// /,}; $ROUNDS rounds of N (no tracer), T (ttftrace)," \
	"B (bpftrace) each, rotated; E (empty programs) once; $P-character prompts, $M tokens;" \
	"work in $work"
t0=$(date +%s)
for target in $TARGETS; do
	for c in $CONCURRENCY; do
		var=$( [ "$target" = demo ] && echo DEMO || echo FIX )_N$c
		n=${!var:-$((c * 4 > 24 ? c * 4 : 24))}
		start_server
		load "$c" "$c" "$work/warmup-$target-c$c.json"
		echo "overhead: $target c=$c: server pid $server_pid port $port, $n requests per round" \
			"($(($(date +%s) - t0)) s so far)"
		cfgs=(N T B)
		for r in $(seq "$ROUNDS"); do
			for i in 0 1 2; do
				cfg=${cfgs[$(((i + r - 1) % 3))]}
				round "$cfg" "$c" "$n" "$target-c$c-$cfg-$r"
			done
			[ "$r" -ne 1 ] || round E "$c" "$n" "$target-c$c-E-1"
		done
		stop "$server_pid" TERM
		server_pid=
	done
done
echo "overhead: done in $(($(date +%s) - t0)) s"
echo
python3 bench/overhead_report.py "$work" "$ROUNDS" "$(getconf CLK_TCK)" $TARGETS
