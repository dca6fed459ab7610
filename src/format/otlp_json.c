// SPDX-License-Identifier: Apache-2.0
/*
 * otlp_json.c - OTLP/JSON profiles <-> protobuf, driven by the protobuf-c
 * descriptors; see otlp_json.h for what is accepted and written.
 *
 * Decoding builds the C structs protobuf-c would have unpacked (every
 * allocation recorded in a list and freed at the end, capped by the input
 * size), packs them and hands the bytes to fmt_otlp_decode. Going through
 * the wire form costs one copy but keeps one implementation of the OTLP
 * semantics (index checks, attribute mapping) for both encodings.
 * Encoding is the reverse: fmt_otlp_encode, unpack, write JSON. Nesting
 * is bounded by FMT_PB_MAX_DEPTH in both directions (AnyValue can nest
 * itself); the JSON parser's own nesting limit is 2048.
 *
 * Field names: proto3 JSON's lowerCamelCase is derived from the proto
 * name (each "_x" becomes "X"), which is what protoc's json_name does for
 * every OTLP field.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "base/parse.h"
#include "format/otlp_json.h"
#include "format/pbcheck.h"
#include "format/textutil.h"

#include <math.h>

#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"

#define WHAT "otlp-json"
#define OJ_REQUEST_DESC \
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__descriptor

struct oj_dec {
	struct prof_err *err;
	struct buf path; /* JSON path of the value being read */
	char tail[168];
	VEC(void *) allocs;
	uint64_t bytes, max_bytes;
};

/* The JSON path for a message: its last 160 bytes when longer, after "...". */
static const char *oj_path(struct oj_dec *c)
{
	if (!c->path.len)
		return "(top level)";
	if (c->path.len <= 160)
		return c->path.p;
	snprintf(c->tail, sizeof(c->tail), "...%s", c->path.p + c->path.len - 160);
	return c->tail;
}

static int oj_err(struct oj_dec *c, const char *fmt, ...) PROF_PRINTF(2, 3);
static int oj_err(struct oj_dec *c, const char *fmt, ...)
{
	char msg[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return prof_err_set(c->err, -PROF_ECORRUPT, -1, WHAT ": %s: %s", oj_path(c), msg);
}

static void *oj_alloc(struct oj_dec *c, size_t nmemb, size_t size)
{
	void *p;

	if (nmemb && size > (c->max_bytes - c->bytes) / nmemb) {
		prof_err_set(c->err, -PROF_ETOOBIG, -1,
			     WHAT ": the request would take more than %" PRIu64
				  " bytes in memory (64 per input byte)",
			     c->max_bytes);
		return NULL;
	}
	c->bytes += nmemb * size;
	p = xcalloc(nmemb ? nmemb : 1, size ? size : 1);
	VEC_PUSH(&c->allocs, p);
	return p;
}

/* Does JSON key @key name proto field @name (camelCase or as written)? */
static bool oj_name_is(const char *name, const char *key)
{
	const char *n = name, *k = key;

	if (!strcmp(name, key))
		return true;
	while (*n && *k) {
		if (*n == '_' && n[1] >= 'a' && n[1] <= 'z') {
			if (*k != n[1] - 'a' + 'A')
				return false;
			n += 2;
		} else {
			if (*n != *k)
				return false;
			n++;
		}
		k++;
	}
	return !*n && !*k;
}

static bool is_hexstr(const char *s, size_t n)
{
	if (n % 2)
		return false;
	for (size_t i = 0; i < n; i++)
		if (parse_hex_digit((unsigned char)s[i]) < 0)
			return false;
	return true;
}

static int b64val(int ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+' || ch == '-')
		return 62;
	if (ch == '/' || ch == '_')
		return 63;
	return -1;
}

/* Base64 (standard or URL-safe, padding optional) of @n chars into @out (>= n*3/4 bytes). */
static bool b64_decode(const char *s, size_t n, uint8_t *out, size_t *outlen)
{
	uint32_t acc = 0;
	int bits = 0;
	size_t o = 0;

	while (n && s[n - 1] == '=')
		n--;
	if (n % 4 == 1)
		return false;
	for (size_t i = 0; i < n; i++) {
		int v = b64val((unsigned char)s[i]);

		if (v < 0)
			return false;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (uint8_t)(acc >> bits);
		}
	}
	*outlen = o;
	return true;
}

