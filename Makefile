# SPDX-License-Identifier: GPL-2.0-only
# ttftrace build. Everything generated goes to $(OUTPUT).
#   make            build ./ttftrace, tools, fixtures, unit tests
#   make build-deps ttftrace   only the tracer: its build packages, then ./ttftrace
#   make demo       install deps, start the demo llama.cpp server, trace a load
#   make test       install deps, build, run every test tier
#   make vmlinux    regenerate vmlinux/<arch>/vmlinux.h from $(VMLINUX_BTF)
#   make fuzz       build the libFuzzer harnesses (tests/noroot/fuzz) into $(OUTPUT)/fuzz
#   make gpu-check  the CUPTI collector on a real GPU (needs one; not in `make test`)
#   make cuda-none-check, cuda-headers-check   builds without CUDA, with CUDA 11.8 headers
#   make golden     remake the replay recordings and their truth (tests/root/replay/data), print the diff
#   make qemu-test  the smoke tier on Debian's 6.1 kernel under QEMU/TCG (not in `make test`)
#   make deb        a Debian package, .output/deb/ttftrace_VERSION_ARCH.deb
#   make container-test  build and run deploy/docker/Dockerfile with podman, no registry (not in `make test`)
#   make qemu-test-5.10   the same on Debian 11's 5.10 kernel
#   make qemu-test-arm64  the same on Debian 12's arm64 6.1 kernel (cross build, .output-arm64)
#   make ARCH=arm64       cross build into .output-arm64 (tools/setup.sh --arm64 installs what it needs)
#   make vmlinux-arm64    regenerate vmlinux/arm64/vmlinux.h from Debian's arm64 kernel
#   make V=1        show full commands

CLANG ?= clang
BPFTOOL ?= bpftool
CC ?= cc
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
# CUDA headers for the CUPTI collector (cupti/): CUDA_HOME if set, else the first
# of /usr/local/cuda, the newest /usr/local/cuda-*, nvcc on PATH (its ../) and /usr
# (Debian's nvidia-cuda-dev + libcupti-dev) that has cupti.h (include/ or
# extras/CUPTI/include/) and cuda.h. None: the collector and tests/unit/cupti are
# left out, the rest builds (docs/gpu.md "Building the collector").
cupti_h_dir = $(patsubst %/cupti.h,%,$(firstword $(wildcard $(1)/include/cupti.h $(1)/extras/CUPTI/include/cupti.h)))
cuda_ok = $(if $(and $(call cupti_h_dir,$(1)),$(wildcard $(1)/include/cuda.h)),$(1))
ifeq ($(origin CUDA_HOME),undefined)
CUDA_HOME := $(firstword $(foreach d,/usr/local/cuda \
	$(shell ls -d /usr/local/cuda-[0-9]* 2>/dev/null | sort -rV) \
	$(patsubst %/bin/nvcc,%,$(shell command -v nvcc 2>/dev/null)) /usr,$(call cuda_ok,$(d))))
endif
CUPTI_INC := $(if $(call cuda_ok,$(CUDA_HOME)),$(call cupti_h_dir,$(CUDA_HOME)))
# -I for both dirs, but never /usr/include (a system dir: -I would reorder it)
CUPTI_CFLAGS := $(addprefix -I,$(filter-out /usr/include,$(sort $(CUPTI_INC) \
	$(if $(CUPTI_INC),$(CUDA_HOME)/include))))
# tests/unit/cupti, fuzz_cupti_decode and bench/cupti_decode write CUDA 13 records
# (CUpti_ActivityKernel10): with older headers only the collector is built.
CUPTI_API := $(if $(CUPTI_INC),$(shell sed -n 's/^\#define CUPTI_API_VERSION \([0-9]*\).*/\1/p' \
	$(CUPTI_INC)/cupti_version.h))
CUPTI_TESTS := $(if $(CUPTI_API),$(shell [ $(CUPTI_API) -ge 130000 ] && echo 1))
CUPTI_TESTS_NOTE := $(if $(CUPTI_INC),CUDA 13 headers needed$(if $(CUPTI_TESTS),, (CUPTI_API_VERSION \
	$(or $(CUPTI_API),unknown) in $(CUPTI_INC))))
CUPTI_NOTE := $(if $(CUDA_HOME),no cupti.h and cuda.h under CUDA_HOME=$(CUDA_HOME),no CUDA \
	headers in /usr/local/cuda /usr/local/cuda-* the ../ of nvcc or /usr)
