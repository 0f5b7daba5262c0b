// SPDX-License-Identifier: GPL-2.0-only
/*
 * Engine uprobes: entry and return of step-frequency functions of the
 * inference engine (llama_decode, llama_tokenize, ...). One program pair
 * serves every probe; the probe id comes from the BPF cookie user space set
 * at attach time (bpf_get_attach_cookie, uprobes since Linux 5.15).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "bpf/engine.h"
#include "bpf/common.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TTF_ENGINE_MAX_PROBES);
	__type(key, __u32);
	__type(value, struct ttf_engine_probe_cfg);
} engine_probe_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TTF_ENG_CNT__MAX);
	__type(key, __u32);
	__type(value, __u64);
} engine_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} engine_events SEC(".maps");

/* The shared counter bump (common.bpf.h), bound to this program's map. */
static __always_inline void count(__u32 idx)
{
	ttf_count(&engine_counters, idx);
}

/* Add n to counter idx. */
static __always_inline void count_n(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&engine_counters, &idx);

	if (v)
		*v += n;
}

static __always_inline __s64 reg_arg(struct pt_regs *ctx, int index)
{
	/*
	 * Load every register at a constant ctx offset first: a switch of
	 * loads is merged by clang into one load at ctx + variable offset,
	 * which the verifier rejects ("dereference of modified ctx ptr").
	 */
	__s64 a1 = PT_REGS_PARM1(ctx), a2 = PT_REGS_PARM2(ctx), a3 = PT_REGS_PARM3(ctx);
	__s64 a4 = PT_REGS_PARM4(ctx), a5 = PT_REGS_PARM5(ctx);

	barrier_var(a1);
	barrier_var(a2);
	barrier_var(a3);
	barrier_var(a4);
	barrier_var(a5);
	switch (index) {
	case 1: return a1;
	case 2: return a2;
	case 3: return a3;
	case 4: return a4;
	case 5: return a5;
	}
	return -1;
}

/* The fields of a batch the walk uses, read by the profile's layout. */
struct llama_batch_prefix {
	__s32 n_tokens;
	__s32 pad;
	__u64 pos, n_seq_id, seq_id, logits;
};

/* Sampled sequence ids, no counts: kernels without bpf_loop. */
static __always_inline void sample_llama_batch(struct ttf_engine_event *e,
					       const struct llama_batch_prefix *b)
{
	/* every token when they fit, else evenly spread samples */
	__u64 stride = (b->n_tokens + TTF_ENGINE_MAX_SEQ - 1) / TTF_ENGINE_MAX_SEQ;

	for (int i = 0; i < TTF_ENGINE_MAX_SEQ; i++) {
		__u64 tok = i * stride, p;
		__s32 seq;
		bool dup = false;

		if (tok >= (__u64)b->n_tokens)
			break;
		if (bpf_probe_read_user(&p, sizeof(p), (void *)(b->seq_id + tok * 8)) ||
		    bpf_probe_read_user(&seq, sizeof(seq), (void *)p))
			break;
		for (int k = 0; k < TTF_ENGINE_MAX_SEQ; k++)
			if (k < e->n_seq && e->seq_ids[k & (TTF_ENGINE_MAX_SEQ - 1)] == seq)
				dup = true;
		if (!dup && e->n_seq < TTF_ENGINE_MAX_SEQ)
			e->seq_ids[e->n_seq++ & (TTF_ENGINE_MAX_SEQ - 1)] = seq;
	}
}

/*
 * State of one walk over a batch's tokens, in a per-CPU map value, not on
 * the stack: the verifier tracks the exact values of stack slots, so a
 * position kept there would differ at every bpf_loop call and the callback
 * would never converge; a map value's contents are unknown to it.
 */
struct batch_walk {
	struct llama_batch_prefix b;
	__u32 n;		/* tokens walked */
	__u32 next;		/* the next token to read */
	__u32 run_len;		/* tokens in the current run so far */
	__u32 from, lo, hi, step;	/* the search for the run's end (search_step) */
	__s32 searching;
	__s32 cur_seq;		/* sequence of the previous token */
	__s32 cur_k;		/* its entry, -1 none */
	__u32 ptr_base;		/* first token of ptrs[], or ~0 */
	__s32 fault;
	__s32 no_skip;		/* a run failed its check: no more skips in this batch */
	__u64 ptrs[16];		/* seq_id[] pointers, read 16 at a time */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct batch_walk);
} batch_walks SEC(".maps");

