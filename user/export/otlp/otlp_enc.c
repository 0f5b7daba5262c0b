// SPDX-License-Identifier: GPL-2.0-only
/* Protobuf and JSON backends of the OTLP writer (otlp_enc.h). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/lib/pbwire.h"
#include "user/export/otlp/otlp_enc.h"

#define MAX_DEPTH PB_MAX_DEPTH

struct otlp_enc {
	enum otlp_proto proto;
	int err;
	struct pb_buf pb;
	cJSON *root;
	cJSON *stack[MAX_DEPTH + 1];
	int depth;	/* JSON: stack[depth] is the open object */
};

struct otlp_enc *otlp_enc__new(enum otlp_proto p)
{
	struct otlp_enc *e = calloc(1, sizeof(*e));

	if (!e) {
		errno = ENOMEM;
		return NULL;
	}
	e->proto = p;
	pb_init(&e->pb);
	if (p == OTLP_PROTO_JSON) {
		e->root = cJSON_CreateObject();
		if (!e->root) {
			free(e);
			errno = ENOMEM;
			return NULL;
		}
		e->stack[0] = e->root;
	}
	return e;
}

static cJSON *cur(struct otlp_enc *e)
{
	return e->err ? NULL : e->stack[e->depth];
}

/* Add item under name to the open object: appended to an array when repeated. */
static void json_add(struct otlp_enc *e, const char *name, cJSON *item, bool repeated)
{
	cJSON *o = cur(e), *arr;

	if (!o || !item) {
		cJSON_Delete(item);
		e->err = e->err ? e->err : -ENOMEM;
		return;
	}
	if (!repeated) {
		if (!cJSON_AddItemToObject(o, name, item)) {
			cJSON_Delete(item);
			e->err = -ENOMEM;
		}
		return;
	}
	arr = cJSON_GetObjectItemCaseSensitive(o, name);
	if (!arr && !(arr = cJSON_AddArrayToObject(o, name))) {
		cJSON_Delete(item);
		e->err = -ENOMEM;
		return;
	}
	if (!cJSON_AddItemToArray(arr, item)) {
		cJSON_Delete(item);
		e->err = -ENOMEM;
	}
}

void otlp_enc__begin(struct otlp_enc *e, uint32_t field, const char *name, bool repeated)
{
	cJSON *o;

	if (e->err)
		return;
	if (e->proto == OTLP_PROTO_PROTOBUF) {
		pb_begin(&e->pb, field);
		return;
	}
	if (e->depth == MAX_DEPTH) {
		e->err = -EINVAL;
		return;
	}
	o = cJSON_CreateObject();
	json_add(e, name, o, repeated);
	if (!e->err)
		e->stack[++e->depth] = o;
}

void otlp_enc__end(struct otlp_enc *e)
{
	if (e->err)
		return;
	if (e->proto == OTLP_PROTO_PROTOBUF) {
		pb_end(&e->pb);
		return;
	}
	if (!e->depth)
		e->err = -EINVAL;
	else
		e->depth--;
}

void otlp_enc__str(struct otlp_enc *e, uint32_t field, const char *name, const char *s)
{
	if (e->proto == OTLP_PROTO_PROTOBUF)
		pb_string(&e->pb, field, s);
	else if (!e->err)
		json_add(e, name, cJSON_CreateString(s), false);
}

static void json_u64_string(struct otlp_enc *e, const char *name, unsigned long long v,
			    bool neg)
{
	char buf[24];

	snprintf(buf, sizeof(buf), neg ? "-%llu" : "%llu", v);
	json_add(e, name, cJSON_CreateString(buf), false);
}

void otlp_enc__int64(struct otlp_enc *e, uint32_t field, const char *name, int64_t v)
{
	if (e->proto == OTLP_PROTO_PROTOBUF)
		pb_int64(&e->pb, field, v);
	else if (!e->err)
		json_u64_string(e, name, v < 0 ? -(unsigned long long)v : (unsigned long long)v,
				v < 0);
}

void otlp_enc__uint(struct otlp_enc *e, uint32_t field, const char *name, uint32_t v)
{
	if (e->proto == OTLP_PROTO_PROTOBUF)
		pb_uint(&e->pb, field, v);
	else if (!e->err)
		json_add(e, name, cJSON_CreateNumber(v), false);
}

void otlp_enc__fixed32(struct otlp_enc *e, uint32_t field, const char *name, uint32_t v)
{
	if (e->proto == OTLP_PROTO_PROTOBUF)
		pb_fixed32(&e->pb, field, v);
	else if (!e->err)
		json_add(e, name, cJSON_CreateNumber(v), false);
}

void otlp_enc__fixed64(struct otlp_enc *e, uint32_t field, const char *name, uint64_t v)
{
	if (e->proto == OTLP_PROTO_PROTOBUF)
		pb_fixed64(&e->pb, field, v);
	else if (!e->err)
		json_u64_string(e, name, v, false);
}

