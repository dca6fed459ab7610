// SPDX-License-Identifier: Apache-2.0
/*
 * push.c - Pyroscope Connect PushRequest decoder; see push.h. Binary:
 * fmt_pb_check then protobuf-c over our push.proto. JSON: jansson
 * (fmt_json_load's cost cap), base64 decoded into one owned buffer per
 * sample.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "base/parse.h"
#include "format/pbcheck.h"
#include "format/push.h"
#include "format/textutil.h"

#include <jansson.h>

#include "push/v1/push.pb-c.h"

#define PUSH_DESC push__v1__push_request__descriptor

struct push_priv {
	Push__V1__PushRequest *msg; /* binary */
	VEC(uint8_t *) bufs;	    /* JSON: decoded raw profiles */
};

void fmt_push_release(struct fmt_push_req *r)
{
	struct push_priv *pv;

	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		for (size_t k = 0; k < r->series[i].nlabels; k++) {
			free(r->series[i].labels[k].name);
			free(r->series[i].labels[k].value);
		}
		free(r->series[i].labels);
		free(r->series[i].samples);
	}
	free(r->series);
	pv = r->priv;
	if (pv) {
		if (pv->msg)
			protobuf_c_message_free_unpacked(&pv->msg->base, NULL);
		for (size_t i = 0; i < pv->bufs.n; i++)
			free(pv->bufs.v[i]);
		VEC_FREE(&pv->bufs);
		free(pv);
	}
	memset(r, 0, sizeof(*r));
}

/* A label from @name/@value (@nn/@vn bytes); false when not text. */
static int add_label(struct fmt_push_series *s, const char *name, size_t nn, const char *value,
		     size_t vn, size_t si, struct prof_err *err)
{
	size_t k = s->nlabels;

	if (!nn || memchr(name, 0, nn) || memchr(value, 0, vn))
		return prof_err_set(err, -PROF_ECORRUPT, -1, "push: series[%zu].labels[%zu]: %s",
				    si, k,
				    nn ? "a NUL byte in the name or value" : "empty label name");
	s->labels[k].name = xstrndup(name, nn);
	s->labels[k].value = xstrndup(value, vn);
	s->nlabels++;
	return 0;
}

static int decode_binary(const void *data, size_t n, struct fmt_push_req *out, struct push_priv *pv,
			 struct prof_err *err)
{
	Push__V1__PushRequest *m;
	int rc;

	/* Every RawSample copies its bytes once: about 2x the body plus structs. */
	rc = fmt_pb_check(&PUSH_DESC, data, n, "push", 4 * n + (1u << 20), NULL, err);
	if (rc)
		return rc;
	m = push__v1__push_request__unpack(NULL, n, data);
	if (!m)
		return prof_err_set(err, -PROF_ECORRUPT, -1,
				    "push: protobuf-c could not unpack the request (%zu bytes)", n);
	pv->msg = m;
	out->series = xcalloc(m->n_series + 1, sizeof(*out->series));
	for (size_t i = 0; i < m->n_series; i++) {
		const Push__V1__RawProfileSeries *rs = m->series[i];
		struct fmt_push_series *s = &out->series[i];

		out->n = i + 1;
		s->labels = xcalloc(rs->n_labels + 1, sizeof(*s->labels));
		for (size_t k = 0; k < rs->n_labels; k++) {
			const char *nm = rs->labels[k]->name, *v = rs->labels[k]->value;

			/* (protobuf-c cuts a string at its first NUL byte) */
			if ((rc = add_label(s, nm, strlen(nm), v, strlen(v), i, err)))
				return rc;
		}
		s->samples = xcalloc(rs->n_samples + 1, sizeof(*s->samples));
		for (size_t k = 0; k < rs->n_samples; k++) {
			s->samples[k].data = rs->samples[k]->raw_profile.data;
			s->samples[k].len = rs->samples[k]->raw_profile.len;
			s->nsamples++;
		}
	}
	return 0;
}

/* obj[camel] or obj[snake] (protobuf JSON accepts both names). */
static json_t *field(json_t *obj, const char *camel, const char *snake)
{
	json_t *v = json_object_get(obj, camel);

	return v ? v : snake ? json_object_get(obj, snake) : NULL;
}