/* The bpf_loop callback's context: the record filled, the walk's state. */
struct walk_ctx {
	struct ttf_engine_event *e;
	struct batch_walk *w;
};

/* The last token of a run of entry k ends at token `last`: does it want logits? */
static __always_inline void close_run(struct batch_walk *w, struct ttf_engine_event *e,
				      __s32 k, __u32 last)
{
	__s8 lg = 0;

	if (k < 0 || k >= TTF_ENGINE_MAX_SEQ)
		return;
	if (!w->b.logits)
		lg = last + 1 == (__u32)w->b.n_tokens;	/* NULL: only the batch's last token */
	else if (bpf_probe_read_user(&lg, sizeof(lg), (void *)(w->b.logits + last)))
		w->fault = 1;
	if (lg)
		e->seq_out_mask |= 1u << k;
	else
		e->seq_out_mask &= ~(1u << k);
}

/* A run this long is measured (search_step), not walked on. */
#define TTF_SKIP_AFTER 16

/*
 * One read of the search for the end of the current run, which holds token
 * w->from and the TTF_SKIP_AFTER before it: seq_id[j][0] at doubling steps
 * from it (16, 32, ...) until another sequence or the batch's end, then
 * bisection between the last token of the run's sequence and that one:
 * about 4 log2 of its length reads, not one per token. One read per bpf_loop
 * call, so that the verifier walks one call, not every path of the search.
 * It assumes that a sequence's tokens are contiguous in the batch, as the
 * engines build them (docs/kernel.md B7.1), and checks it where it can: the
 * positions must advance by one per token over the run, or nothing is
 * skipped and the rest of the batch is walked token by token.
 */
static __always_inline void search_step(struct batch_walk *w, struct ttf_engine_event *e)
{
	__u32 lo = w->lo, hi = w->hi, j;
	__s32 s, p0, p1, k;
	__u64 p;

	if (hi == w->n)		/* doubling */
		j = lo + w->step < w->n ? lo + w->step : w->n - 1;
	else			/* bisection */
		j = lo + (hi - lo) / 2;
	if (j > lo && j < hi) {
		if (bpf_probe_read_user(&p, sizeof(p), (void *)(w->b.seq_id + (__u64)j * 8)) ||
		    bpf_probe_read_user(&s, sizeof(s), (void *)p))
			goto no_skip;	/* the walk goes on token by token and counts any fault */
		if (s == w->cur_seq)
			w->lo = j;
		else
			w->hi = j;
		w->step <<= 1;
		return;
	}
	/* found: lo is the run's last token */
	w->searching = 0;
	if (lo == w->from)
		return;
	if (w->b.pos) {
		if (bpf_probe_read_user(&p0, sizeof(p0), (void *)(w->b.pos + (__u64)w->from * 4)) ||
		    bpf_probe_read_user(&p1, sizeof(p1), (void *)(w->b.pos + (__u64)lo * 4)))
			goto no_skip;
		if ((__u32)(p1 - p0) != lo - w->from) {
			count(TTF_ENG_CNT_WALK_INTERLEAVED);
			goto no_skip;
		}
	}
	k = w->cur_k;
	if (k >= 0 && k < TTF_ENGINE_MAX_SEQ)
		e->seq_tokens[k] += lo - w->from;
	count_n(TTF_ENG_CNT_WALK_SKIPPED, lo - w->from);
	w->next = lo + 1;
	return;
no_skip:
	w->searching = 0;
	w->no_skip = 1;
}