/*
 * Our profiles.proto declares string_table as bytes to keep any byte
 * string (see its head comment); in JSON it is what the spec says, strings.
 */
static bool oj_text_bytes(const ProtobufCFieldDescriptor *fd)
{
	return !strcmp(fd->name, "string_table");
}

static int oj_bytes(struct oj_dec *c, const ProtobufCFieldDescriptor *fd, const json_t *v,
		    ProtobufCBinaryData *out)
{
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	bool ids = !strcmp(fd->name, "trace_id") || !strcmp(fd->name, "span_id");
	bool hex = ids || (!strcmp(fd->name, "profile_id") && n == 32 && is_hexstr(s, n));

	if (!s)
		return oj_err(c, "expected a %s string",
			      oj_text_bytes(fd) ? ""
			      : hex		? "hex"
						: "base64");
	out->data = oj_alloc(c, n / 2 + n, 1);
	if (!out->data)
		return -PROF_ETOOBIG;
	if (oj_text_bytes(fd)) {
		memcpy(out->data, s, n);
		out->len = n;
		return 0;
	}
	if (hex) {
		if (!is_hexstr(s, n))
			return oj_err(c, "\"%.40s\" is not an even number of hex digits", s);
		for (size_t i = 0; i < n / 2; i++)
			out->data[i] = (uint8_t)(parse_hex_digit((unsigned char)s[2 * i]) << 4 |
						 parse_hex_digit((unsigned char)s[2 * i + 1]));
		out->len = n / 2;
		return 0;
	}
	if (!b64_decode(s, n, out->data, &out->len))
		return oj_err(c, "\"%.40s\" is not base64", s);
	return 0;
}

static bool oj_u64(const json_t *v, uint64_t *out)
{
	int64_t x;
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	uint64_t acc = 0;

	if (!s) {
		if (!fmt_json_i64(v, false, &x) || x < 0)
			return false;
		*out = (uint64_t)x;
		return true;
	}
	if (!n || n > 20)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9' || acc > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
			return false;
		acc = acc * 10 + (uint64_t)(s[i] - '0');
	}
	*out = acc;
	return true;
}

static bool oj_double(const json_t *v, double *out)
{
	const char *s = json_string_value(v);
	char *end;

	if (fmt_json_num(v, out))
		return true;
	if (!s)
		return false;
	if (!strcmp(s, "NaN")) {
		*out = NAN;
		return true;
	}
	if (!strcmp(s, "Infinity") || !strcmp(s, "-Infinity")) {
		*out = s[0] == '-' ? -INFINITY : INFINITY;
		return true;
	}
	errno = 0;
	*out = strtod(s, &end);
	return *s && !*end && !errno;
}

static int oj_message(struct oj_dec *c, const ProtobufCMessageDescriptor *d, const json_t *obj,
		      ProtobufCMessage *m, int depth);

