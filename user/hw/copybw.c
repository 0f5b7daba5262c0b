// SPDX-License-Identifier: GPL-2.0-only
/* Copy bandwidth through a dlopen'ed CUDA runtime. See copybw.h. */
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <glob.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "user/hw/copybw.h"

#define COPYBW_LOAD_BYTES (64u << 20)

/* Signatures from cuda_runtime_api.h; cudaError_t and cudaMemcpyKind are C enums (int). */
struct copybw_cuda {
	void *dl;
	int nr_devices;
	const char *last_error;
	int (*get_device_count)(int *count);
	int (*set_device)(int dev);
	int (*malloc_dev)(void **ptr, size_t size);
	int (*free_dev)(void *ptr);
	int (*malloc_host)(void **ptr, size_t size);
	int (*free_host)(void *ptr);
	int (*memcpy)(void *dst, const void *src, size_t count, int kind);
	int (*sync)(void);
	int (*pci_bus_id)(char *bus_id, int len, int dev);
	const char *(*error_string)(int err);
};

struct copybw_load {
	struct copybw_cuda *cu;
	int dev;
	pthread_t thread;
	atomic_bool stop;
	int err;
	double gbps;
};

int copybw__parse_size(const char *s, size_t *bytes)
{
	unsigned long long v, mult = 1;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (toupper((unsigned char)*end)) {
	case 'K': mult = 1ULL << 10; end++; break;
	case 'M': mult = 1ULL << 20; end++; break;
	case 'G': mult = 1ULL << 30; end++; break;
	}
	if (mult > 1 && (!strcmp(end, "iB") || !strcmp(end, "B")))
		end += strlen(end);
	else if (mult == 1 && !strcmp(end, "B"))
		end++;
	if (*end || !v || v > (4ULL << 30) / mult)
		return -EINVAL;
	*bytes = v * mult;
	return 0;
}

int copybw__parse_sizes(const char *list, size_t *sizes, int max)
{
	char buf[512], *tok, *save;
	int n = 0;

	if (!list || strlen(list) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == max || copybw__parse_size(tok, &sizes[n]))
			return -EINVAL;
		n++;
	}
	return n ? n : -EINVAL;
}

const char *copybw__fmt_size(size_t bytes, char *buf, size_t len)
{
	if (bytes >= (1u << 30) && !(bytes % (1u << 30)))
		snprintf(buf, len, "%zuGiB", bytes >> 30);
	else if (bytes >= (1u << 20) && !(bytes % (1u << 20)))
		snprintf(buf, len, "%zuMiB", bytes >> 20);
	else if (bytes >= 1024 && !(bytes % 1024))
		snprintf(buf, len, "%zuKiB", bytes >> 10);
	else
		snprintf(buf, len, "%zuB", bytes);
	return buf;
}

static void *copybw_dlopen_any(const char *lib_path)
{
	static const char *const names[] = {
		"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0",
	};
	static const char *const globs[] = {
		"/usr/local/cuda/lib64/libcudart.so*",
		"/usr/local/cuda-*/lib64/libcudart.so*",
		"/usr/local/lib/python3*/dist-packages/nvidia/cuda_runtime/lib/libcudart.so*",
		"/usr/lib/python3/dist-packages/nvidia/cuda_runtime/lib/libcudart.so*",
		"/usr/local/lib/python3*/site-packages/nvidia/cuda_runtime/lib/libcudart.so*",
	};
	const char *env = getenv("TTF_CUDART");
	void *dl = NULL;
	size_t i, j;

	if (lib_path || (env && *env))
		return dlopen(lib_path ? lib_path : env, RTLD_NOW | RTLD_LOCAL);
	for (i = 0; i < sizeof(names) / sizeof(names[0]) && !dl; i++)
		dl = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	for (i = 0; i < sizeof(globs) / sizeof(globs[0]) && !dl; i++) {
		glob_t g;

		if (glob(globs[i], 0, NULL, &g))
			continue;
		/* glob sorts: walk backwards so that cuda-13.x is tried before cuda-12.x */
		for (j = g.gl_pathc; j > 0 && !dl; j--)
			dl = dlopen(g.gl_pathv[j - 1], RTLD_NOW | RTLD_LOCAL);
		globfree(&g);
	}
	return dl;
}

int copybw__open(const char *lib_path, struct copybw_cuda **out, const char **why)
{
	struct copybw_cuda *cu;
	int err = 0, rc;

	*out = NULL;
	cu = calloc(1, sizeof(*cu));
	if (!cu)
		return -ENOMEM;
	cu->last_error = "no error";
	cu->dl = copybw_dlopen_any(lib_path);
	if (!cu->dl) {
		*why = "CUDA runtime library (libcudart.so) not found";
		err = -ENOENT;
		goto cleanup;
	}
#define COPYBW_SYM(field, name)						\
	do {								\
		*(void **)&cu->field = dlsym(cu->dl, name);		\
		if (!cu->field) {					\
			*why = "libcudart lacks " name;			\
			err = -ENOSYS;					\
			goto cleanup;					\
		}							\
	} while (0)
	COPYBW_SYM(get_device_count, "cudaGetDeviceCount");
	COPYBW_SYM(set_device, "cudaSetDevice");
	COPYBW_SYM(malloc_dev, "cudaMalloc");
	COPYBW_SYM(free_dev, "cudaFree");
	COPYBW_SYM(malloc_host, "cudaMallocHost");
	COPYBW_SYM(free_host, "cudaFreeHost");
	COPYBW_SYM(memcpy, "cudaMemcpy");
	COPYBW_SYM(sync, "cudaDeviceSynchronize");
	COPYBW_SYM(pci_bus_id, "cudaDeviceGetPCIBusId");
	COPYBW_SYM(error_string, "cudaGetErrorString");
#undef COPYBW_SYM
	/* Without a driver this returns cudaErrorInsufficientDriver (35) or NoDevice (100). */
	rc = cu->get_device_count(&cu->nr_devices);
	if (rc || cu->nr_devices <= 0) {
		*why = rc ? cu->error_string(rc) : "cudaGetDeviceCount reports 0 devices";
		/* cudaErrorNoDevice (100) or none: no GPU; any other error: the driver */
		err = !rc || rc == 100 ? -ENODEV : -ELIBACC;
		goto cleanup;
	}
	*out = cu;
	return 0;
cleanup:
	/* Keep the runtime mapped: *why may point into it. It is process-lifetime anyway. */
	free(cu);
	return err;
}