/* Token i continues the run of entry cur_k: count it, and perhaps search for the run's end. */
static __always_inline void extend_run(struct batch_walk *w, struct ttf_engine_event *e,
				       __u32 i)
{
	__s32 k = w->cur_k;

	if (k >= 0 && k < TTF_ENGINE_MAX_SEQ)
		e->seq_tokens[k]++;
	w->next = i + 1;
	if (++w->run_len >= TTF_SKIP_AFTER && !w->no_skip && i + 1 < w->n) {
		w->searching = 1;
		w->from = w->lo = i;
		w->hi = w->n;
		w->step = TTF_SKIP_AFTER;
	}
}

static long walk_token(__u64 unused, void *ctx)
{
	struct walk_ctx *c = ctx;
	struct batch_walk *w = c->w;
	struct ttf_engine_event *e = c->e;
	__u32 i = w->next, base = i & ~15u;
	__s32 seq, n_ids = 1, k;

	if (w->searching) {
		search_step(w, e);
		return 0;
	}
	if (i >= w->n)
		return 1;
	if (base != w->ptr_base) {
		__u32 left = w->n - base;
		/* the mask keeps the bound where the verifier sees it */
		__u64 len = left >= 16 ? 16 * 8 : (__u64)(left & 15) * 8;

		if (len == 0 ||
		    bpf_probe_read_user(w->ptrs, len, (void *)(w->b.seq_id + (__u64)base * 8))) {
			w->fault = 1;
			return 1;
		}
		w->ptr_base = base;
	}
	if (bpf_probe_read_user(&seq, sizeof(seq), (void *)w->ptrs[i & 15])) {
		w->fault = 1;
		return 1;
	}
	if (w->b.n_seq_id && i == 0 &&
	    !bpf_probe_read_user(&n_ids, sizeof(n_ids), (void *)w->b.n_seq_id) && n_ids > 1)
		e->batch_flags |= TTF_ENG_B_MULTI_SEQ;
	if (i > 0 && seq == w->cur_seq) {
		extend_run(w, e, i);
		return 0;
	}
	w->next = i + 1;
	w->run_len = 1;
	if (i > 0)
		close_run(w, e, w->cur_k, i - 1);
	w->cur_seq = seq;
	w->cur_k = -1;
	for (k = 0; k < TTF_ENGINE_MAX_SEQ; k++)
		if (k < e->n_seq && e->seq_ids[k] == seq) {
			w->cur_k = k;
			break;
		}
	if (w->cur_k < 0) {
		if (e->n_seq >= TTF_ENGINE_MAX_SEQ) {
			e->batch_flags |= TTF_ENG_B_SEQ_OVERFLOW;
			return 0;
		}
		k = e->n_seq++;
		if (k < 0 || k >= TTF_ENGINE_MAX_SEQ)
			return 1;
		w->cur_k = k;
		e->seq_ids[k] = seq;
		e->seq_pos0[k] = -1;
		if (w->b.pos &&
		    bpf_probe_read_user(&e->seq_pos0[k], sizeof(__s32), (void *)(w->b.pos + i * 4)))
			w->fault = 1;
	}
	k = w->cur_k;
	if (k >= 0 && k < TTF_ENGINE_MAX_SEQ)
		e->seq_tokens[k]++;
	return 0;
}

