/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The CUPTI calls the collector makes, as a table of function pointers
 * filled by dlsym() (never linked: a CUDA process usually carries its own
 * libcupti, docs/cupti.md A1 "libcupti loading"). Tests pass a fake table.
 */
#ifndef TTFTRACE_CUPTI_API_H
#define TTFTRACE_CUPTI_API_H

#include <cupti.h>

/* Internal to libttftrace-cupti.so: keep out of the host process's symbol space. */
#pragma GCC visibility push(hidden)

/*
 * cuptiSubscribe_v2 and its CUpti_SubscriberParams came with CUDA 13.0's
 * headers: built with older ones, the collector always subscribes the old way.
 */
#ifdef CUpti_SubscriberParams_STRUCT_SIZE
#define TTF_CUPTI_SUBSCRIBE_V2 1
#define TTF_CUPTI_SUB_PARAMS CUpti_SubscriberParams
#else
#define TTF_CUPTI_SUB_PARAMS void
#endif

struct cupti_api {
	CUptiResult (*get_version)(uint32_t *version);
	const char *(*result_string)(CUptiResult r); /* wraps cuptiGetResultString */
	/* NULL when the library or the headers predate cuptiSubscribe_v2 (CUDA < 13.0). */
	CUptiResult (*subscribe_v2)(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *ud,
				    TTF_CUPTI_SUB_PARAMS *params);
	CUptiResult (*subscribe)(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *ud);
	CUptiResult (*unsubscribe)(CUpti_SubscriberHandle s);
	CUptiResult (*enable_callback)(uint32_t enable, CUpti_SubscriberHandle s,
				       CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
	CUptiResult (*set_thread_id_type)(CUpti_ActivityThreadIdType type);
	/* NULL when missing (CUDA < 11.6): the collector then converts by offset. */
	CUptiResult (*register_timestamp_cb)(CUpti_TimestampCallbackFunc fn);
	CUptiResult (*get_timestamp)(uint64_t *ts);
	CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc req,
					  CUpti_BuffersCallbackCompleteFunc done);
	CUptiResult (*enable)(CUpti_ActivityKind kind);
	CUptiResult (*flush_all)(uint32_t flag);
	CUptiResult (*get_next_record)(uint8_t *buf, size_t valid_bytes, CUpti_Activity **rec);
	CUptiResult (*get_num_dropped)(CUcontext ctx, uint32_t stream_id, size_t *dropped);
};

/*
 * Find libcupti and fill @api. Order: the copy already loaded in the process
 * (dlopen "libcupti.so.13" with RTLD_NOLOAD), $TTFTRACE_CUPTI_LIB,
 * $CUDA_HOME/lib64 and /usr/local/cuda/{lib64,extras/CUPTI/lib64}, then the
 * plain soname; libcupti.so.12 (already loaded, then by soname) as a last
 * resort. The handle is kept open for the life of the process.
 * Returns 0, -ENOENT (no library) or -ENOSYS (a required symbol is missing);
 * @why gets a one-line reason on failure.
 */
int cupti_api__load(struct cupti_api *api, char *why, size_t why_len);

#pragma GCC visibility pop

#endif /* TTFTRACE_CUPTI_API_H */
