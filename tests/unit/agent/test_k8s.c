// SPDX-License-Identifier: Apache-2.0
/*
 * test_k8s.c - the kubelet pod list parser and attribute lookup
 * (agent/k8s.h) on a handmade v1 PodList shaped like a real kubelet's
 * answer: names, namespace, node, labels and annotations with the
 * OpenTelemetry k8s.* names, the Deployment behind a ReplicaSet, the
 * CronJob behind a Job, container names by runtime id, the bounds
 * (oversized values skipped and counted), and bad input (not JSON, items
 * not an array, labels not an object) refused with a reason.
 */
#include "base/compat.h"
#include "agent/k8s.h"

#include <setjmp.h>
#include <cmocka.h>

#define UID_A "0b4d9a3e-5c1f-4f7e-9d2a-1c3e5f7a9b0d"
#define UID_B "f1e2d3c4-b5a6-4978-8a6b-5c4d3e2f1a0b"
#define CID   "3f2b1c0d9e8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c"

static const char pods[] =
	"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{},\"items\":["
	"{\"metadata\":{\"name\":\"checkout-7d9f8c6b5-x2x4q\",\"namespace\":\"shop\",\"uid\":\"" UID_B
	"\",\"labels\":{\"app\":\"checkout\",\"pod-template-hash\":\"7d9f8c6b5\"},"
	"\"annotations\":{\"team\":\"payments\"},"
	"\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\","
	"\"name\":\"checkout-7d9f8c6b5\",\"controller\":true}]},"
	"\"spec\":{\"nodeName\":\"node-1\",\"containers\":[{\"name\":\"app\"}]},"
	"\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"app\","
	"\"containerID\":\"containerd://" CID "\"},{\"name\":\"sidecar\",\"containerID\":"
	"\"containerd://aaaa\"}]}},"
	"{\"metadata\":{\"name\":\"report-28734560-abcde\",\"namespace\":\"batch\",\"uid\":\"" UID_A
	"\",\"ownerReferences\":[{\"kind\":\"Job\",\"name\":\"report-28734560\"}]},"
	"\"spec\":{\"nodeName\":\"node-1\"},\"status\":{}},"
	"{\"metadata\":{\"name\":\"no-uid\"}}"
	"]}";

static void test_k8s_parse_and_lookup(void **state)
{
	struct agent_k8s_snapshot *s = NULL;
	struct model_profile p;
	struct prof_err err;
	uint64_t skipped = 9;

	(void)state;
	prof_err_init(&err);
	assert_int_equal(agent_k8s_parse(pods, strlen(pods), &s, &skipped, &err), 0);
	assert_int_equal(agent_k8s_snapshot_pods(s), 2); /* the one without a uid is skipped */
	assert_int_equal(skipped, 0);

	model_profile_init(&p);
	assert_int_equal(agent_k8s_snapshot_add_attrs(s, UID_B, CID, &p), 1);
	assert_string_equal(model_attr_get(&p, "k8s.namespace.name"), "shop");
	assert_string_equal(model_attr_get(&p, "k8s.pod.name"), "checkout-7d9f8c6b5-x2x4q");
	assert_string_equal(model_attr_get(&p, "k8s.node.name"), "node-1");
	assert_string_equal(model_attr_get(&p, "k8s.replicaset.name"), "checkout-7d9f8c6b5");
	assert_string_equal(model_attr_get(&p, "k8s.deployment.name"), "checkout");
	assert_string_equal(model_attr_get(&p, "k8s.pod.label.app"), "checkout");
	assert_string_equal(model_attr_get(&p, "k8s.pod.annotation.team"), "payments");
	assert_string_equal(model_attr_get(&p, "k8s.container.name"), "app");
	model_profile_release(&p);

	model_profile_init(&p);
	assert_int_equal(agent_k8s_snapshot_add_attrs(s, UID_A, "", &p), 1);
	assert_string_equal(model_attr_get(&p, "k8s.job.name"), "report-28734560");
	assert_string_equal(model_attr_get(&p, "k8s.cronjob.name"), "report");
	assert_null(model_attr_get(&p, "k8s.container.name"));
	model_profile_release(&p);

	model_profile_init(&p);
	assert_int_equal(
		agent_k8s_snapshot_add_attrs(s, "00000000-0000-0000-0000-000000000000", CID, &p),
		0);
	assert_int_equal(p.attrs.n, 0);
	assert_int_equal(agent_k8s_snapshot_add_attrs(s, "", CID, &p), 0);
	model_profile_release(&p);
	agent_k8s_snapshot_free(s);
	agent_k8s_snapshot_free(NULL);
}

static void test_k8s_bounds(void **state)
{
	struct agent_k8s_snapshot *s = NULL;
	struct model_profile p;
	uint64_t skipped = 0;
	char *big = malloc(AGENT_K8S_MAX_VALUE + 200);
	char *doc = malloc(AGENT_K8S_MAX_VALUE + 400);

	(void)state;
	memset(big, 'x', AGENT_K8S_MAX_VALUE + 1);
	big[AGENT_K8S_MAX_VALUE + 1] = '\0';
	snprintf(doc, AGENT_K8S_MAX_VALUE + 400,
		 "{\"items\":[{\"metadata\":{\"uid\":\"" UID_A "\",\"annotations\":{"
		 "\"kubectl.kubernetes.io/last-applied-configuration\":\"%s\",\"ok\":\"1\","
		 "\"num\":5}}}]}",
		 big);
	assert_int_equal(agent_k8s_parse(doc, strlen(doc), &s, &skipped, NULL), 0);
	assert_int_equal(skipped, 2); /* the oversized value and the non-string one */
	model_profile_init(&p);
	assert_int_equal(agent_k8s_snapshot_add_attrs(s, UID_A, NULL, &p), 1);
	assert_string_equal(model_attr_get(&p, "k8s.pod.annotation.ok"), "1");
	assert_null(model_attr_get(&p, "k8s.pod.annotation.kubectl.kubernetes.io/"
				       "last-applied-configuration"));
	model_profile_release(&p);
	agent_k8s_snapshot_free(s);
	free(big);
	free(doc);
}

static void test_k8s_bad_input(void **state)
{
	static const char *const bad[] = {
		"",
		"{\"items\":[",
		"[1,2]",
		"{\"items\":{}}",
		"{\"items\":[{\"metadata\":{\"uid\":\"u\",\"labels\":[\"a\"]}}]}",
		"{\"items\":[{\"metadata\":{\"uid\":\"u\",\"ownerReferences\":{}}}]}",
		"{\"items\":[{\"metadata\":{\"uid\":\"u\"},\"status\":{\"containerStatuses\":7}}]}",
	};
	struct agent_k8s_snapshot *s = NULL;
	struct prof_err err;

	(void)state;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(bad); i++) {
		prof_err_init(&err);
		assert_int_equal(agent_k8s_parse(bad[i], strlen(bad[i]), &s, NULL, &err),
				 -PROF_EFORMAT);
		assert_null(s);
		assert_int_not_equal(err.msg[0], '\0');
	}
	/* An empty list is fine. */
	assert_int_equal(agent_k8s_parse("{\"items\":[]}", 12, &s, NULL, NULL), 0);
	assert_int_equal(agent_k8s_snapshot_pods(s), 0);
	agent_k8s_snapshot_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_k8s_parse_and_lookup),
		cmocka_unit_test(test_k8s_bounds),
		cmocka_unit_test(test_k8s_bad_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
