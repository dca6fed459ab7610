// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_k8s_sd.c - libFuzzer target for the Kubernetes discovery decoder
 * (src/scrape/k8s.c): the first byte picks the role (pod, endpoints,
 * service, node); the rest is decoded as one API object and as one watch
 * event line. Any bytes must give an error with a reason, or an object
 * whose key is set and whose targets carry bounded, valid label sets.
 * Seeds worth using: `kubectl get --raw /api/v1/namespaces/NS/pods/NAME`
 * and a line of `kubectl get --raw '/api/v1/pods?watch=1'`.
 */
#include "base/compat.h"
#include "base/err.h"
#include "scrape/k8s.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int rc, const struct scrape_k8s_object *o, const struct prof_err *err)
{
	if (rc) {
		PROF_ASSERT(rc < 0 && err->msg[0] != '\0' && !o->key && !o->ngroups);
		return;
	}
	PROF_ASSERT(o->ngroups <= SCRAPE_K8S_MAX_TARGETS_PER_OBJECT);
	for (size_t i = 0; i < o->ngroups; i++) {
		const struct scrape_labels *ls = &o->groups[i].labels;

		PROF_ASSERT(o->groups[i].ntargets == 1 && o->groups[i].targets[0]);
		for (size_t l = 0; l < ls->l.n; l++) {
			PROF_ASSERT(scrape_label_name_ok(ls->l.v[l].name));
			PROF_ASSERT(strlen(ls->l.v[l].value) <= SCRAPE_MAX_LABEL_VALUE);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum scrape_k8s_event_type type;
	struct scrape_k8s_object o;
	struct prof_err err;
	enum scrape_k8s_role role;
	long code;
	int rc;

	if (!size)
		return 0;
	role = (enum scrape_k8s_role)(data[0] % 4);
	prof_err_init(&err);
	rc = scrape_k8s_object_decode(role, (const char *)data + 1, size - 1, &o, &err);
	check(rc, &o, &err);
	if (!rc)
		PROF_ASSERT(o.key && o.key[0] && o.rv);
	scrape_k8s_object_release(&o);
	prof_err_init(&err);
	rc = scrape_k8s_event_decode(role, (const char *)data + 1, size - 1, &type, &code, &o,
				     &err);
	check(rc, &o, &err);
	scrape_k8s_object_release(&o);
	return 0;
}
