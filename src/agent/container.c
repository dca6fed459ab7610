// SPDX-License-Identifier: Apache-2.0
/* container.c - container id / pod UID from cgroup paths; see container.h. */
#include "base/compat.h"
#include "agent/container.h"

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* The 64-hex container id in path component [p, end), or NULL. */
static const char *component_container_id(const char *p, const char *end)
{
	size_t n = (size_t)(end - p);

	if (n >= 6 && memmem(p, n, "conmon", 6))
		return NULL; /* cri-o's monitor, not the container */
	for (const char *s = p; s + 64 <= end; s++) {
		size_t k = 0;

		if (s > p && is_hex(s[-1]))
			continue; /* not the start of a run */
		while (s + k < end && is_hex(s[k]))
			k++;
		if (k == 64)
			return s;
		s += k;
	}
	return NULL;
}

/* A pod UID after "pod" in component [p, end), written canonically into @out. */
static bool component_pod_uid(const char *p, const char *end, char out[AGENT_POD_UID_LEN])
{
	for (const char *s = p; s + 3 + 36 <= end; s++) {
		const char *u = s + 3;
		bool ok = true;

		if (memcmp(s, "pod", 3))
			continue;
		for (int i = 0; i < 36 && ok; i++) {
			char c = u[i];

			if (i == 8 || i == 13 || i == 18 || i == 23)
				ok = c == '-' || c == '_';
			else
				ok = is_hex(c);
		}
		if (!ok || (u + 36 < end && is_hex(u[36])))
			continue;
		for (int i = 0; i < 36; i++)
			out[i] = u[i] == '_' ? '-' : u[i];
		out[36] = '\0';
		return true;
	}
	return false;
}

/* Scan one cgroup path; later (deeper) components win. */
static void parse_path(const char *p, const char *end, struct agent_container *out)
{
	while (p < end) {
		const char *slash = memchr(p, '/', (size_t)(end - p));
		const char *ce = slash ? slash : end;
		const char *id = component_container_id(p, ce);
		char uid[AGENT_POD_UID_LEN];

		if (id) {
			memcpy(out->id, id, 64);
			out->id[64] = '\0';
		}
		if (component_pod_uid(p, ce, uid))
			memcpy(out->pod_uid, uid, sizeof(uid));
		p = slash ? slash + 1 : end;
	}
}

int agent_container_parse(const char *text, size_t n, struct agent_container *out)
{
	const char *p = text, *end = text + n;
	struct agent_container v2 = { { 0 }, { 0 } }, v1 = { { 0 }, { 0 } };

	memset(out, 0, sizeof(*out));
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		const char *c1 = memchr(p, ':', (size_t)(eol - p));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(eol - c1 - 1)) : NULL;

		if (c2) {
			bool unified = c1 == p + 1 && p[0] == '0' && c2 == c1 + 1;
			struct agent_container *dst = unified ? &v2 : &v1;
			struct agent_container line = { { 0 }, { 0 } };

			parse_path(c2 + 1, eol, &line);
			if (line.id[0] && !dst->id[0])
				memcpy(dst->id, line.id, sizeof(line.id));
			if (line.pod_uid[0] && !dst->pod_uid[0])
				memcpy(dst->pod_uid, line.pod_uid, sizeof(line.pod_uid));
		}
		p = nl ? nl + 1 : end;
	}
	memcpy(out->id, v2.id[0] ? v2.id : v1.id, sizeof(out->id));
	memcpy(out->pod_uid, v2.pod_uid[0] ? v2.pod_uid : v1.pod_uid, sizeof(out->pod_uid));
	return out->id[0] || out->pod_uid[0];
}

/* The innermost id of status line @key ("\nNSpid:"), 0 when missing or malformed. */
static uint32_t status_ns_line(const char *text, size_t n, const char *key, size_t klen)
{
	const char *end = text + n, *p, *eol;
	uint64_t last = 0;
	bool any = false;

	if (n >= klen - 1 && !memcmp(text, key + 1, klen - 1))
		p = text + klen - 1;
	else if ((p = memmem(text, n, key, klen)))
		p += klen;
	else
		return 0;
	eol = memchr(p, '\n', (size_t)(end - p));
	if (!eol)
		eol = end;
	while (p < eol) {
		uint64_t v = 0;
		int digits = 0;

		while (p < eol && (*p == ' ' || *p == '\t'))
			p++;
		while (p < eol && *p >= '0' && *p <= '9' && digits < 11) {
			v = v * 10 + (uint64_t)(*p++ - '0');
			digits++;
		}
		if (p < eol && *p != ' ' && *p != '\t')
			return 0; /* malformed */
		if (digits) {
			if (v == 0 || v > UINT32_MAX)
				return 0;
			last = v;
			any = true;
		}
	}
	return any ? (uint32_t)last : 0;
}

uint32_t agent_status_nspid(const char *text, size_t n)
{
	static const char tgid[] = "\nNStgid:", pid[] = "\nNSpid:";
	uint32_t v = status_ns_line(text, n, tgid, sizeof(tgid) - 1);

	return v ? v : status_ns_line(text, n, pid, sizeof(pid) - 1);
}

/* Copy @n bytes of @v into @out as a string, cut to fit; false when empty. */
static bool service_copy(const char *v, size_t n, char *out, size_t outsz)
{
	n = PROF_MIN(n, outsz - 1);
	memcpy(out, v, n);
	out[n] = '\0';
	return n > 0;
}

bool agent_environ_service(const char *text, size_t n, char *out, size_t outsz)
{
	static const char svc[] = "OTEL_SERVICE_NAME=", res[] = "OTEL_RESOURCE_ATTRIBUTES=";
	const char *end = text + n, *attrs = NULL, *attrs_end = NULL;

	if (!outsz)
		return false;
	out[0] = '\0';
	for (const char *p = text; p < end;) {
		const char *nul = memchr(p, '\0', (size_t)(end - p));

		if (!nul)
			break; /* cut by the read's cap */
		size_t len = (size_t)(nul - p);

		if (len >= sizeof(svc) - 1 && !memcmp(p, svc, sizeof(svc) - 1) &&
		    service_copy(p + sizeof(svc) - 1, len - (sizeof(svc) - 1), out, outsz))
			return true;
		if (len >= sizeof(res) - 1 && !memcmp(p, res, sizeof(res) - 1)) {
			attrs = p + sizeof(res) - 1;
			attrs_end = nul;
		}
		p = nul + 1;
	}
	for (const char *p = attrs; p && p < attrs_end;) {
		const char *comma = memchr(p, ',', (size_t)(attrs_end - p));
		const char *e = comma ? comma : attrs_end;
		static const char key[] = "service.name=";

		while (p < e && *p == ' ')
			p++;
		if ((size_t)(e - p) >= sizeof(key) - 1 && !memcmp(p, key, sizeof(key) - 1))
			return service_copy(p + sizeof(key) - 1,
					    (size_t)(e - p) - (sizeof(key) - 1), out, outsz);
		p = comma ? comma + 1 : attrs_end;
	}
	out[0] = '\0';
	return false;
}