HOST_ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/;s/ppc64le/powerpc/;s/s390x/s390/;s/riscv64/riscv/')
ARCH := $(HOST_ARCH)
ifeq ($(filter x86 arm64 powerpc s390 riscv,$(ARCH)),)
$(error unsupported architecture $(ARCH))
endif
VMLINUX_DIR := vmlinux/$(ARCH)
# A cross build (make ARCH=arm64 on x86-64): gcc-aarch64-linux-gnu with Debian's
# arm64 libraries (multiarch, tools/setup.sh --arm64), BPF for arm64, everything
# into .output-arm64, the binary .output-arm64/ttftrace.
ifneq ($(ARCH),$(HOST_ARCH))
ifneq ($(ARCH)-$(HOST_ARCH),arm64-x86)
$(error cross builds go from x86 to arm64 only (ARCH=arm64))
endif
CROSS ?= aarch64-linux-gnu-
CC := $(CROSS)gcc
OUTPUT ?= .output-$(ARCH)
TTFTRACE := $(OUTPUT)/ttftrace
else
OUTPUT ?= .output
TTFTRACE := ttftrace
endif

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

DEPFLAGS = -MMD -MP
CFLAGS ?= -g -O2
override CFLAGS += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare \
	-Wno-missing-field-initializers -Werror -D_GNU_SOURCE -I. -I$(OUTPUT)
LDLIBS = -lbpf -lelf -lz -lcjson -lm -lpthread -lcapstone -linih -lmicrohttpd -lcurl

# clang's default system include dirs, added with -idirafter so that BPF code
# finds <asm/types.h> on multiarch distributions (libbpf-tools does the same).
CLANG_BPF_SYS_INCLUDES ?= $(shell $(CLANG) -v -E - </dev/null 2>&1 \
	| sed -n '/<...> search starts here:/,/End of search list./{ s| \(/.*\)|-idirafter \1|p }')
BPF_CFLAGS = -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -I. -I$(VMLINUX_DIR) \
	$(CLANG_BPF_SYS_INCLUDES) -Wall -Werror

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/bpf/%.bpf.o,$(BPF_SRCS))
SKELS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))

USER_SRCS := $(wildcard user/*.c user/*/*.c user/*/*/*.c)
USER_OBJS := $(patsubst %.c,$(OUTPUT)/%.o,$(USER_SRCS))
# Everything but main(): linked into unit tests and tools.
LIB_OBJS := $(filter-out $(OUTPUT)/user/main.o,$(USER_OBJS))

# tools/<name>/*.c (what a user runs: loadgen) and tests/drivers/<name>/*.c (test
# drivers: cupti_rx, mkrec, sched-probe, uprobe-probe), each with a main.c -> $(OUTPUT)/bin/<name>
TOOL_DIRS := $(patsubst %/main.c,%,$(wildcard tools/*/main.c tests/drivers/*/main.c))
TOOL_NAMES := $(notdir $(TOOL_DIRS))
TOOL_BINS := $(addprefix $(OUTPUT)/bin/,$(TOOL_NAMES))

# tests/fixtures/<name>.c -> $(OUTPUT)/tests/fixtures/<name> (standalone programs)
FIXTURE_SRCS := $(wildcard tests/fixtures/*.c)
FIXTURE_BINS := $(patsubst %.c,$(OUTPUT)/%,$(FIXTURE_SRCS))

# tests/unit/<layer>/test_<name>.c -> $(OUTPUT)/tests/unit/<layer>/test_<name> (cmocka),
# grouped as user/ is (cupti/: the injected collector)
UNIT_SRCS := $(wildcard tests/unit/*/test_*.c)
ifeq ($(CUPTI_TESTS),)
UNIT_SRCS := $(filter-out tests/unit/cupti/%,$(UNIT_SRCS))
endif
# hand-assembled x86-64 functions for the RET-site scanner (capstone x86 only)
ifneq ($(ARCH),x86)
UNIT_SRCS := $(filter-out tests/unit/probe/test_elf_sym.c,$(UNIT_SRCS))
endif
UNIT_BINS := $(patsubst %.c,$(OUTPUT)/%,$(UNIT_SRCS))

