#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The long fuzzing runs recorded in docs/robustness.md "Robustness tests": each harness
# (built with `make fuzz`) for RUNS executions (default 10 million), one after
# the other (each uses one core).
#   tests/noroot/fuzz/long_run.sh [name...]      default: every harness
# Corpus grows in $DIR/work/<name>, crashes land in $DIR/artifacts/<name>/
# (copy them to tests/noroot/fuzz/regressions/<name>/), the log with libFuzzer's
# final stats in $DIR/log_<name>.txt. DIR (default .output/fuzz) other than
# that: the harnesses are copied there first, so that a rebuild meanwhile
# (make fuzz, make test) neither replaces nor blocks the running binary.
set -euo pipefail
cd "$(dirname "$0")/../../.."
RUNS=${RUNS:-10000000}
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
	for f in tests/noroot/fuzz/fuzz_*.c; do
		n=$(basename "$f" .c); names+=("${n#fuzz_}")
	done
fi
DIR=${DIR:-.output/fuzz}
make --no-print-directory -j2 fuzz FUZZ_NAMES="${names[*]}"
for h in "${names[@]}"; do
	mkdir -p "$DIR"/work/$h "$DIR"/artifacts/$h
	[ "$DIR" = .output/fuzz ] || cp .output/fuzz/fuzz_$h "$DIR"/
	args=(-runs="$RUNS" -max_len=8192 -print_final_stats=1 -rss_limit_mb=1024 -close_fd_mask=2
	      -artifact_prefix="$DIR"/artifacts/$h/)
	case $h in
	http_sse|sse) args+=(-dict=tests/noroot/fuzz/http_sse.dict) ;;
	record) args+=(-max_len=65536) ;;
	elf_sym) args+=(-max_len=32768) ;;	# the seeds are whole ELF files
	esac
	rc=0
	start=$(date +%s)
	"$DIR"/fuzz_$h "${args[@]}" "$DIR"/work/$h tests/noroot/fuzz/corpus/$h \
		> "$DIR"/log_$h.txt 2>&1 || rc=$?
	echo "$h: rc $rc, $(grep -E 'number_of_executed_units|average_exec_per_sec' \
		"$DIR"/log_$h.txt | awk '{print $2}' | paste -sd' ') (runs, exec/s), $(( $(date +%s) - start )) s"
done
