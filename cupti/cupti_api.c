// SPDX-License-Identifier: GPL-2.0-only
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cupti/cupti_api.h"

#define CUPTI_SONAME "libcupti.so.13"
/*
 * CUDA 12 servers carry libcupti.so.12: its kernel/copy record prefixes are
 * the same (Kernel4..Kernel10, docs/cupti.md A2), so it is accepted
 * too, after every CUDA 13 candidate.
 */
#define CUPTI_SONAME_12 "libcupti.so.12"

static CUptiResult (*get_result_string_fn)(CUptiResult r, const char **str);

static const char *result_string(CUptiResult r)
{
	const char *s = NULL;

	if (!get_result_string_fn || get_result_string_fn(r, &s) != CUPTI_SUCCESS || !s)
		return "unknown CUPTI error";
	return s;
}

static void *open_cupti(void)
{
	char path[4096];
	const char *env;
	void *h;

	/* Reuse the server's own copy (PyTorch wheels load it before cuInit). */
	h = dlopen(CUPTI_SONAME, RTLD_NOW | RTLD_NOLOAD);
	if (h)
		return h;
	h = dlopen(CUPTI_SONAME_12, RTLD_NOW | RTLD_NOLOAD);
	if (h)
		return h;
	env = getenv("TTFTRACE_CUPTI_LIB");
	if (env && *env && (h = dlopen(env, RTLD_NOW)))
		return h;
	env = getenv("CUDA_HOME");
	if (env && *env) {
		snprintf(path, sizeof(path), "%s/lib64/" CUPTI_SONAME, env);
		if ((h = dlopen(path, RTLD_NOW)))
			return h;
		snprintf(path, sizeof(path), "%s/extras/CUPTI/lib64/" CUPTI_SONAME, env);
		if ((h = dlopen(path, RTLD_NOW)))
			return h;
	}
	if ((h = dlopen("/usr/local/cuda/lib64/" CUPTI_SONAME, RTLD_NOW)))
		return h;
	if ((h = dlopen("/usr/local/cuda/extras/CUPTI/lib64/" CUPTI_SONAME, RTLD_NOW)))
		return h;
	if ((h = dlopen(CUPTI_SONAME, RTLD_NOW)))
		return h;
	return dlopen(CUPTI_SONAME_12, RTLD_NOW);
}

int cupti_api__load(struct cupti_api *api, char *why, size_t why_len)
{
	void *h = open_cupti();

	if (!h) {
		snprintf(why, why_len, "cannot load " CUPTI_SONAME
			 " (set TTFTRACE_CUPTI_LIB to its path)");
		return -ENOENT;
	}
#define SYM(field, name, required)                                                         \
	do {                                                                               \
		*(void **)&api->field = dlsym(h, name);                                     \
		if (required && !api->field) {                                             \
			snprintf(why, why_len, "%s missing from libcupti", name);          \
			return -ENOSYS;                                                     \
		}                                                                          \
	} while (0)
	SYM(get_version, "cuptiGetVersion", 1);
#ifdef TTF_CUPTI_SUBSCRIBE_V2
	SYM(subscribe_v2, "cuptiSubscribe_v2", 0);
#else
	api->subscribe_v2 = NULL;
#endif
	SYM(subscribe, "cuptiSubscribe", 1);
	SYM(unsubscribe, "cuptiUnsubscribe", 1);
	SYM(enable_callback, "cuptiEnableCallback", 1);
	SYM(set_thread_id_type, "cuptiSetThreadIdType", 1);
	SYM(register_timestamp_cb, "cuptiActivityRegisterTimestampCallback", 0);
	SYM(get_timestamp, "cuptiGetTimestamp", 1);
	SYM(register_callbacks, "cuptiActivityRegisterCallbacks", 1);
	SYM(enable, "cuptiActivityEnable", 1);
	SYM(flush_all, "cuptiActivityFlushAll", 1);
	SYM(get_next_record, "cuptiActivityGetNextRecord", 1);
	SYM(get_num_dropped, "cuptiActivityGetNumDroppedRecords", 1);
	SYM(result_string, "cuptiGetResultString", 1);
#undef SYM
	*(void **)&get_result_string_fn = (void *)api->result_string;
	api->result_string = result_string;
	return 0;
}
