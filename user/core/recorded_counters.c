// SPDX-License-Identifier: GPL-2.0-only
/* A recording's counters, with the values a replay computes (recorded_counters.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/core/recorded_counters.h"

void recorded_counters__free(struct recorded_counters *rc)
{
	free(rc->c);
	free(rc->names);
	*rc = (struct recorded_counters){ 0 };
}

int recorded_counters__set(struct recorded_counters *rc, const struct report_counter *c, int n,
			   int max)
{
	if (n > max)
		n = max;
	recorded_counters__free(rc);
	if (n <= 0)
		return 0;
	rc->c = calloc(n, sizeof(*rc->c));
	rc->names = calloc(n, sizeof(*rc->names));
	if (!rc->c || !rc->names)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		snprintf(rc->names[i], sizeof(rc->names[i]), "%s", c[i].name);
		rc->c[i] = (struct report_counter){ rc->names[i], c[i].value };
	}
	rc->n = n;
	return 0;
}

int recorded_counters__merge(const struct recorded_counters *rc, const struct report_counter *own,
			     int n_own, struct report_counter *out, int cap)
{
	int n = 0;

	for (int i = 0; i < rc->n && n < cap; i++) {
		out[n] = rc->c[i];
		for (int j = 0; j < n_own; j++)
			if (!strcmp(own[j].name, out[n].name))
				out[n].value = own[j].value;
		n++;
	}
	/* one the recording did not have (a newer tracer's), once it counted something */
	for (int j = 0; j < n_own && n < cap; j++) {
		int known = 0;

		for (int i = 0; i < rc->n && !known; i++)
			known = !strcmp(own[j].name, rc->c[i].name);
		if (!known && own[j].value)
			out[n++] = own[j];
	}
	return n;
}
