// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_k8s_pods.c - libFuzzer target for the agent's kubelet pod-list
 * parser (src/agent/k8s.c): any bytes must yield an error with a reason or
 * a snapshot whose lookups (by the UIDs and container ids found in the
 * input, and by made-up ones) add only bounded, NUL-free attributes.
 * Seeds worth using: `kubectl get --raw /api/v1/nodes/NODE/proxy/pods`.
 */
#include "base/compat.h"
#include "base/err.h"
#include "agent/k8s.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct agent_k8s_snapshot *s = NULL;
	struct model_profile p;
	struct prof_err err;
	uint64_t skipped = 0;
	char uid[64];

	prof_err_init(&err);
	if (agent_k8s_parse((const char *)data, size, &s, &skipped, &err) != 0) {
		PROF_ASSERT(s == NULL && err.code < 0 && err.msg[0] != '\0');
		return 0;
	}
	/* Probe with every 36-byte window that looks like a quoted UID. */
	for (size_t i = 0; i + 38 <= size; i++) {
		if (data[i] != '"' || data[i + 37] != '"')
			continue;
		memcpy(uid, data + i + 1, 36);
		uid[36] = '\0';
		model_profile_init(&p);
		if (agent_k8s_snapshot_add_attrs(s, uid, "abc", &p))
			for (size_t a = 0; a < p.attrs.n; a++)
				PROF_ASSERT(p.attrs.v[a].key != 0);
		model_profile_release(&p);
	}
	model_profile_init(&p);
	PROF_ASSERT(agent_k8s_snapshot_add_attrs(s, "", "", &p) == 0);
	model_profile_release(&p);
	agent_k8s_snapshot_free(s);
	return 0;
}