/* One value of field @fd (an element, for repeated fields) into @dst. */
static int oj_value(struct oj_dec *c, const ProtobufCFieldDescriptor *fd, const json_t *v,
		    void *dst, int depth)
{
	int64_t i;
	uint64_t u;
	double d;

	switch (fd->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		if (!fmt_json_i64(v, true, &i) || i < INT32_MIN || i > INT32_MAX)
			return oj_err(c, "expected an int32");
		*(int32_t *)dst = (int32_t)i;
		return 0;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		if (!oj_u64(v, &u) || u > UINT32_MAX)
			return oj_err(c, "expected a uint32");
		*(uint32_t *)dst = (uint32_t)u;
		return 0;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		if (!fmt_json_i64(v, true, &i)) {
			if (json_is_string(v))
				return oj_err(c, "\"%.40s\" is not an int64", json_string_value(v));
			return oj_err(c, "expected an int64 (a decimal string or a number)");
		}
		*(int64_t *)dst = i;
		return 0;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		if (!oj_u64(v, &u)) {
			if (json_is_string(v))
				return oj_err(c, "\"%.40s\" is not a uint64", json_string_value(v));
			return oj_err(c, "expected a uint64 (a decimal string or a number)");
		}
		*(uint64_t *)dst = u;
		return 0;
	case PROTOBUF_C_TYPE_FLOAT:
		if (!oj_double(v, &d))
			return oj_err(c, "expected a number");
		*(float *)dst = (float)d;
		return 0;
	case PROTOBUF_C_TYPE_DOUBLE:
		if (!oj_double(v, &d))
			return oj_err(c, "expected a number");
		*(double *)dst = d;
		return 0;
	case PROTOBUF_C_TYPE_BOOL:
		if (!json_is_boolean(v))
			return oj_err(c, "expected true or false");
		*(protobuf_c_boolean *)dst = json_is_true(v);
		return 0;
	case PROTOBUF_C_TYPE_ENUM:
		if (json_is_string(v)) {
			const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value_by_name(
				fd->descriptor, json_string_value(v));

			if (!ev)
				return oj_err(c, "unknown enum value \"%.40s\"",
					      json_string_value(v));
			*(int *)dst = ev->value;
			return 0;
		}
		if (!fmt_json_i64(v, false, &i) || i < INT32_MIN || i > INT32_MAX)
			return oj_err(c, "expected an enum number or name");
		*(int *)dst = (int)i;
		return 0;
	case PROTOBUF_C_TYPE_STRING: {
		char *s;

		if (!json_is_string(v))
			return oj_err(c, "expected a string");
		s = oj_alloc(c, json_string_length(v) + 1, 1);
		if (!s)
			return -PROF_ETOOBIG;
		memcpy(s, json_string_value(v), json_string_length(v));
		*(char **)dst = s;
		return 0;
	}
	case PROTOBUF_C_TYPE_BYTES:
		return oj_bytes(c, fd, v, dst);
	case PROTOBUF_C_TYPE_MESSAGE: {
		const ProtobufCMessageDescriptor *md = fd->descriptor;
		ProtobufCMessage *m = oj_alloc(c, 1, md->sizeof_message);

		if (!m)
			return -PROF_ETOOBIG;
		protobuf_c_message_init(md, m);
		*(ProtobufCMessage **)dst = m;
		return oj_message(c, md, v, m, depth + 1);
	}
	}
	return oj_err(c, "field type %d not supported", (int)fd->type);
}