# cupti/*.c -> $(OUTPUT)/libttftrace-cupti.so (injected into CUDA processes)
CUPTI_SRCS := $(wildcard cupti/*.c)
CUPTI_OBJS := $(patsubst %.c,$(OUTPUT)/%.pic.o,$(CUPTI_SRCS))
CUPTI_LIB := $(if $(CUPTI_INC),$(if $(CUPTI_SRCS),$(OUTPUT)/libttftrace-cupti.so))

.DELETE_ON_ERROR:
.SECONDARY:
.PHONY: all clean demo test unit golden vmlinux deps fuzz gpu-check qemu-test qemu-test-5.10 qemu-test-arm64 vmlinux-arm64 demo-hops bench-quick bench-cost bench-memory

all: $(TTFTRACE) $(TOOL_BINS) $(FIXTURE_BINS) $(UNIT_BINS) $(CUPTI_LIB) $(if $(CUPTI_TESTS),,cupti-skipped)

# What the build found, for the tests (tests/conftest.py cupti_build()) and for
# --version (user/cmd/cupti_build.c): rewritten only when it changes.
CUPTI_CONF := $(OUTPUT)/cupti.conf
.PHONY: cupti-conf-check cupti-skipped
cupti-conf-check:
$(CUPTI_CONF): cupti-conf-check | $(OUTPUT)
	$(Q)printf 'built=%s\ncuda_home=%s\ncflags=%s\nwhy=%s\napi=%s\ntests=%s\ntests_why=%s\n' \
		'$(if $(CUPTI_INC),1,0)' '$(CUDA_HOME)' '$(CUPTI_CFLAGS)' \
		'$(if $(CUPTI_INC),,$(CUPTI_NOTE))' '$(CUPTI_API)' '$(if $(CUPTI_TESTS),1,0)' \
		'$(if $(CUPTI_TESTS),,$(or $(CUPTI_TESTS_NOTE),$(CUPTI_NOTE)))' > $@.tmp
	$(Q)cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@
all: $(CUPTI_CONF)

cupti-skipped:
ifeq ($(CUPTI_INC),)
	@echo "  SKIP     CUPTI collector and tests/unit/cupti: $(CUPTI_NOTE) (build them with make CUDA_HOME=/path/to/cuda)"
else
	@echo "  SKIP     tests/unit/cupti: $(CUPTI_TESTS_NOTE); the collector is built"
endif

$(OUTPUT) $(OUTPUT)/bpf $(OUTPUT)/user $(OUTPUT)/bin $(OUTPUT)/tests/unit $(OUTPUT)/tests/fixtures $(OUTPUT)/cupti:
	$(Q)mkdir -p $@

# arm64: the scheduler's flight recorder publishes with a fetching atomic
# add, which clang emits from -mcpu=v3 (docs/kernel.md B4.1)
$(OUTPUT)/bpf/sched.bpf.o: BPF_CFLAGS += $(if $(filter arm64,$(ARCH)),-mcpu=v3)

$(OUTPUT)/bpf/%.bpf.o: bpf/%.bpf.c $(VMLINUX_DIR)/vmlinux.h | $(OUTPUT)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(OUTPUT)/%.skel.h: $(OUTPUT)/bpf/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

# The commit for --version (user/lib/version.h); only cli.c uses it.
GIT_COMMIT := $(shell git describe --always --dirty --abbrev=12 2>/dev/null || echo unknown)
$(OUTPUT)/user/cmd/cli.o: override CFLAGS += -DTTF_GIT_COMMIT='"$(GIT_COMMIT)"'
# Whether the collector is built, for --version and the start-up line.
$(OUTPUT)/user/cmd/cupti_build.o: override CFLAGS += -DTTF_CUPTI_BUILT=$(if $(CUPTI_INC),1,0) \
	-DTTF_CUPTI_CUDA_HOME='"$(CUDA_HOME)"' -DTTF_CUPTI_NOTE='"$(CUPTI_NOTE)"'
$(OUTPUT)/user/cmd/cupti_build.o: $(CUPTI_CONF)

$(OUTPUT)/user/%.o: user/%.c | $(OUTPUT)/user $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

# The `ttftrace report` page template, compiled into user/export/html/html_report.c as a C string.
$(OUTPUT)/report_template.h: user/export/html/report_template.html | $(OUTPUT)
	$(call msg,GEN,$@)
	$(Q){ echo 'static const char report_template_html[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; \
	  echo ';'; } > $@.tmp && mv $@.tmp $@

$(OUTPUT)/user/export/html/html_report.o: $(OUTPUT)/report_template.h

$(TTFTRACE): $(USER_OBJS)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

$(OUTPUT)/tools/%.o: tools/%.c | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

$(OUTPUT)/tests/drivers/%.o: tests/drivers/%.c | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

.SECONDEXPANSION:
$(OUTPUT)/bin/%: $$(patsubst %.c,$(OUTPUT)/%.o,$$(wildcard tools/$$*/*.c tests/drivers/$$*/*.c)) $(LIB_OBJS) | $(OUTPUT)/bin
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LDLIBS) -lcurl -ldl -o $@

$(OUTPUT)/tests/fixtures/%: tests/fixtures/%.c | $(OUTPUT)/tests/fixtures
	$(call msg,FIXTURE,$@)
	$(Q)$(CC) $(CFLAGS) $(DEPFLAGS) $< -lpthread -lm -o $@

$(OUTPUT)/tests/unit/%.o: tests/unit/%.c | $(OUTPUT)/tests/unit $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $(if $(filter tests/unit/cupti/%,$<),$(CUPTI_CFLAGS)) $(DEPFLAGS) -c $< -o $@

$(filter-out $(OUTPUT)/tests/unit/cupti/%,$(UNIT_BINS)): $(OUTPUT)/tests/unit/%: $(OUTPUT)/tests/unit/%.o $(LIB_OBJS) $(CUPTI_LIB)
	$(call msg,UNIT,$@)
	$(Q)$(CC) $(CFLAGS) $(filter %.o,$^) $(LDLIBS) -lcmocka -ldl -o $@

$(OUTPUT)/cupti/%.pic.o: cupti/%.c | $(OUTPUT)/cupti
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -fPIC $(CUPTI_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(OUTPUT)/libttftrace-cupti.so: $(CUPTI_OBJS)
	$(call msg,LIB,$@)
	$(Q)$(CC) $(CFLAGS) -shared -fPIC $^ -ldl -lpthread -o $@

vmlinux:
	@test -r $(VMLINUX_BTF) || { echo "Error: $(VMLINUX_BTF) not readable" >&2; \
		echo "HINT: needs a kernel built with CONFIG_DEBUG_INFO_BTF=y, or VMLINUX_BTF=path" >&2; exit 1; }
	$(Q)mkdir -p $(VMLINUX_DIR)
	$(Q)ver=$$(uname -r | cut -d. -f1,2); \
	$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $(VMLINUX_DIR)/vmlinux_$$ver.h && \
	ln -sf vmlinux_$$ver.h $(VMLINUX_DIR)/vmlinux.h && echo "wrote $(VMLINUX_DIR)/vmlinux_$$ver.h"

deps:
	$(Q)tools/setup.sh

build-deps:
	$(Q)tools/setup.sh --build

unit: $(UNIT_BINS)
	$(Q)tests/run.sh unit

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tools/demo/run.sh

# The demo behind a real nginx: two hops, split per hop (README "Hops").
demo-hops: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)HOPS=1 tools/demo/run.sh

test: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tests/run.sh

clean:
	$(call msg,CLEAN)
	$(Q)rm -rf $(OUTPUT) ttftrace

# --- CUPTI collector tests and bench --------------------------------------------
# tests/unit/cupti/ link the collector's own objects (cupti/*.c is not in LIB_OBJS).
$(filter $(OUTPUT)/tests/unit/cupti/%,$(UNIT_BINS)): $(OUTPUT)/tests/unit/cupti/%: $(OUTPUT)/tests/unit/cupti/%.o $(LIB_OBJS) $(CUPTI_OBJS)
	$(call msg,UNIT,$@)
	$(Q)$(CC) $(CFLAGS) $(filter %.o,$^) $(LDLIBS) -lcmocka -ldl -o $@

$(OUTPUT)/bench/cupti_decode: bench/cupti_decode.c $(CUPTI_OBJS)
	$(call msg,BENCH,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $(CUPTI_CFLAGS) $^ -ldl -lpthread -o $@
# --- end CUPTI block -------------------------------------------------------------

# --- Fuzz harnesses ----------------------------------------------------------------
# tests/noroot/fuzz/fuzz_<name>.c -> $(OUTPUT)/fuzz/fuzz_<name>, linked with libFuzzer, ASan and
# UBSan together with the project sources it exercises, compiled again with coverage
# instrumentation under $(OUTPUT)/fuzz/obj (fuzzer-no-link: no second main). Needs clang
# with libFuzzer (Debian: clang-14 + libclang-rt-14-dev, tools/setup.sh).
#   make fuzz                       every harness
#   make fuzz FUZZ_NAMES="sse record"
FUZZ_DIR := $(OUTPUT)/fuzz
FUZZ_NAMES ?= $(patsubst tests/noroot/fuzz/fuzz_%.c,%,$(wildcard tests/noroot/fuzz/fuzz_*.c))
# fuzz_cupti_decode needs the CUDA 13 CUPTI headers
ifeq ($(CUPTI_TESTS),)
FUZZ_NAMES := $(filter-out cupti_decode,$(FUZZ_NAMES))
endif
FUZZ_BINS := $(addprefix $(FUZZ_DIR)/fuzz_,$(FUZZ_NAMES))
FUZZ_CFLAGS := -g -O1 -std=gnu11 -D_GNU_SOURCE -I. -I$(OUTPUT) -Wall -Wno-unused-parameter
FUZZ_INST := -fsanitize=fuzzer-no-link,address,undefined
FUZZ_SAN := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
# user/ but main.c, as for unit tests
FUZZ_USER_OBJS := $(patsubst $(OUTPUT)/%,$(FUZZ_DIR)/obj/%,$(LIB_OBJS))

fuzz: $(FUZZ_BINS)

# Harnesses and the CUPTI decoder: UB aborts, and the CUPTI headers are needed.
$(FUZZ_DIR)/obj/tests/noroot/fuzz/%.o $(FUZZ_DIR)/obj/cupti/%.o: \
	FUZZ_EXTRA = -fno-sanitize-recover=undefined $(CUPTI_CFLAGS)

$(FUZZ_DIR)/obj/%.o: %.c | $(SKELS)
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $(FUZZ_INST) $(FUZZ_EXTRA) $(DEPFLAGS) -c $< -o $@

$(FUZZ_DIR)/obj/user/export/html/html_report.o: $(OUTPUT)/report_template.h

# The recording reader with small buffers: 4 MiB per open costs 13 ms under ASan.
$(FUZZ_DIR)/obj/record_read_small.o: user/export/record/record_read.c | $(SKELS)
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $(FUZZ_INST) -DREAD_BUF_BYTES='(64u << 10)' \
		-DGZ_BUF_BYTES='(16u << 10)' $(DEPFLAGS) -c $< -o $@

$(FUZZ_DIR)/fuzz_cupti_decode: $(FUZZ_DIR)/obj/tests/noroot/fuzz/fuzz_cupti_decode.o \
		$(FUZZ_DIR)/obj/cupti/decode.o $(FUZZ_DIR)/obj/cupti/cbid.o
	$(call msg,FUZZ,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $(FUZZ_SAN) $^ -o $@

$(FUZZ_DIR)/fuzz_record: $(FUZZ_DIR)/obj/tests/noroot/fuzz/fuzz_record.o \
		$(FUZZ_DIR)/obj/record_read_small.o \
		$(filter-out $(FUZZ_DIR)/obj/user/export/record/record_read.o,$(FUZZ_USER_OBJS))
	$(call msg,FUZZ,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $(FUZZ_SAN) $^ $(LDLIBS) -ldl -o $@

$(FUZZ_DIR)/fuzz_%: $(FUZZ_DIR)/obj/tests/noroot/fuzz/fuzz_%.o $(FUZZ_USER_OBJS)
	$(call msg,FUZZ,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) $(FUZZ_SAN) $^ $(LDLIBS) -ldl -o $@

# --- GPU check -----------------------------------------------------------------------
# Every GPU question in one run (tests/gpu/run.sh, docs/gpu.md "The GPU check"): known
# work, the live tracer, copybw, pcie, gpu-attach, cost; one results file. Needs an NVIDIA
# GPU, PyTorch with CUDA, nvcc and CUPTI headers, and a built ./ttftrace. DRY=1 runs the
# same steps here with stand-ins (tests/root/gpu/test_gpu_check_dry.py, in make test).
GPU_RESULTS ?= $(OUTPUT)/gpu-check/results.json
DRY ?= 0

gpu-check:
	$(Q)DRY=$(DRY) tests/gpu/run.sh $(GPU_RESULTS)

# --- CUDA header sets -------------------------------------------------------------
# cuda-none-check: a copy of the tree built and tested (unit, noroot) in a mount namespace
# with every CUDA toolkit hidden: the collector and its tests left out with the reason
# (tests/cuda/nocuda.sh; root; about 10 minutes). cuda-headers-check: the collector
# compiled against CUDA 11.8 (Debian 12 non-free, fetched into $(OUTPUT)/cuda-headers)
# and the toolkit found here (tests/cuda/headers.sh; 2.5 minutes the first time).
# Neither is part of `make test`.
.PHONY: cuda-none-check cuda-headers-check
cuda-none-check:
	$(Q)tests/cuda/nocuda.sh $(OUTPUT)/nocuda

cuda-headers-check:
	$(Q)tests/cuda/headers.sh $(OUTPUT)/cuda-headers

# --- QEMU tier ----------------------------------------------------------------------
# tests/qemu/run.py: Debian's linux-image-6.1 cloud kernel (fetched by
# tests/qemu/fetch_kernel.sh into $(OUTPUT)/qemu/kernel) boots under TCG with an
# initramfs of busybox, ttftrace, the fixture server and loadgen, and runs the smoke
# tier there (syscall source, 20 requests, exit codes). About a minute; results in
# $(OUTPUT)/qemu/results.json. Needs qemu-system-x86 and busybox-static (tools/setup.sh).
qemu-test: all
	$(Q)tests/qemu/run.py --out $(OUTPUT)/qemu

# The same tier on Debian 11's 5.10 cloud kernel (fetched from bullseye through an apt
# state of its own in $(OUTPUT)/qemu-5.10/kernel/apt; the system's apt is untouched).
qemu-test-5.10: all
	$(Q)tests/qemu/run.py --kernel-version 5.10 --out $(OUTPUT)/qemu-5.10

# Debian 12's 6.1 arm64 cloud kernel under qemu-system-aarch64 (TCG, -M virt -cpu max),
# the cross build of .output-arm64 in the initramfs (busybox-static:arm64 from Debian):
# ttftrace, the fixture server and its client only (`make ARCH=arm64` builds the rest).
# About 2 minutes. tools/setup.sh --arm64: the cross compiler, arm64 libraries, QEMU.
qemu-test-arm64:
	$(Q)tools/setup.sh --arm64
	$(Q)$(MAKE) --no-print-directory ARCH=arm64 OUTPUT=.output-arm64 .output-arm64/ttftrace \
		.output-arm64/tests/fixtures/sse_client .output-arm64/tests/fixtures/sse_server
	$(Q)tests/qemu/run.py --arch arm64 --out $(OUTPUT)/qemu-arm64

# vmlinux/arm64/vmlinux.h from the BTF of Debian 12's arm64 cloud kernel (tools/vmlinux_arm64.sh)
vmlinux-arm64:
	$(Q)tools/vmlinux_arm64.sh $(OUTPUT)/vmlinux-arm64


# --- Install ------------------------------------------------------------------------
#   make install [PREFIX=/usr/local] [DESTDIR=]   make uninstall [same PREFIX, DESTDIR]
# Installs the binary, the engine profiles, the CUPTI collector (when the CUDA headers
# are there to build it), the man page, bash completion, the systemd unit, the Grafana
# dashboard and the Prometheus alert rules (README "Installing, and running as a
# service"). The installed binary is linked apart ($(OUTPUT)/install/ttftrace): the
# objects that look for installed files (user/lib/install_paths.h) are compiled again
# with TTF_PREFIX=$(PREFIX) and rebuilt when PREFIX changes, so ./ttftrace stays as
# it was built.
PREFIX ?= /usr/local
DESTDIR ?=
INSTALL ?= install
TTF_BINDIR := $(PREFIX)/bin
TTF_DATADIR := $(PREFIX)/share/ttftrace
TTF_LIBDIR := $(PREFIX)/lib/ttftrace
TTF_MAN8DIR := $(PREFIX)/share/man/man8
TTF_BASHCOMPDIR := $(PREFIX)/share/bash-completion/completions
TTF_UNITDIR := $(PREFIX)/lib/systemd/system
TTF_INST_OUT := $(OUTPUT)/install
TTF_PATH_SRCS := user/probe/profile.c user/cmd/gpu_attach.c user/cmd/gpu_attach_cmd.c
# and cli.c, which carries the commit (--version): the installed binary's copy is compiled
# again when the commit changes (the stamp is rewritten only then), so that a package's
# version and its binary's `commit` line agree (make deb)
TTF_INST_SRCS := $(TTF_PATH_SRCS) user/cmd/cli.c
TTF_INST_OBJS := $(patsubst %.c,$(TTF_INST_OUT)/%.o,$(TTF_INST_SRCS))
TTF_PREFIX_STAMP := $(TTF_INST_OUT)/prefix
TTF_INST_CUPTI := $(CUPTI_LIB)

.PHONY: install uninstall ttf-prefix-check
ttf-prefix-check:

# rewritten only when PREFIX differs from the last build's
$(TTF_PREFIX_STAMP): ttf-prefix-check
	$(Q)mkdir -p $(dir $@)
	$(Q)echo '$(PREFIX)' | cmp -s - $@ || echo '$(PREFIX)' > $@

$(TTF_INST_OUT)/user/%.o: user/%.c $(TTF_PREFIX_STAMP) | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -DTTF_PREFIX='"$(PREFIX)"' $(DEPFLAGS) -c $< -o $@

TTF_COMMIT_STAMP := $(TTF_INST_OUT)/commit
$(TTF_INST_OUT)/user/cmd/cli.o: override CFLAGS += -DTTF_GIT_COMMIT='"$(GIT_COMMIT)"'
$(TTF_INST_OUT)/user/cmd/cli.o: $(TTF_COMMIT_STAMP)
$(TTF_COMMIT_STAMP): ttf-prefix-check
	$(Q)mkdir -p $(dir $@)
	$(Q)echo '$(GIT_COMMIT)' | cmp -s - $@ || echo '$(GIT_COMMIT)' > $@

$(TTF_INST_OUT)/ttftrace: $(filter-out $(patsubst %.c,$(OUTPUT)/%.o,$(TTF_INST_SRCS)),$(USER_OBJS)) $(TTF_INST_OBJS)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

install: $(TTF_INST_OUT)/ttftrace $(TTF_INST_CUPTI)
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)$(INSTALL) -d $(DESTDIR)$(TTF_BINDIR) $(DESTDIR)$(TTF_DATADIR)/profiles/stacks \
		$(DESTDIR)$(TTF_MAN8DIR) $(DESTDIR)$(TTF_BASHCOMPDIR) $(DESTDIR)$(TTF_UNITDIR)
	$(Q)$(INSTALL) -m 0755 $(TTF_INST_OUT)/ttftrace $(DESTDIR)$(TTF_BINDIR)/ttftrace
	$(Q)$(INSTALL) -m 0644 profiles/*.ini $(DESTDIR)$(TTF_DATADIR)/profiles/
	$(Q)$(INSTALL) -m 0644 profiles/stacks/*.ini $(DESTDIR)$(TTF_DATADIR)/profiles/stacks/
	$(Q)$(INSTALL) -m 0644 deploy/grafana/ttftrace-dashboard.json \
		deploy/prometheus/ttftrace-alerts.yml $(DESTDIR)$(TTF_DATADIR)/
	$(Q)$(INSTALL) -m 0644 deploy/systemd/ttftrace.default $(DESTDIR)$(TTF_DATADIR)/
	$(Q)sed 's|/usr/local/|$(PREFIX)/|g' deploy/man/ttftrace.8 > $(DESTDIR)$(TTF_MAN8DIR)/ttftrace.8
	$(Q)chmod 0644 $(DESTDIR)$(TTF_MAN8DIR)/ttftrace.8
	$(Q)$(INSTALL) -m 0644 deploy/completion/ttftrace.bash $(DESTDIR)$(TTF_BASHCOMPDIR)/ttftrace
	$(Q)sed 's|@BINDIR@|$(TTF_BINDIR)|g' deploy/systemd/ttftrace.service.in \
		> $(DESTDIR)$(TTF_UNITDIR)/ttftrace.service
	$(Q)chmod 0644 $(DESTDIR)$(TTF_UNITDIR)/ttftrace.service
ifneq ($(TTF_INST_CUPTI),)
	$(Q)$(INSTALL) -d $(DESTDIR)$(TTF_LIBDIR)
	$(Q)$(INSTALL) -m 0755 $(CUPTI_LIB) $(DESTDIR)$(TTF_LIBDIR)/
else
	@echo "install: the CUPTI collector is not built or installed: $(CUPTI_NOTE) (CUDA_HOME=...)"
endif

uninstall:
	$(call msg,UNINSTALL,$(DESTDIR)$(PREFIX))
	$(Q)rm -f $(DESTDIR)$(TTF_BINDIR)/ttftrace $(DESTDIR)$(TTF_MAN8DIR)/ttftrace.8 \
		$(DESTDIR)$(TTF_BASHCOMPDIR)/ttftrace $(DESTDIR)$(TTF_UNITDIR)/ttftrace.service
	$(Q)rm -rf $(DESTDIR)$(TTF_DATADIR) $(DESTDIR)$(TTF_LIBDIR)
# --- end install block --------------------------------------------------------------

# --- Debian package -------------------------------------------------------------------
#   make deb [DEB_VERSION=X.Y] [DEB_MAINTAINER="Name <mail>"]
# $(OUTPUT)/deb/ttftrace_VERSION_ARCH.deb from `make install PREFIX=/usr` in a staging
# root (deploy/debian/build.sh): Depends from dpkg-shlibdeps, the version from git
# describe (docs/deploy.md "Debian package"). tests/root/packaging/test_deb.py lints,
# installs and runs it.
DEB_VERSION ?=
DEB_MAINTAINER ?= $(shell git log -1 --format='%an <%ae>' 2>/dev/null)
.PHONY: deb
deb:
	$(Q)VERSION="$(DEB_VERSION)" MAINTAINER="$(DEB_MAINTAINER)" \
		deploy/debian/build.sh $(OUTPUT)/deb

# --- Container without a registry (not part of `make test`; root, the Debian mirror) ---
# container-test: tests/container/run.sh: Debian 12 debootstrapped and imported as the
# Dockerfile's base images in a podman store of its own ($(OUTPUT)/container), the image
# built from deploy/docker/Dockerfile, run (--version, a traced request), and the .deb
# installed with apt on the bare base. About 10 minutes on 2 cores the first time.
.PHONY: container-test
container-test: all
	$(Q)$(MAKE) --no-print-directory deb
	$(Q)tests/container/run.sh $(OUTPUT)/container $(OUTPUT)/deb/ttftrace_*.deb

# golden: the only way the replay regression data (tests/root/replay/data) is remade:
# four short traced runs (the fixture, the demo engine, the vLLM- and SGLang-shaped
# stacks), each with the truth its other side logged; then what changed, for review.
.PHONY: golden
golden: all
	$(Q)/usr/bin/python3 tests/root/replay/make_data.py fixture demo vllm_split sglang_split
	$(Q)git --no-pager diff --stat -- tests/root/replay/data
	$(Q)git --no-pager diff --no-color -U0 -- 'tests/root/replay/data/*.ndjson' | cut -c1-200

# --- Benchmarks (not part of `make test`; root) ----------------------------------------
# bench-quick: replay throughput (20,000 requests, one round) and two rounds of the cost
# bench on the demo engine and on the high-rate target (the fixture server, 1,000
# connections): a few minutes, for a change to a hot path before it lands.
# bench-cost: bench/cost.sh in full (demo engine, llama-server, high-rate target, 5 rounds each).
# bench-memory: the 3-minute live memory test (bench/memory.sh).
bench-quick: all
	$(Q)bench/replay_throughput.sh 20000 1
	$(Q)bench/cost.sh --targets demo,rate --rounds 2 -n 16 --rate-n 1000

bench-cost: all
	$(Q)bench/cost.sh

bench-memory: all
	$(Q)bench/memory.sh

# --- replay throughput by recording size ------------------------------------------
# bench-replay-scale: bench/replay_scale.sh, recordings of 2,000, 20,000 and 200,000
# requests replayed with text and --json, best of 3 each: records per CPU second, ratio
# to the 2 M goal, peak RSS. About 4 minutes and 270 MB of temporary files; no root.
.PHONY: bench-replay-scale
bench-replay-scale: all
	$(Q)bench/replay_scale.sh 3

# (not $(OUTPUT)/container: make container-test's podman store holds image trees)
-include $(filter-out $(OUTPUT)/container/%,$(wildcard $(OUTPUT)/*/*.d $(OUTPUT)/*/*/*.d \
	$(OUTPUT)/*/*/*/*.d $(OUTPUT)/*/*/*/*/*.d))

# io_uring: the fixture of tests/root/uring links liburing (tools/setup.sh: liburing-dev)
$(OUTPUT)/tests/fixtures/uring_server: tests/fixtures/uring_server.c | $(OUTPUT)/tests/fixtures
	$(call msg,FIXTURE,$@)
	$(Q)$(CC) $(CFLAGS) $(DEPFLAGS) $< -luring -lpthread -o $@

# The vLLM-shaped fixture's crossing truth: an LD_PRELOAD shim (tests/root/hops/test_vllm_split.py)
XING_SHIM := $(OUTPUT)/tests/fixtures/vllm_crossings.so
all: $(XING_SHIM)
$(XING_SHIM): tests/fixtures/vllm_shaped/crossings.c | $(OUTPUT)/tests/fixtures
	$(call msg,FIXTURE,$@)
	$(Q)$(CC) $(CFLAGS) $(DEPFLAGS) -shared -fPIC $< -ldl -o $@
