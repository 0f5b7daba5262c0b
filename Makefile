# SPDX-License-Identifier: GPL-2.0-only
# ttftrace build. Everything generated goes to $(OUTPUT).
#   make            build ./ttftrace, tools, fixtures, unit tests
#   make demo       install deps, start the demo llama.cpp server, trace a load
#   make test       install deps, build, run every test tier
#   make vmlinux    regenerate vmlinux/<arch>/vmlinux.h from $(VMLINUX_BTF)
#   make V=1        show full commands

OUTPUT ?= .output
CLANG ?= clang
BPFTOOL ?= bpftool
CC ?= cc
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
CUDA_HOME ?= /usr/local/cuda-13.0
ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/;s/ppc64le/powerpc/;s/s390x/s390/;s/riscv64/riscv/')
ifeq ($(filter x86 arm64 powerpc s390 riscv,$(ARCH)),)
$(error unsupported architecture $(shell uname -m))
endif
VMLINUX_DIR := vmlinux/$(ARCH)

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

USER_SRCS := $(wildcard user/*.c user/*/*.c)
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

# tests/unit/test_<name>.c -> $(OUTPUT)/tests/unit/test_<name> (cmocka)
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst %.c,$(OUTPUT)/%,$(UNIT_SRCS))

# cupti/*.c -> $(OUTPUT)/libttftrace-cupti.so (injected into CUDA processes)
CUPTI_SRCS := $(wildcard cupti/*.c)
CUPTI_OBJS := $(patsubst %.c,$(OUTPUT)/%.pic.o,$(CUPTI_SRCS))
CUPTI_LIB := $(if $(CUPTI_SRCS),$(OUTPUT)/libttftrace-cupti.so)

.DELETE_ON_ERROR:
.SECONDARY:
.PHONY: all clean demo test unit vmlinux deps

all: ttftrace $(TOOL_BINS) $(FIXTURE_BINS) $(UNIT_BINS) $(CUPTI_LIB)

$(OUTPUT) $(OUTPUT)/bpf $(OUTPUT)/user $(OUTPUT)/bin $(OUTPUT)/tests/unit $(OUTPUT)/tests/fixtures $(OUTPUT)/cupti:
	$(Q)mkdir -p $@

$(OUTPUT)/bpf/%.bpf.o: bpf/%.bpf.c $(VMLINUX_DIR)/vmlinux.h | $(OUTPUT)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(OUTPUT)/%.skel.h: $(OUTPUT)/bpf/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

$(OUTPUT)/user/%.o: user/%.c | $(OUTPUT)/user $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

# The `ttftrace report` page template, compiled into user/export/html_report.c as a C string.
$(OUTPUT)/report_template.h: user/export/report_template.html | $(OUTPUT)
	$(call msg,GEN,$@)
	$(Q){ echo 'static const char report_template_html[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; \
	  echo ';'; } > $@.tmp && mv $@.tmp $@

$(OUTPUT)/user/export/html_report.o: $(OUTPUT)/report_template.h

ttftrace: $(USER_OBJS)
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
	$(Q)$(CC) $(CFLAGS) -I$(CUDA_HOME)/include $(DEPFLAGS) -c $< -o $@

$(OUTPUT)/tests/unit/test_%: $(OUTPUT)/tests/unit/test_%.o $(LIB_OBJS) $(CUPTI_LIB)
	$(call msg,UNIT,$@)
	$(Q)$(CC) $(CFLAGS) $(filter %.o,$^) $(LDLIBS) -lcmocka -ldl -o $@

$(OUTPUT)/cupti/%.pic.o: cupti/%.c | $(OUTPUT)/cupti
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -fPIC -I$(CUDA_HOME)/include $(DEPFLAGS) -c $< -o $@

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

unit: $(UNIT_BINS)
	$(Q)tests/run.sh unit

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tools/demo/run.sh

test: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tests/run.sh

clean:
	$(call msg,CLEAN)
	$(Q)rm -rf $(OUTPUT) ttftrace

# --- CUPTI collector tests and bench --------------------------------------------
# test_cupti_* link the collector's own objects (cupti/*.c is not in LIB_OBJS);
# the more specific pattern wins over test_% above.
$(OUTPUT)/tests/unit/test_cupti_%: $(OUTPUT)/tests/unit/test_cupti_%.o $(LIB_OBJS) $(CUPTI_OBJS)
	$(call msg,UNIT,$@)
	$(Q)$(CC) $(CFLAGS) $(filter %.o,$^) $(LDLIBS) -lcmocka -ldl -o $@

$(OUTPUT)/bench/cupti_decode: bench/cupti_decode.c $(CUPTI_OBJS)
	$(call msg,BENCH,$@)
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -I$(CUDA_HOME)/include $^ -ldl -lpthread -o $@
# --- end CUPTI block -------------------------------------------------------------

-include $(wildcard $(OUTPUT)/*/*.d $(OUTPUT)/*/*/*.d $(OUTPUT)/*/*/*/*.d)
