/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Shared ABI of the engine uprobes (bpf/engine.bpf.c): one record per entry
 * to and return from a probed engine function (step/decode, tokenize,
 * sampling, sync). Which function a record belongs to is the probe id that
 * user space put in the uprobe's BPF cookie.
 */
#ifndef TTFTRACE_BPF_ENGINE_H
#define TTFTRACE_BPF_ENGINE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define TTF_ENGINE_MAX_PROBES 64
/*
 * BPF cookie of an engine uprobe: the probe id in the low 16 bits, plus this
 * flag on a uprobe placed on a RET instruction (used instead of a uretprobe
 * in Go binaries, whose moving stacks break uretprobes: docs/cases.md #4).
 * Such a hit is reported as TTF_ENG_RETURN (without a return value).
 */
#define TTF_ENGINE_COOKIE_RET_SITE (1u << 16)
#define TTF_ENGINE_COOKIE_ID_MASK 0xffffu
#define TTF_ENGINE_COOKIE_ROLE_SHIFT 24	/* bits 24..31: the probe's enum ttf_engine_role */
#define TTF_ENGINE_MAX_SEQ 16	/* distinct sequence ids read per batch */
/* Tokens of one batch walked for per-sequence counts (a longer batch: TTF_ENG_B_TRUNCATED). */
#define TTF_ENGINE_MAX_BATCH_TOKENS 16384

/*
 * How to read a step's size (and sequence ids) at function entry, per probe
 * id (map engine_probe_cfg). x86-64 SysV: integer args in rdi, rsi, rdx,
 * rcx, r8, r9; a struct larger than 16 bytes is passed in memory, i.e. on
 * the stack at rsp+8 at the first instruction of the callee.
 */
enum ttf_arg_kind {
	TTF_ARG_NONE = 0,
	TTF_ARG_REG_I32,	/* n_tokens = (int32) argument register #index (1-based) */
	TTF_ARG_STACK_I32,	/* n_tokens = *(int32 *)(sp + offset) */
	/*
	 * llama.cpp `int32_t llama_decode(struct llama_context *, struct llama_batch)`:
	 * the 56-byte llama_batch is on the stack at sp + offset (8):
	 * { int32 n_tokens; token*; embd*; pos*; int32 *n_seq_id; int32 **seq_id; int8 *logits; }
	 * With bpf_loop (Linux 5.17+, docs/kernel.md B7) the batch is walked:
	 * per distinct seq_id[i][0] (up to TTF_ENGINE_MAX_SEQ), its token count
	 * (a long run of one sequence is measured by bisection, B7.1),
	 * the position of its first token and whether its last token has
	 * logits set (an output: a prompt's last chunk, or a decode token).
	 * Without bpf_loop, the seq_id of up to TTF_ENGINE_MAX_SEQ tokens spread
	 * over the batch, and no counts (seq_tokens[] stay 0).
	 */
	TTF_ARG_LLAMA_BATCH,
};

/*
 * Where a batch struct (TTF_ARG_LLAMA_BATCH) keeps its fields, as byte
 * offsets into it: the profile's `batch = ...` (user/probe/profile.h), so
 * that an engine with a llama_batch-like struct can describe its own.
 * llama.cpp's: n_tokens 0, pos 24, seq_id 40, logits 48.
 */
struct ttf_batch_layout {
	__u8 n_tokens;		/* int32 token count */
	__u8 pos;		/* int32 *pos: position of each token (NULL: none) */
	__u8 n_seq_id;		/* int32 *n_seq_id: each token's number of sequence ids */
	__u8 seq_id;		/* int32 **seq_id: each token's sequence ids; [i][0] is read */
	__u8 logits;		/* int8 *logits: token wants an output (NULL: the last one) */
	__u8 pad[3];
};

#define TTF_LLAMA_BATCH_LAYOUT { .n_tokens = 0, .pos = 24, .n_seq_id = 32, .seq_id = 40, \
				 .logits = 48 }

