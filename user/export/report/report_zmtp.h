/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A ZMTP connection's summary (user/proto/zmtp/zmtp.h) as the report shows it:
 * one NDJSON line {"type":"zmtp", ...} (keys in README, "ZMTP hops"), or
 * one text line. Ids, counts and sizes only: no payload text.
 */
#ifndef TTFTRACE_REPORT_ZMTP_H
#define TTFTRACE_REPORT_ZMTP_H

#include <stdio.h>
#include <cjson/cJSON.h>
#include "user/proto/zmtp/zmtp.h"

/* The line's object; NULL when out of memory. */
cJSON *report_zmtp__json(const struct ttf_zmtp_conn *z);
/* The text line, to out. */
void report_zmtp__text(FILE *out, const struct ttf_zmtp_conn *z);

#endif /* TTFTRACE_REPORT_ZMTP_H */