static int json_arr(json_t *v, const char *path, struct prof_err *err)
{
	if (v && !json_is_array(v) && !json_is_null(v))
		return prof_err_set(err, -PROF_ECORRUPT, -1, "push: %s: expected an array", path);
	return 0;
}

static int decode_json(const void *data, size_t n, struct fmt_push_req *out, struct push_priv *pv,
		       struct prof_err *err)
{
	json_t *root = fmt_json_load(data, n, "push", err), *series;
	char path[96];
	int rc = 0;

	if (!root)
		return err && err->code ? err->code : -PROF_ECORRUPT;
	if (!json_is_object(root)) {
		rc = prof_err_set(err, -PROF_ECORRUPT, -1, "push: expected a JSON object");
		goto out;
	}
	series = json_object_get(root, "series");
	if ((rc = json_arr(series, "series", err)))
		goto out;
	out->series = xcalloc(json_array_size(series) + 1, sizeof(*out->series));
	for (size_t i = 0; i < json_array_size(series) && !rc; i++) {
		json_t *rs = json_array_get(series, i), *labels, *samples;
		struct fmt_push_series *s = &out->series[i];

		out->n = i + 1;
		if (!json_is_object(rs)) {
			rc = prof_err_set(err, -PROF_ECORRUPT, -1,
					  "push: series[%zu]: expected an object", i);
			break;
		}
		labels = json_object_get(rs, "labels");
		samples = json_object_get(rs, "samples");
		snprintf(path, sizeof(path), "series[%zu].labels", i);
		if ((rc = json_arr(labels, path, err)))
			break;
		snprintf(path, sizeof(path), "series[%zu].samples", i);
		if ((rc = json_arr(samples, path, err)))
			break;
		s->labels = xcalloc(json_array_size(labels) + 1, sizeof(*s->labels));
		for (size_t k = 0; k < json_array_size(labels) && !rc; k++) {
			json_t *l = json_array_get(labels, k), *nm = json_object_get(l, "name"),
			       *v = json_object_get(l, "value");

			if ((nm && !json_is_string(nm)) || (v && !json_is_string(v))) {
				rc = prof_err_set(err, -PROF_ECORRUPT, -1,
						  "push: series[%zu].labels[%zu]: name and value "
						  "must be strings",
						  i, k);
				break;
			}
			rc = add_label(s, nm ? json_string_value(nm) : "",
				       nm ? json_string_length(nm) : 0,
				       v ? json_string_value(v) : "", v ? json_string_length(v) : 0,
				       i, err);
		}
		s->samples = xcalloc(json_array_size(samples) + 1, sizeof(*s->samples));
		for (size_t k = 0; k < json_array_size(samples) && !rc; k++) {
			json_t *sm = json_array_get(samples, k),
			       *raw = field(sm, "rawProfile", "raw_profile");
			uint8_t *b;
			size_t bn = 0;

			if (raw && !json_is_string(raw)) {
				rc = prof_err_set(
					err, -PROF_ECORRUPT, -1,
					"push: series[%zu].samples[%zu].rawProfile: expected "
					"a base64 string",
					i, k);
				break;
			}
			b = parse_base64(raw ? json_string_value(raw) : "",
					 raw ? json_string_length(raw) : 0, &bn);
			if (!b) {
				rc = prof_err_set(err, -PROF_ECORRUPT, -1,
						  "push: series[%zu].samples[%zu].rawProfile: not "
						  "base64",
						  i, k);
				break;
			}
			VEC_PUSH(&pv->bufs, b);
			s->samples[k].data = b;
			s->samples[k].len = bn;
			s->nsamples++;
		}
	}
out:
	json_decref(root);
	return rc;
}

int fmt_push_decode(const void *data, size_t n, bool json, struct fmt_push_req *out,
		    struct prof_err *err)
{
	struct push_priv *pv = xcalloc(1, sizeof(*pv));
	int rc;

	memset(out, 0, sizeof(*out));
	out->priv = pv;
	rc = json ? decode_json(data ? data : "", n, out, pv, err)
		  : decode_binary(data ? data : "", n, out, pv, err);
	if (rc)
		fmt_push_release(out);
	return rc;
}
