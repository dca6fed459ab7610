// SPDX-License-Identifier: Apache-2.0
/*
 * pbcheck.c - protobuf wire checker over protobuf-c descriptors; see
 * pbcheck.h for why it exists. One pass, no allocation; recursion is
 * bounded by FMT_PB_MAX_DEPTH.
 */
#include "base/compat.h"
#include "format/pbcheck.h"
#include "format/pbwire.h"

/* Per-occurrence counters of repeated fields are kept for this many fields. */
#define PB_MAX_COUNTED 32

struct pb_frame {
	const ProtobufCMessageDescriptor *desc;
	const ProtobufCFieldDescriptor *field; /* field being descended into */
	size_t idx;			       /* its occurrence number */
};

struct pb_ctx {
	const uint8_t *base;
	const char *what;
	struct prof_err *err;
	size_t alloc;
	int depth;
	struct pb_frame st[FMT_PB_MAX_DEPTH + 1];
};

static const char *pb_short_name(const ProtobufCMessageDescriptor *d)
{
	return d->short_name ? d->short_name : d->name;
}

/* Formats the error with the path of fields leading to the failure. */
static int pb_fail(struct pb_ctx *c, int code, const uint8_t *at, const ProtobufCFieldDescriptor *f,
		   uint32_t fieldnum, const char *fmt, ...) PROF_PRINTF(6, 7);

static int pb_fail(struct pb_ctx *c, int code, const uint8_t *at, const ProtobufCFieldDescriptor *f,
		   uint32_t fieldnum, const char *fmt, ...)
{
	char path[256], why[200];
	size_t len = 0;
	va_list ap;

	path[0] = '\0';
	for (int d = 0; d <= c->depth && len < sizeof(path); d++) {
		const struct pb_frame *fr = &c->st[d];
		int w;

		if (d == 0)
			w = snprintf(path + len, sizeof(path) - len, "%s", pb_short_name(fr->desc));
		else
			w = snprintf(path + len, sizeof(path) - len, ".%s[%zu]",
				     c->st[d - 1].field->name, c->st[d - 1].idx);
		if (w < 0)
			break;
		len += (size_t)w;
	}
	if (len < sizeof(path)) {
		if (f)
			snprintf(path + len, sizeof(path) - len, ".%s", f->name);
		else if (fieldnum)
			snprintf(path + len, sizeof(path) - len, ".field %u", fieldnum);
	}
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return prof_err_set(c->err, code, (int64_t)(at - c->base), "%s: %s: %s at byte %zu",
			    c->what, path, why, (size_t)(at - c->base));
}

/* Wire type protobuf-c expects for a field of @type (not packed). */
static int pb_wire_type(ProtobufCType type)
{
	switch (type) {
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_FLOAT:
		return 5;
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return 1;
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_BYTES:
	case PROTOBUF_C_TYPE_MESSAGE:
		return 2;
	default:
		return 0;
	}
}

static size_t pb_scalar_size(ProtobufCType type)
{
	switch (type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_ENUM:
	case PROTOBUF_C_TYPE_BOOL:
		return 4;
	default:
		return 8;
	}
}

static int pb_walk(struct pb_ctx *c, const ProtobufCMessageDescriptor *desc, const uint8_t *p,
		   const uint8_t *end);

/* Checks one field's payload against its descriptor. */
static int pb_field(struct pb_ctx *c, const ProtobufCFieldDescriptor *f, size_t idx, int wt,
		    const uint8_t *tagp, const uint8_t *p, const uint8_t *end)
{
	int want = pb_wire_type(f->type);
	bool repeated = f->label == PROTOBUF_C_LABEL_REPEATED;

	if (wt != want) {
		/* Repeated scalars may come packed (length-delimited). */
		if (!(repeated && wt == 2 && want != 2))
			return pb_fail(c, -PROF_ECORRUPT, tagp, f, 0, "wire type %d, expected %d",
				       wt, want);
		for (const uint8_t *q = p; q < end;) {
			uint64_t v;

			if (want == 0) {
				if (!pbwire_varint(&q, end, 10, &v))
					return pb_fail(c, -PROF_ECORRUPT, q, f, 0,
						       "truncated varint in packed field");
			} else {
				size_t w = want == 1 ? 8 : 4;

				if ((size_t)(end - q) < w)
					return pb_fail(
						c, -PROF_ECORRUPT, q, f, 0,
						"packed field length is not a multiple of %zu", w);
				q += w;
			}
			c->alloc += pb_scalar_size(f->type);
		}
		return 0;
	}
	if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
		int rc;

		if (c->depth + 1 >= FMT_PB_MAX_DEPTH)
			return pb_fail(c, -PROF_ETOOBIG, tagp, f, 0,
				       "messages nested deeper than %d levels", FMT_PB_MAX_DEPTH);
		c->st[c->depth].field = f;
		c->st[c->depth].idx = idx;
		c->depth++;
		c->st[c->depth].desc = f->descriptor;
		c->alloc +=
			((const ProtobufCMessageDescriptor *)f->descriptor)->sizeof_message + 16;
		rc = pb_walk(c, f->descriptor, p, end);
		c->depth--;
		return rc;
	}
	if (f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_BYTES)
		c->alloc += (size_t)(end - p) + 24;
	else
		c->alloc += pb_scalar_size(f->type);
	return 0;
}