void otlp_enc__double(struct otlp_enc *e, uint32_t field, const char *name, double v)
{
	if (e->proto == OTLP_PROTO_PROTOBUF)
		pb_double(&e->pb, field, v);
	else if (!e->err)
		json_add(e, name, cJSON_CreateNumber(v), false);
}

void otlp_enc__id(struct otlp_enc *e, uint32_t field, const char *name, const uint8_t *id,
		  size_t n)
{
	char hex[65];

	if (e->proto == OTLP_PROTO_PROTOBUF) {
		pb_bytes(&e->pb, field, id, n);
		return;
	}
	if (n > 32) {
		e->err = -EINVAL;
		return;
	}
	for (size_t i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	hex[2 * n] = '\0';
	if (!e->err)
		json_add(e, name, cJSON_CreateString(hex), false);
}

void otlp_enc__fixed64s(struct otlp_enc *e, uint32_t field, const char *name,
			const uint64_t *v, size_t n)
{
	cJSON *arr;

	if (e->proto == OTLP_PROTO_PROTOBUF) {
		pb_packed_fixed64(&e->pb, field, v, n);
		return;
	}
	if (e->err || !n)
		return;
	arr = cJSON_CreateArray();
	for (size_t i = 0; arr && i < n; i++) {
		char buf[24];
		cJSON *s;

		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v[i]);
		s = cJSON_CreateString(buf);
		if (!s || !cJSON_AddItemToArray(arr, s)) {
			cJSON_Delete(s);
			e->err = -ENOMEM;
		}
	}
	json_add(e, name, arr, false);
}

void otlp_enc__doubles(struct otlp_enc *e, uint32_t field, const char *name, const double *v,
		       size_t n)
{
	if (e->proto == OTLP_PROTO_PROTOBUF) {
		pb_packed_double(&e->pb, field, v, n);
		return;
	}
	if (e->err || !n)
		return;
	json_add(e, name, cJSON_CreateDoubleArray(v, (int)n), false);
}

int otlp_enc__finish(struct otlp_enc *e, char **out, size_t *len)
{
	int err = e->err;

	*out = NULL;
	*len = 0;
	if (e->proto == OTLP_PROTO_PROTOBUF) {
		if (!err)
			err = e->pb.err;
		if (!err && e->pb.depth)
			err = -EINVAL;
		if (!err) {
			/* an empty message is a valid body: hand back a real buffer */
			*out = e->pb.len ? (char *)e->pb.p : malloc(1);
			*len = e->pb.len;
			if (e->pb.len)
				e->pb.p = NULL;
			else if (!*out)
				err = -ENOMEM;
		}
		pb_free(&e->pb);
	} else {
		if (!err && e->depth)
			err = -EINVAL;
		if (!err) {
			*out = cJSON_PrintUnformatted(e->root);
			if (!*out)
				err = -ENOMEM;
			else
				*len = strlen(*out);
		}
		cJSON_Delete(e->root);
	}
	free(e);
	return err;
}

/* ---- KeyValue { key = 1; value = 2 (AnyValue) } ---- */

static void kv_begin(struct otlp_enc *e, uint32_t field, const char *key)
{
	otlp_enc__begin(e, field, "attributes", true);
	otlp_enc__str(e, 1, "key", key);
	otlp_enc__begin(e, 2, "value", false);
}

static void kv_end(struct otlp_enc *e)
{
	otlp_enc__end(e);
	otlp_enc__end(e);
}

/* AnyValue: string_value 1, bool_value 2, int_value 3, double_value 4, array_value 5 */
void otlp_enc__attr_str(struct otlp_enc *e, uint32_t field, const char *key, const char *v)
{
	kv_begin(e, field, key);
	otlp_enc__str(e, 1, "stringValue", v);
	kv_end(e);
}

void otlp_enc__attr_int(struct otlp_enc *e, uint32_t field, const char *key, int64_t v)
{
	kv_begin(e, field, key);
	otlp_enc__int64(e, 3, "intValue", v);
	kv_end(e);
}

void otlp_enc__attr_double(struct otlp_enc *e, uint32_t field, const char *key, double v)
{
	kv_begin(e, field, key);
	otlp_enc__double(e, 4, "doubleValue", v);
	kv_end(e);
}

void otlp_enc__attr_bool(struct otlp_enc *e, uint32_t field, const char *key, bool v)
{
	kv_begin(e, field, key);
	if (e->proto == OTLP_PROTO_PROTOBUF)
		pb_uint(&e->pb, 2, v);
	else if (!e->err)
		json_add(e, "boolValue", cJSON_CreateBool(v), false);
	kv_end(e);
}

/* ArrayValue { repeated AnyValue values = 1 } */
void otlp_enc__attr_strs(struct otlp_enc *e, uint32_t field, const char *key,
			 const char *const *v, int n)
{
	kv_begin(e, field, key);
	otlp_enc__begin(e, 5, "arrayValue", false);
	for (int i = 0; i < n; i++) {
		otlp_enc__begin(e, 1, "values", true);
		otlp_enc__str(e, 1, "stringValue", v[i]);
		otlp_enc__end(e);
	}
	otlp_enc__end(e);
	kv_end(e);
}