static size_t oj_elem_size(const ProtobufCFieldDescriptor *fd)
{
	switch (fd->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_ENUM:
		return 4;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return 8;
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(void *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	}
	return 8;
}

static int oj_field(struct oj_dec *c, const ProtobufCFieldDescriptor *fd, const json_t *v,
		    ProtobufCMessage *m, int depth)
{
	char *base = (char *)m;

	if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
		size_t n = json_array_size(v), esz = oj_elem_size(fd), mark = c->path.len;
		char *arr;

		if (!json_is_array(v))
			return oj_err(c, "expected an array");
		arr = oj_alloc(c, n, esz);
		if (!arr)
			return -PROF_ETOOBIG;
		*(size_t *)(base + fd->quantifier_offset) = n;
		*(void **)(base + fd->offset) = arr;
		for (size_t i = 0; i < n; i++) {
			const json_t *e = json_array_get(v, i);
			int rc;

			buf_addf(&c->path, "[%zu]", i);
			if (json_is_null(e))
				rc = oj_err(c, "null is not allowed in an array");
			else
				rc = oj_value(c, fd, e, arr + i * esz, depth);
			if (rc)
				return rc;
			c->path.len = mark;
			c->path.p[mark] = '\0';
		}
		return 0;
	}
	if (fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
		*(uint32_t *)(base + fd->quantifier_offset) = fd->id;
	else if (fd->label == PROTOBUF_C_LABEL_OPTIONAL && fd->type != PROTOBUF_C_TYPE_MESSAGE &&
		 fd->type != PROTOBUF_C_TYPE_STRING)
		*(protobuf_c_boolean *)(base + fd->quantifier_offset) = 1;
	return oj_value(c, fd, v, base + fd->offset, depth);
}

static int oj_message(struct oj_dec *c, const ProtobufCMessageDescriptor *d, const json_t *obj,
		      ProtobufCMessage *m, int depth)
{
	uint64_t seen = 0;

	if (depth > FMT_PB_MAX_DEPTH)
		return prof_err_set(c->err, -PROF_ETOOBIG, -1,
				    WHAT ": %s: nested deeper than %d messages", oj_path(c),
				    FMT_PB_MAX_DEPTH);
	if (!json_is_object(obj))
		return oj_err(c, "expected an object (%s)", d->short_name);
	for (void *it = json_object_iter((json_t *)obj); it;
	     it = json_object_iter_next((json_t *)obj, it)) {
		const char *key = json_object_iter_key(it);
		json_t *v = json_object_iter_value(it);
		size_t mark = c->path.len;
		int rc;

		for (unsigned f = 0; f < d->n_fields; f++) {
			const ProtobufCFieldDescriptor *fd = &d->fields[f];

			if (!oj_name_is(fd->name, key))
				continue;
			buf_addf(&c->path, "%s%s", mark ? "." : "", key);
			if (f < 64 && (seen & (1ull << f)))
				return oj_err(c,
					      "field given twice (as %s and in another spelling)",
					      key);
			if (f < 64)
				seen |= 1ull << f;
			if (json_is_null(v)) {
				rc = 0;
			} else if ((fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
				   *(uint32_t *)((char *)m + fd->quantifier_offset)) {
				rc = oj_err(c, "a second member of a oneof (only one may be set)");
			} else {
				rc = oj_field(c, fd, v, m, depth);
			}
			if (rc)
				return rc;
			c->path.len = mark;
			c->path.p[mark] = '\0';
			break;
		}
	}
	return 0;
}

int fmt_otlp_json_decode(const void *data, size_t n, const struct fmt_decode_opts *opts,
			 struct fmt_otlp_batch *out, struct prof_err *err)
{
	struct oj_dec c = { 0 };
	size_t max = opts && opts->max_input ? opts->max_input : FMT_DEFAULT_MAX_INPUT;
	ProtobufCMessage *req = NULL;
	uint8_t *wire = NULL;
	size_t len;
	json_t *root;
	int rc;

	memset(out, 0, sizeof(*out));
	if (n > max)
		return prof_err_set(err, -PROF_ETOOBIG, -1,
				    WHAT ": input of %zu bytes exceeds the limit of %zu bytes", n,
				    max);
	root = fmt_json_load(data, n, WHAT, err);
	if (!root)
		return err && err->code ? err->code : -PROF_ECORRUPT;
	c.err = err;
	c.max_bytes = (uint64_t)n * 64 + (1u << 20);
	buf_init(&c.path, 0);
	buf_addstr(&c.path, "-"); /* allocate, so path.p is never NULL */
	buf_reset(&c.path);
	req = oj_alloc(&c, 1, OJ_REQUEST_DESC.sizeof_message);
	protobuf_c_message_init(&OJ_REQUEST_DESC, req);
	rc = oj_message(&c, &OJ_REQUEST_DESC, root, req, 1);
	json_decref(root);
	if (!rc) {
		struct prof_err e2;

		len = protobuf_c_message_get_packed_size(req);
		wire = xmalloc(len ? len : 1);
		protobuf_c_message_pack(req, wire);
		prof_err_init(&e2);
		rc = fmt_otlp_decode(wire, len, opts ? opts->max_samples : 0, out, &e2);
		if (rc)
			prof_err_set(err, rc, -1, WHAT ": %s", e2.msg);
	}
	free(wire);
	for (size_t i = 0; i < c.allocs.n; i++)
		free(c.allocs.v[i]);
	VEC_FREE(&c.allocs);
	buf_release(&c.path);
	return rc;
}

/* ======================================================================== */
/* encode                                                                   */
/* ======================================================================== */

/* A JSON string of @n bytes; invalid UTF-8 becomes \ufffd (base/buf.h). */
static void oj_put_str(struct buf *b, const char *s, size_t n)
{
	(void)buf_add_json_str(b, s, n);
}

static void oj_put_name(struct buf *b, const char *name)
{
	buf_add(b, "\"", 1);
	for (const char *p = name; *p; p++) {
		if (*p == '_' && p[1] >= 'a' && p[1] <= 'z') {
			char up = (char)(p[1] - 'a' + 'A');

			buf_add(b, &up, 1);
			p++;
		} else {
			buf_add(b, p, 1);
		}
	}
	buf_add(b, "\":", 2);
}

static void oj_put_bytes(struct buf *b, const ProtobufCFieldDescriptor *fd,
			 const ProtobufCBinaryData *bd)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	static const char hexd[] = "0123456789abcdef";

	if (oj_text_bytes(fd)) {
		oj_put_str(b, (const char *)bd->data, bd->len);
		return;
	}
	buf_add(b, "\"", 1);
	if (!strcmp(fd->name, "trace_id") || !strcmp(fd->name, "span_id") ||
	    !strcmp(fd->name, "profile_id")) {
		for (size_t i = 0; i < bd->len; i++) {
			char h[2] = { hexd[bd->data[i] >> 4], hexd[bd->data[i] & 15] };

			buf_add(b, h, 2);
		}
	} else {
		for (size_t i = 0; i < bd->len; i += 3) {
			uint32_t v = (uint32_t)bd->data[i] << 16;
			size_t left = bd->len - i;
			char q[4];

			if (left > 1)
				v |= (uint32_t)bd->data[i + 1] << 8;
			if (left > 2)
				v |= bd->data[i + 2];
			q[0] = b64[v >> 18 & 63];
			q[1] = b64[v >> 12 & 63];
			q[2] = left > 1 ? b64[v >> 6 & 63] : '=';
			q[3] = left > 2 ? b64[v & 63] : '=';
			buf_add(b, q, 4);
		}
	}
	buf_add(b, "\"", 1);
}

static void oj_put_message(struct buf *b, const ProtobufCMessageDescriptor *d,
			   const ProtobufCMessage *m, int depth);

static void oj_put_value(struct buf *b, const ProtobufCFieldDescriptor *fd, const void *p,
			 int depth)
{
	double dv;

	switch (fd->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		buf_addf(b, "%" PRId32, *(const int32_t *)p);
		return;
	case PROTOBUF_C_TYPE_ENUM:
		buf_addf(b, "%d", *(const int *)p);
		return;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		buf_addf(b, "%" PRIu32, *(const uint32_t *)p);
		return;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		buf_addf(b, "\"%" PRId64 "\"", *(const int64_t *)p);
		return;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		buf_addf(b, "\"%" PRIu64 "\"", *(const uint64_t *)p);
		return;
	case PROTOBUF_C_TYPE_FLOAT:
	case PROTOBUF_C_TYPE_DOUBLE:
		dv = fd->type == PROTOBUF_C_TYPE_FLOAT ? *(const float *)p : *(const double *)p;
		if (isnan(dv))
			buf_addstr(b, "\"NaN\"");
		else if (isinf(dv))
			buf_addstr(b, dv > 0 ? "\"Infinity\"" : "\"-Infinity\"");
		else
			buf_addf(b, "%.17g", dv);
		return;
	case PROTOBUF_C_TYPE_BOOL:
		buf_addstr(b, *(const protobuf_c_boolean *)p ? "true" : "false");
		return;
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = *(char *const *)p;

		oj_put_str(b, s ? s : "", s ? strlen(s) : 0);
		return;
	}
	case PROTOBUF_C_TYPE_BYTES:
		oj_put_bytes(b, fd, p);
		return;
	case PROTOBUF_C_TYPE_MESSAGE:
		oj_put_message(b, fd->descriptor, *(ProtobufCMessage *const *)p, depth + 1);
		return;
	}
}

