/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Message hops in the report (user/model/hops/msg.h, docs/design.md D15):
 * a client request's split across its frontend and the engine process it
 * handed the request to over ZMQ.
 */
#ifndef TTFTRACE_REPORT_MSG_HOPS_H
#define TTFTRACE_REPORT_MSG_HOPS_H

#include <stdio.h>
#include <cjson/cJSON.h>
#include "user/model/attrib.h"

struct msg_hop_stats;

/* NULL on ENOMEM. */
struct msg_hop_stats *msg_hop_stats__new(void);
void msg_hop_stats__free(struct msg_hop_stats *hs);
/* Add a's message chain (none: nothing). 0 or -ENOMEM. */
int msg_hop_stats__add(struct msg_hop_stats *hs, const struct ttf_attrib *a);

/* NDJSON: "hops" (frontend, engine) and "hop_stages_ms"; nothing without a message chain. */
void report_msg_hops__json(cJSON *o, const struct ttf_attrib *a, int *err);
/* Text: one "    hops(ms):" line; nothing without a message chain. */
void report_msg_hops__text_line(FILE *out, const struct ttf_attrib *a);
/* Summary: nothing when no request had a message chain. */
void report_msg_hops__summary_text(FILE *out, const struct msg_hop_stats *hs);
void report_msg_hops__summary_json(cJSON *o, const struct msg_hop_stats *hs, int *err);

#endif /* TTFTRACE_REPORT_MSG_HOPS_H */
