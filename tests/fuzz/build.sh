#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Build the libFuzzer harnesses: tests/fuzz/fuzz_<name>.c -> .output/fuzz/fuzz_<name>,
# compiled with clang -fsanitize=fuzzer,address,undefined together with the
# project sources they exercise (user/*.c but main.c; cupti/decode.c + cbid.c).
#   tests/fuzz/build.sh [name...]     default: every harness
# Needs clang with libFuzzer (Debian: clang-14 + libclang-rt-14-dev, tools/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."

OUT=${OUTPUT:-.output}/fuzz
CLANG=${CLANG:-clang}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda-13.0}
SAN="-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"
CFLAGS="-g -O1 -std=gnu11 -D_GNU_SOURCE -I. -I${OUTPUT:-.output} -Wall -Wno-unused-parameter"
LDLIBS="-lbpf -lelf -lz -lcjson -lm -lpthread -lcapstone -linih -lmicrohttpd -lcurl -ldl"

mkdir -p "$OUT/obj"
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
	for f in tests/fuzz/fuzz_*.c; do
		n=$(basename "$f" .c); names+=("${n#fuzz_}")
	done
fi

# Project objects, instrumented (fuzzer-no-link: coverage without a second main).
objs=()
need_user=0
for n in "${names[@]}"; do [ "$n" != cupti_decode ] && need_user=1; done
if [ $need_user = 1 ]; then
	# user/*/*.c include the BPF skeletons; `make` generates them
	for s in user/*/*.c; do
		
		o="$OUT/obj/$(basename "$s" .c).o"
		if [ ! -e "$o" ] || [ "$s" -nt "$o" ] || [ -n "$(find user bpf -name '*.h' -newer "$o" -print -quit)" ]; then
			$CLANG $CFLAGS -fsanitize=fuzzer-no-link,address,undefined -c "$s" -o "$o"
		fi
		objs+=("$o")
	done
fi

for n in "${names[@]}"; do
	src=tests/fuzz/fuzz_$n.c
	[ -f "$src" ] || { echo "Error: no harness $src" >&2; exit 2; }
	if [ "$n" = record ]; then
		# the reader with small buffers: 4 MiB per open costs 13 ms under ASan
		$CLANG $CFLAGS -fsanitize=fuzzer-no-link,address,undefined \
			-DREAD_BUF_BYTES='(64u << 10)' -DGZ_BUF_BYTES='(16u << 10)' \
			-c user/export/record_read.c -o "$OUT/obj/record_read_small.o"
		lib=()
		for o in "${objs[@]}"; do [ "$o" != "$OUT/obj/record_read.o" ] && lib+=("$o"); done
		$CLANG $CFLAGS $SAN "$src" "$OUT/obj/record_read_small.o" "${lib[@]}" $LDLIBS \
			-o "$OUT/fuzz_$n"
	elif [ "$n" = cupti_decode ]; then
		$CLANG $CFLAGS $SAN -I"$CUDA_HOME/include" "$src" cupti/decode.c cupti/cbid.c \
			-o "$OUT/fuzz_$n"
	else
		$CLANG $CFLAGS $SAN "$src" "${objs[@]}" $LDLIBS -o "$OUT/fuzz_$n"
	fi
	echo "  FUZZ     $OUT/fuzz_$n"
done