struct ttf_engine_probe_cfg {
	__u32 arg_kind;		/* enum ttf_arg_kind */
	__s32 arg_index;	/* register number for REG kinds */
	__s32 arg_offset;	/* stack offset in bytes for STACK kinds */
	struct ttf_batch_layout batch;	/* TTF_ARG_LLAMA_BATCH */
};

/*
 * What a probed engine function is, named in engine profiles (profiles/) and
 * --probe specs. The values are also those of recordings (user/export/record/record.h):
 * never renumber them.
 */
enum ttf_engine_role {
	TTF_ROLE_STEP = 1,	/* one engine step (prefill and/or decode batch) */
	TTF_ROLE_TOKENIZE,
	TTF_ROLE_SAMPLE,
	TTF_ROLE_SYNC,		/* waits for the device: the step's end on GPU (docs/cases.md #17) */
	TTF_ROLE_DETOKENIZE,
	TTF_ROLE__MAX,
};

enum ttf_engine_ev_type {
	TTF_ENG_ENTRY = 1,
	TTF_ENG_RETURN = 2,
};

#define TTF_ENG_F_RET_SITE 0x1	/* a RETURN seen at a RET-instruction uprobe: value is -1 */

/* batch_flags of a step entry read from a llama_batch. */
#define TTF_ENG_B_SEQ_OVERFLOW 0x1	/* more distinct sequences than TTF_ENGINE_MAX_SEQ: counts cover the first */
#define TTF_ENG_B_MULTI_SEQ 0x2		/* the first token belongs to several sequences: its first is counted */
#define TTF_ENG_B_TRUNCATED 0x4		/* longer than TTF_ENGINE_MAX_BATCH_TOKENS: counts cover the start */
#define TTF_ENG_B_NO_POS 0x8		/* batch.pos is NULL (the engine numbers positions itself) */

/*
 * One engine hit, the only struct for it: the ring-buffer record, what the
 * probe loader delivers, what the engine timeline consumes and what a
 * recording stores (user/export/record/record.h codes it field by field). 232 bytes.
 * Entries k < n_seq of the seq_* arrays describe one sequence of a step's batch,
 * in the order of their first token in the batch.
 */
struct ttf_engine_event {
	__u64 ts_ns;		/* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u32 tgid;
	__u32 tid;
	__u32 probe_id;		/* the uprobe's BPF cookie: attachment id (0 in replays) */
	__u8 type;		/* enum ttf_engine_ev_type */
	__u8 n_seq;		/* valid entries in seq_ids */
	__u8 role;		/* enum ttf_engine_role, from the cookie */
	__u8 flags;		/* TTF_ENG_F_* */
	__s64 value;		/* ENTRY: n_tokens (-1 unknown); RETURN: return value */
	__s32 seq_ids[TTF_ENGINE_MAX_SEQ];
	__s32 seq_tokens[TTF_ENGINE_MAX_SEQ];	/* its tokens in the batch; 0: not counted */
	__s32 seq_pos0[TTF_ENGINE_MAX_SEQ];	/* position of its first token; -1 unknown */
	__u32 seq_out_mask;	/* bit k: sequence k's last token in the batch has logits set */
	__u32 batch_flags;	/* TTF_ENG_B_* */
};

enum ttf_engine_counter {
	TTF_ENG_CNT_RINGBUF_FULL = 0,
	TTF_ENG_CNT_HITS,	/* every entry or return seen */
	TTF_ENG_CNT_ARG_FAULT,	/* reading an argument from user memory failed */
	TTF_ENG_CNT_SEQ_OVERFLOW,	/* batches with more sequences than TTF_ENGINE_MAX_SEQ */
	TTF_ENG_CNT_BATCH_TRUNCATED,	/* batches longer than TTF_ENGINE_MAX_BATCH_TOKENS */
	TTF_ENG_CNT_WALK_SKIPPED,	/* tokens a walk counted without reading them (one run, B7.1) */
	TTF_ENG_CNT_WALK_INTERLEAVED,	/* batches whose runs failed the check: walked token by token */
	TTF_ENG_CNT__MAX,
};

#endif /* TTFTRACE_BPF_ENGINE_H */