void copybw__close(struct copybw_cuda *cu)
{
	/* No dlclose: the runtime registers atexit handlers that must stay mapped. */
	free(cu);
}

int copybw__device_count(const struct copybw_cuda *cu)
{
	return cu->nr_devices;
}

const char *copybw__last_error(const struct copybw_cuda *cu)
{
	return cu->last_error ? cu->last_error : "unknown";
}

static int copybw_check(struct copybw_cuda *cu, int rc)
{
	if (!rc)
		return 0;
	cu->last_error = cu->error_string(rc);
	return -EIO;
}

int copybw__device_bdf(struct copybw_cuda *cu, int dev, char *bdf, size_t len)
{
	size_t i;

	if (copybw_check(cu, cu->pci_bus_id(bdf, (int)len, dev)))
		return -EIO;
	for (i = 0; bdf[i]; i++)
		bdf[i] = tolower((unsigned char)bdf[i]);
	return 0;
}

static long long copybw_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int copybw_copy(struct copybw_cuda *cu, enum copybw_dir dir, void *host, void *devp,
		       size_t bytes)
{
	int rc = dir == COPYBW_H2D ? cu->memcpy(devp, host, bytes, COPYBW_H2D)
				   : cu->memcpy(host, devp, bytes, COPYBW_D2H);

	if (!rc)
		rc = cu->sync();
	return copybw_check(cu, rc);
}

int copybw__measure(struct copybw_cuda *cu, int dev, enum copybw_dir dir, bool pinned,
		    size_t bytes, int warmup, int iters, double *gbps)
{
	void *host = NULL, *devp = NULL;
	long long t0, t1;
	int err, i;

	err = copybw_check(cu, cu->set_device(dev));
	if (err)
		return err;
	if (pinned) {
		err = copybw_check(cu, cu->malloc_host(&host, bytes));
	} else {
		host = malloc(bytes);
		if (host)
			memset(host, 1, bytes);	/* fault the pages in before timing */
		else
			err = -ENOMEM;
	}
	if (err)
		goto cleanup;
	err = copybw_check(cu, cu->malloc_dev(&devp, bytes));
	if (err)
		goto cleanup;
	for (i = 0; i < warmup && !err; i++)
		err = copybw_copy(cu, dir, host, devp, bytes);
	t0 = copybw_now_ns();
	for (i = 0; i < iters && !err; i++)
		err = copybw_copy(cu, dir, host, devp, bytes);
	t1 = copybw_now_ns();
	if (!err)
		*gbps = t1 > t0 ? (double)bytes * iters / (double)(t1 - t0) : 0.0;
cleanup:
	if (devp)
		cu->free_dev(devp);
	if (pinned && host)
		cu->free_host(host);
	else
		free(host);
	return err;
}

static void *copybw_load_thread(void *arg)
{
	struct copybw_load *ld = arg;
	struct copybw_cuda *cu = ld->cu;
	void *host = NULL, *devp = NULL;
	long long t0, bytes = 0;

	ld->err = copybw_check(cu, cu->set_device(ld->dev));
	if (!ld->err)
		ld->err = copybw_check(cu, cu->malloc_host(&host, COPYBW_LOAD_BYTES));
	if (!ld->err)
		ld->err = copybw_check(cu, cu->malloc_dev(&devp, COPYBW_LOAD_BYTES));
	t0 = copybw_now_ns();
	while (!ld->err && !atomic_load(&ld->stop)) {
		ld->err = copybw_copy(cu, COPYBW_H2D, host, devp, COPYBW_LOAD_BYTES);
		bytes += COPYBW_LOAD_BYTES;
	}
	if (!ld->err && bytes)
		ld->gbps = (double)bytes / (double)(copybw_now_ns() - t0);
	if (devp)
		cu->free_dev(devp);
	if (host)
		cu->free_host(host);
	return NULL;
}

int copybw__load_start(struct copybw_cuda *cu, int dev, struct copybw_load **out)
{
	struct copybw_load *ld = calloc(1, sizeof(*ld));
	int err;

	if (!ld)
		return -ENOMEM;
	ld->cu = cu;
	ld->dev = dev;
	atomic_init(&ld->stop, false);
	err = pthread_create(&ld->thread, NULL, copybw_load_thread, ld);
	if (err) {
		free(ld);
		return -err;
	}
	*out = ld;
	return 0;
}

int copybw__load_stop(struct copybw_load *ld, double *gbps)
{
	int err;

	atomic_store(&ld->stop, true);
	pthread_join(ld->thread, NULL);
	err = ld->err;
	if (gbps)
		*gbps = ld->gbps;
	free(ld);
	return err;
}