static __always_inline void read_llama_batch(struct ttf_engine_event *e, __u64 addr,
					     const struct ttf_batch_layout *l)
{
	struct llama_batch_prefix b = {};
	struct walk_ctx c = { .e = e };
	struct batch_walk *w;
	__u32 n, zero = 0;

	if (bpf_probe_read_user(&b.n_tokens, sizeof(b.n_tokens), (void *)(addr + l->n_tokens)) ||
	    bpf_probe_read_user(&b.pos, sizeof(b.pos), (void *)(addr + l->pos)) ||
	    bpf_probe_read_user(&b.n_seq_id, sizeof(b.n_seq_id), (void *)(addr + l->n_seq_id)) ||
	    bpf_probe_read_user(&b.seq_id, sizeof(b.seq_id), (void *)(addr + l->seq_id)) ||
	    bpf_probe_read_user(&b.logits, sizeof(b.logits), (void *)(addr + l->logits))) {
		count(TTF_ENG_CNT_ARG_FAULT);
		return;
	}
	e->value = b.n_tokens;
	if (!b.seq_id || b.n_tokens <= 0)
		return;
	if (!bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_loop)) {
		sample_llama_batch(e, &b);
		return;
	}
	w = bpf_map_lookup_elem(&batch_walks, &zero);
	if (!w)
		return;	/* never: a one-slot array */
	if (!b.pos)
		e->batch_flags |= TTF_ENG_B_NO_POS;
	n = b.n_tokens;
	if (n > TTF_ENGINE_MAX_BATCH_TOKENS) {
		n = TTF_ENGINE_MAX_BATCH_TOKENS;
		e->batch_flags |= TTF_ENG_B_TRUNCATED;
		count(TTF_ENG_CNT_BATCH_TRUNCATED);
	}
	__builtin_memset(w, 0, offsetof(struct batch_walk, ptrs));
	w->b = b;
	w->n = n;
	w->cur_k = -1;
	w->ptr_base = ~0u;
	c.w = w;
	/*
	 * One call per token walked or search read: a search (at most 27
	 * reads) follows at least TTF_SKIP_AFTER walked tokens.
	 */
	bpf_loop(2 * n + 32, walk_token, &c, 0);
	if (!w->fault)
		close_run(w, e, w->cur_k, n - 1);
	if (e->batch_flags & TTF_ENG_B_SEQ_OVERFLOW)
		count(TTF_ENG_CNT_SEQ_OVERFLOW);
	if (w->fault) {
		/* A partial walk would give wrong counts: keep the ids, drop the counts. */
		count(TTF_ENG_CNT_ARG_FAULT);
		for (int k = 0; k < TTF_ENGINE_MAX_SEQ; k++)
			e->seq_tokens[k] = 0;
	}
}

static __always_inline int emit(struct pt_regs *ctx, __u8 type)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct ttf_engine_probe_cfg *cfg;
	struct ttf_engine_event *e;
	__u32 cookie = bpf_get_attach_cookie(ctx);
	__u32 id = cookie & TTF_ENGINE_COOKIE_ID_MASK;

	count(TTF_ENG_CNT_HITS);
	e = ttf_rb_reserve(&engine_events, sizeof(*e), &engine_counters, TTF_ENG_CNT_RINGBUF_FULL);
	if (!e)
		return 0;
	__builtin_memset(e, 0, sizeof(*e));
	e->ts_ns = bpf_ktime_get_ns();
	e->tgid = pid_tgid >> 32;
	e->tid = (__u32)pid_tgid;
	e->probe_id = id;
	e->role = cookie >> TTF_ENGINE_COOKIE_ROLE_SHIFT;
	e->type = type;
	e->value = -1;
	if (cookie & TTF_ENGINE_COOKIE_RET_SITE) {
		e->type = TTF_ENG_RETURN;	/* RET-site uprobe: no return value */
		e->flags = TTF_ENG_F_RET_SITE;
	} else if (type == TTF_ENG_RETURN) {
		e->value = (__s64)(__s32)PT_REGS_RC(ctx);
	} else {
		cfg = bpf_map_lookup_elem(&engine_probe_cfg, &id);
		if (cfg && cfg->arg_kind == TTF_ARG_REG_I32) {
			e->value = (__s32)reg_arg(ctx, cfg->arg_index);
		} else if (cfg && cfg->arg_kind == TTF_ARG_STACK_I32) {
			__s32 v;

			if (bpf_probe_read_user(&v, sizeof(v),
						(void *)(PT_REGS_SP(ctx) + cfg->arg_offset)))
				count(TTF_ENG_CNT_ARG_FAULT);
			else
				e->value = v;
		} else if (cfg && cfg->arg_kind == TTF_ARG_LLAMA_BATCH) {
			read_llama_batch(e, PT_REGS_SP(ctx) + cfg->arg_offset, &cfg->batch);
		}
	}
	/* Step-frequency events: a few per engine step; wake the reader lazily. */
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}

SEC("uprobe")
int handle_entry(struct pt_regs *ctx)
{
	return emit(ctx, TTF_ENG_ENTRY);
}

SEC("uretprobe")
int handle_return(struct pt_regs *ctx)
{
	return emit(ctx, TTF_ENG_RETURN);
}