static int pb_walk(struct pb_ctx *c, const ProtobufCMessageDescriptor *desc, const uint8_t *p,
		   const uint8_t *end)
{
	size_t counts[PB_MAX_COUNTED] = { 0 };

	while (p < end) {
		const uint8_t *tagp = p, *body;
		const ProtobufCFieldDescriptor *f;
		uint64_t tag, v;
		uint32_t num;
		int wt, rc;

		if (!pbwire_varint(&p, end, 10, &tag))
			return pb_fail(c, -PROF_ECORRUPT, tagp, NULL, 0, "truncated field tag");
		wt = (int)(tag & 7);
		if ((tag >> 3) == 0 || (tag >> 3) > 0x1fffffff)
			return pb_fail(c, -PROF_ECORRUPT, tagp, NULL, 0,
				       "invalid field number %" PRIu64, tag >> 3);
		num = (uint32_t)(tag >> 3);
		f = protobuf_c_message_descriptor_get_field(desc, num);
		body = p;
		switch (wt) {
		case 0:
			if (!pbwire_varint(&p, end, 10, &v))
				return pb_fail(c, -PROF_ECORRUPT, body, f, num, "truncated varint");
			break;
		case 1:
			if (end - p < 8)
				return pb_fail(c, -PROF_ECORRUPT, body, f, num,
					       "truncated 64-bit value");
			p += 8;
			break;
		case 5:
			if (end - p < 4)
				return pb_fail(c, -PROF_ECORRUPT, body, f, num,
					       "truncated 32-bit value");
			p += 4;
			break;
		case 2:
			if (!pbwire_varint(&p, end, 10, &v))
				return pb_fail(c, -PROF_ECORRUPT, body, f, num, "truncated length");
			if (v > (uint64_t)(end - p))
				return pb_fail(c, -PROF_ECORRUPT, body, f, num,
					       "length %" PRIu64
					       " runs past the end (%zu bytes left)",
					       v, (size_t)(end - p));
			body = p;
			p += v;
			break;
		default:
			return pb_fail(c, -PROF_ECORRUPT, tagp, f, num, "unsupported wire type %d",
				       wt);
		}
		if (!f) {
			/* protobuf-c keeps unknown fields: a record plus a copy. */
			c->alloc += 32 + (size_t)(p - tagp);
			continue;
		}
		size_t fi = (size_t)(f - desc->fields), idx = 0;

		if (fi < PB_MAX_COUNTED)
			idx = counts[fi]++;
		rc = pb_field(c, f, idx, wt, tagp, body, p);
		if (rc)
			return rc;
	}
	return 0;
}

int fmt_pb_check(const ProtobufCMessageDescriptor *desc, const void *data, size_t n,
		 const char *what, size_t max_alloc, size_t *alloc_out, struct prof_err *err)
{
	struct pb_ctx c;
	int rc;

	memset(&c, 0, sizeof(c));
	c.base = data;
	c.what = what;
	c.err = err;
	c.st[0].desc = desc;
	c.alloc = desc->sizeof_message;
	rc = pb_walk(&c, desc, c.base, c.base + n);
	if (alloc_out)
		*alloc_out = c.alloc;
	if (!rc && max_alloc && c.alloc > max_alloc)
		rc = prof_err_set(err, -PROF_ETOOBIG, -1,
				  "%s: decoding would need about %zu bytes of memory for %zu input "
				  "bytes (limit %zu): too many tiny messages",
				  what, c.alloc, n, max_alloc);
	return rc;
}

uint64_t fmt_pb_top_fields(const void *data, size_t n, int *first_wt)
{
	const uint8_t *p = data, *end = p + n;
	uint64_t set = 0;
	bool seen1 = false;

	if (first_wt)
		*first_wt = -1;
	while (p < end) {
		uint64_t tag, v;

		if (!pbwire_varint(&p, end, 10, &tag) || (tag >> 3) == 0)
			return set | 1;
		switch (tag & 7) {
		case 0:
			if (!pbwire_varint(&p, end, 10, &v))
				return set | 1;
			break;
		case 1:
			if (end - p < 8)
				return set | 1;
			p += 8;
			break;
		case 5:
			if (end - p < 4)
				return set | 1;
			p += 4;
			break;
		case 2:
			if (!pbwire_varint(&p, end, 10, &v) || v > (uint64_t)(end - p))
				return set | 1;
			if ((tag >> 3) == 1 && !seen1 && v > 0 && first_wt) {
				const uint8_t *q = p;
				uint64_t t2;

				if (pbwire_varint(&q, p + v, 10, &t2))
					*first_wt = (int)(t2 & 7);
			}
			if ((tag >> 3) == 1)
				seen1 = true;
			p += v;
			break;
		default:
			return set | 1;
		}
		if ((tag >> 3) < 64)
			set |= 1ull << (tag >> 3);
	}
	return set;
}
