/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Wire format between the injected CUPTI collector (cupti/, one per CUDA
 * process) and ttftrace (user/probe/gpu_rx.c). Fixed-width types only, no CUPTI
 * types, so user/ code includes it without the CUDA headers.
 *
 * Transport: AF_UNIX SOCK_SEQPACKET. ttftrace listens; each collector
 * connects without blocking and sends one message per packet:
 *   struct ttf_gpu_msg_hdr, then
 *   RECORDS: count * struct ttf_gpu_rec
 *   NAME:    struct ttf_gpu_name + len bytes (not NUL-terminated)
 *   STATS:   struct ttf_gpu_stats (cumulative since the collector started)
 *   NOTICE:  struct ttf_gpu_notice + len bytes of text (not NUL-terminated):
 *            what a collector loaded into a running process found there
 *            (`ttftrace gpu-attach`, docs/cupti.md A9)
 * Little-endian host order (same machine). All timestamps are CLOCK_MONOTONIC
 * ns, i.e. the bpf_ktime_get_ns() domain (docs/kernel.md B6, docs/cupti.md A4).
 */
#ifndef TTFTRACE_CUPTI_GPU_WIRE_H
#define TTFTRACE_CUPTI_GPU_WIRE_H

#include <stdint.h>

#define TTF_GPU_WIRE_MAGIC 0x31475454u /* "TTG1" */
#define TTF_GPU_WIRE_VERSION 1
/* Socket address: "@name" = abstract namespace, anything else a path. */
#define TTF_GPU_SOCK_ENV "TTFTRACE_CUPTI_SOCK"
#define TTF_GPU_SOCK_DEFAULT "@ttftrace-cupti"
/* Records per RECORDS message: 512 * 64 B = 32 KiB, below the default SO_SNDBUF. */
#define TTF_GPU_MSG_MAX_RECS 512
/* Longest kernel name sent; longer names are cut and flagged. */
#define TTF_GPU_NAME_MAX 1024
#define TTF_GPU_MSG_MAX_BYTES (sizeof(struct ttf_gpu_msg_hdr) + \
			       TTF_GPU_MSG_MAX_RECS * sizeof(struct ttf_gpu_rec))

enum ttf_gpu_msg_type {
	TTF_GPU_MSG_RECORDS = 1,
	TTF_GPU_MSG_NAME = 2,
	TTF_GPU_MSG_STATS = 3,
	TTF_GPU_MSG_NOTICE = 4,
};

struct ttf_gpu_msg_hdr {
	uint32_t magic;   /* TTF_GPU_WIRE_MAGIC */
	uint16_t version; /* TTF_GPU_WIRE_VERSION */
	uint16_t type;    /* enum ttf_gpu_msg_type */
	uint32_t pid;     /* getpid() of the CUDA process (its own PID namespace) */
	uint32_t count;   /* RECORDS: number of records; NAME/STATS: 1 */
	uint64_t seq;     /* message sequence number per collector, from 0 */
};

enum ttf_gpu_rec_type {
	TTF_GPU_REC_KERNEL = 1, /* CONCURRENT_KERNEL record */
	TTF_GPU_REC_MEMCPY = 2, /* MEMCPY record */
	TTF_GPU_REC_MEMSET = 3, /* MEMSET record */
	TTF_GPU_REC_API = 4,    /* RUNTIME or DRIVER API record (selected calls only) */
};

/* ttf_gpu_rec.copy_kind for MEMCPY: CUpti_ActivityMemcpyKind values */
enum ttf_gpu_copy_kind {
	TTF_GPU_COPY_HTOD = 1,
	TTF_GPU_COPY_DTOH = 2,
	TTF_GPU_COPY_DTOD = 8,
	TTF_GPU_COPY_HTOH = 9,
	TTF_GPU_COPY_PTOP = 10,
};

/* src_kind/dst_kind (MEMCPY), dst_kind (MEMSET): CUpti_ActivityMemoryKind values */
enum ttf_gpu_mem_kind {
	TTF_GPU_MEM_UNKNOWN = 0,
	TTF_GPU_MEM_PAGEABLE = 1,
	TTF_GPU_MEM_PINNED = 2,
	TTF_GPU_MEM_DEVICE = 3,
	TTF_GPU_MEM_ARRAY = 4,
	TTF_GPU_MEM_MANAGED = 5,
};

/* ttf_gpu_rec.api.category: why the collector kept this API record */
enum ttf_gpu_api_category {
	TTF_GPU_API_OTHER = 0,        /* only with TTFTRACE_CUPTI_API=all */
	TTF_GPU_API_LAUNCH = 1,       /* kernel launch */
	TTF_GPU_API_GRAPH_LAUNCH = 2, /* graph launch: many kernels share its correlation id */
	TTF_GPU_API_MEMCPY = 3,
	TTF_GPU_API_MEMSET = 4,
	TTF_GPU_API_SYNC = 5,         /* the host waits for the GPU */
};

/* ttf_gpu_rec.api.domain */
enum ttf_gpu_api_domain {
	TTF_GPU_API_RUNTIME = 1,
	TTF_GPU_API_DRIVER = 2,
};