/* Whether a singular field holds its default value (left out in proto3 JSON). */
static bool oj_is_default(const ProtobufCFieldDescriptor *fd, const void *p)
{
	switch (fd->type) {
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = *(char *const *)p;

		return !s || !*s;
	}
	case PROTOBUF_C_TYPE_BYTES:
		return ((const ProtobufCBinaryData *)p)->len == 0;
	case PROTOBUF_C_TYPE_MESSAGE:
		return *(void *const *)p == NULL;
	case PROTOBUF_C_TYPE_FLOAT:
		return *(const float *)p == 0;
	case PROTOBUF_C_TYPE_DOUBLE:
		return *(const double *)p == 0;
	default: {
		size_t sz = oj_elem_size(fd);
		static const char zero[8];

		return memcmp(p, zero, sz) == 0;
	}
	}
}

static void oj_put_message(struct buf *b, const ProtobufCMessageDescriptor *d,
			   const ProtobufCMessage *m, int depth)
{
	const char *base = (const char *)m;
	bool first = true;

	if (!m || depth > FMT_PB_MAX_DEPTH) {
		buf_addstr(b, "{}");
		return;
	}
	buf_add(b, "{", 1);
	for (unsigned f = 0; f < d->n_fields; f++) {
		const ProtobufCFieldDescriptor *fd = &d->fields[f];
		const void *p = base + fd->offset;

		if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)(base + fd->quantifier_offset);
			const char *arr = *(char *const *)p;
			size_t esz = oj_elem_size(fd);

			if (!n)
				continue;
			if (!first)
				buf_add(b, ",", 1);
			first = false;
			oj_put_name(b, fd->name);
			buf_add(b, "[", 1);
			for (size_t i = 0; i < n; i++) {
				if (i)
					buf_add(b, ",", 1);
				oj_put_value(b, fd, arr + i * esz, depth);
			}
			buf_add(b, "]", 1);
			continue;
		}
		if (fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
			if (*(const uint32_t *)(base + fd->quantifier_offset) != fd->id)
				continue;
		} else if (fd->label == PROTOBUF_C_LABEL_OPTIONAL &&
			   fd->type != PROTOBUF_C_TYPE_MESSAGE &&
			   fd->type != PROTOBUF_C_TYPE_STRING) {
			if (!*(const protobuf_c_boolean *)(base + fd->quantifier_offset))
				continue;
		} else if (oj_is_default(fd, p)) {
			continue;
		}
		if (!first)
			buf_add(b, ",", 1);
		first = false;
		oj_put_name(b, fd->name);
		oj_put_value(b, fd, p, depth);
	}
	buf_add(b, "}", 1);
}

int fmt_otlp_json_encode(const struct model_profile *const *profiles, size_t n, struct buf *out)
{
	struct buf wire = BUF_INIT, json = BUF_INIT;
	ProtobufCMessage *req;
	int rc = fmt_otlp_encode(profiles, n, &wire);

	if (rc)
		goto out;
	req = protobuf_c_message_unpack(&OJ_REQUEST_DESC, NULL, wire.len,
					(const uint8_t *)(wire.p ? wire.p : ""));
	if (!req) {
		rc = -ENOMEM;
		goto out;
	}
	oj_put_message(&json, &OJ_REQUEST_DESC, req, 1);
	buf_add(&json, "\n", 1);
	protobuf_c_message_free_unpacked(req, NULL);
	rc = buf_add(out, json.p, json.len);
out:
	buf_release(&wire);
	buf_release(&json);
	return rc;
}