/* ttf_gpu_rec.flags */
enum ttf_gpu_rec_flags {
	TTF_GPU_RECF_GRAPH = 1 << 0, /* kernel/copy replayed from a CUDA graph (graph_id != 0) */
};

/* One GPU activity or host API record: 64 bytes. */
struct ttf_gpu_rec {
	uint64_t start_ns;       /* CLOCK_MONOTONIC ns */
	uint64_t end_ns;         /* CLOCK_MONOTONIC ns, >= start_ns (invalid ones are dropped) */
	uint32_t correlation_id; /* joins a kernel/copy to the API record that launched it */
	uint32_t device_id;      /* CUDA device ordinal (0 for API records) */
	uint32_t stream_id;      /* 0 for API records */
	uint32_t graph_id;       /* 0 unless replayed from a CUDA graph */
	uint8_t type;            /* enum ttf_gpu_rec_type */
	uint8_t copy_kind;       /* MEMCPY: enum ttf_gpu_copy_kind */
	uint8_t src_kind;        /* MEMCPY: enum ttf_gpu_mem_kind */
	uint8_t dst_kind;        /* MEMCPY/MEMSET: enum ttf_gpu_mem_kind */
	uint32_t flags;          /* enum ttf_gpu_rec_flags */
	union {
		struct {
			uint64_t name_id;  /* matches a NAME message; 0 = no name */
			uint32_t grid_x;
			uint16_t grid_y, grid_z;
			uint16_t block_x, block_y, block_z;
			uint16_t pad;
		} kernel;
		struct {
			uint64_t bytes;
			uint32_t runtime_correlation_id; /* MEMCPY: runtime API record, 0 = none */
			uint32_t pad[3];
		} copy;
		struct {
			uint32_t tid;      /* gettid() of the caller (thread id type SYSTEM) */
			uint32_t cbid;     /* CUpti_CallbackId in its domain */
			uint8_t domain;    /* enum ttf_gpu_api_domain */
			uint8_t category;  /* enum ttf_gpu_api_category */
			uint16_t pad16;
			int32_t ret;       /* CUresult / cudaError_t of the call */
			uint64_t pad;
		} api;
	};
};

struct ttf_gpu_name {
	uint64_t name_id; /* 64-bit FNV-1a of the full name */
	uint32_t len;     /* bytes that follow, <= TTF_GPU_NAME_MAX */
	uint32_t truncated;
};

/* ttf_gpu_notice.code */
enum ttf_gpu_notice_code {
	TTF_GPU_NOTICE_NO_CUDA = 1,     /* no CUDA in this process: nothing traced */
	TTF_GPU_NOTICE_ENABLED = 2,     /* CUPTI activity enabled: records follow */
	TTF_GPU_NOTICE_UNAVAILABLE = 3, /* CUDA is there, CUPTI could not be enabled */
};

/* Longest notice text. */
#define TTF_GPU_NOTICE_MAX 256

struct ttf_gpu_notice {
	uint32_t code; /* enum ttf_gpu_notice_code */
	uint32_t len;  /* bytes of text that follow, <= TTF_GPU_NOTICE_MAX */
};

/* Collector health: cumulative counters, sent about once a second. */
struct ttf_gpu_stats {
	uint64_t records[5];        /* decoded and kept, by enum ttf_gpu_rec_type */
	uint64_t cupti_dropped;     /* cuptiActivityGetNumDroppedRecords(): CUPTI had no buffer */
	uint64_t buffers;           /* buffers CUPTI completed */
	uint64_t buffers_refused;   /* buffer cap reached: NULL buffer returned (CUPTI drops) */
	uint64_t buffers_discarded; /* cap reached on old CUPTI: discard buffer, contents dropped */
	uint64_t duplicates;        /* dropped: same (kind, correlation id, start) seen before */
	uint64_t invalid_ts;        /* dropped: start or end zero, or end < start */
	uint64_t unknown_kind;      /* records of kinds we do not decode (skipped, not lost) */
	uint64_t api_filtered;      /* API records not in the kept set (skipped, not lost) */
	uint64_t send_dropped;      /* records lost in transport: nobody listening or socket full */
	uint64_t names_dropped;     /* name table full: kernels sent without a name */
	uint64_t clock_mode;        /* 1 = MONOTONIC timestamp callback, 2 = offset fallback */
	uint64_t cupti_version;     /* cuptiGetVersion() */
};

_Static_assert(sizeof(struct ttf_gpu_msg_hdr) == 24, "wire: msg header layout");
_Static_assert(sizeof(struct ttf_gpu_rec) == 64, "wire: record layout");
_Static_assert(sizeof(struct ttf_gpu_name) == 16, "wire: name layout");
_Static_assert(sizeof(struct ttf_gpu_notice) == 8, "wire: notice layout");
_Static_assert(sizeof(struct ttf_gpu_stats) == 17 * 8, "wire: stats layout");

#endif /* TTFTRACE_CUPTI_GPU_WIRE_H */
