// SPDX-License-Identifier: Apache-2.0
/*
 * test_k8s.c - Kubernetes discovery without an API server: the object
 * decoder for each role (targets and the exact __meta_kubernetes_* labels
 * Prometheus gives them), label-name sanitizing, the bounds (long values
 * keep only their *present label, too many annotations are refused),
 * mistakes named by field, watch events (ADDED, BOOKMARK, ERROR 410), and
 * the kubernetes_sd_configs keys of the scrape config.
 * Objects follow the Kubernetes API reference (core/v1 Pod, Endpoints,
 * Service, Node).
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "scrape/config.h"
#include "scrape/k8s.h"
#include "scrape/relabel.h"

#include <stdlib.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

static const char pod_json[] =
	"{\"metadata\":{\"name\":\"web-7d4b9c8f6-x2x9q\",\"namespace\":\"shop\","
	"\"uid\":\"6f1c2a4e-2b1e-4c8e-9a57-3d2f0c1b9e8a\",\"resourceVersion\":\"1201\","
	"\"labels\":{\"app.kubernetes.io/name\":\"web\",\"pod-template-hash\":\"7d4b9c8f6\"},"
	"\"annotations\":{\"profiles.grafana.com/cpu.scrape\":\"true\"},"
	"\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\","
	"\"name\":\"web-7d4b9c8f6\",\"controller\":true}]},"
	"\"spec\":{\"nodeName\":\"node-a\",\"containers\":[{\"name\":\"app\","
	"\"image\":\"web:1.4\",\"ports\":[{\"name\":\"http\",\"containerPort\":8080,"
	"\"protocol\":\"TCP\"},{\"name\":\"pprof\",\"containerPort\":6060}]},"
	"{\"name\":\"sidecar\",\"image\":\"envoy:1\"}],"
	"\"initContainers\":[{\"name\":\"init\",\"image\":\"busybox\"}]},"
	"\"status\":{\"phase\":\"Running\",\"hostIP\":\"10.0.0.11\",\"podIP\":\"10.244.1.7\","
	"\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}],"
	"\"containerStatuses\":[{\"name\":\"app\",\"containerID\":\"containerd://abc\"}]}}";

static const char *label(const struct scrape_group *g, const char *name)
{
	return scrape_labels_get(&g->labels, name);
}

static void test_pod(void **state)
{
	struct scrape_k8s_object o;
	struct prof_err err;
	const struct scrape_group *g;

	(void)state;
	prof_err_init(&err);
	assert_int_equal(
		scrape_k8s_object_decode(SCRAPE_K8S_POD, pod_json, strlen(pod_json), &o, &err), 0);
	assert_string_equal(o.key, "shop/web-7d4b9c8f6-x2x9q");
	assert_string_equal(o.rv, "1201");
	/* Two ports of app, the port-less sidecar, the port-less init container. */
	assert_int_equal(o.ngroups, 4);
	g = &o.groups[0];
	assert_string_equal(g->targets[0], "10.244.1.7:8080");
	assert_string_equal(label(g, "__meta_kubernetes_namespace"), "shop");
	assert_string_equal(label(g, "__meta_kubernetes_pod_name"), "web-7d4b9c8f6-x2x9q");
	assert_string_equal(label(g, "__meta_kubernetes_pod_ip"), "10.244.1.7");
	assert_string_equal(label(g, "__meta_kubernetes_pod_uid"),
			    "6f1c2a4e-2b1e-4c8e-9a57-3d2f0c1b9e8a");
	assert_string_equal(label(g, "__meta_kubernetes_pod_label_app_kubernetes_io_name"), "web");
	assert_string_equal(label(g, "__meta_kubernetes_pod_labelpresent_pod_template_hash"),
			    "true");
	assert_string_equal(
		label(g, "__meta_kubernetes_pod_annotation_profiles_grafana_com_cpu_scrape"),
		"true");
	assert_string_equal(
		label(g, "__meta_kubernetes_pod_annotationpresent_profiles_grafana_com_cpu_scrape"),
		"true");
	assert_string_equal(label(g, "__meta_kubernetes_pod_controller_kind"), "ReplicaSet");
	assert_string_equal(label(g, "__meta_kubernetes_pod_controller_name"), "web-7d4b9c8f6");
	assert_string_equal(label(g, "__meta_kubernetes_pod_node_name"), "node-a");
	assert_string_equal(label(g, "__meta_kubernetes_pod_host_ip"), "10.0.0.11");
	assert_string_equal(label(g, "__meta_kubernetes_pod_phase"), "Running");
	assert_string_equal(label(g, "__meta_kubernetes_pod_ready"), "false");
	assert_string_equal(label(g, "__meta_kubernetes_pod_container_name"), "app");
	assert_string_equal(label(g, "__meta_kubernetes_pod_container_image"), "web:1.4");
	assert_string_equal(label(g, "__meta_kubernetes_pod_container_id"), "containerd://abc");
	assert_string_equal(label(g, "__meta_kubernetes_pod_container_init"), "false");
	assert_string_equal(label(g, "__meta_kubernetes_pod_container_port_name"), "http");
	assert_string_equal(label(g, "__meta_kubernetes_pod_container_port_number"), "8080");
	assert_string_equal(label(g, "__meta_kubernetes_pod_container_port_protocol"), "TCP");
	g = &o.groups[1];
	assert_string_equal(g->targets[0], "10.244.1.7:6060");
	assert_string_equal(label(g, "__meta_kubernetes_pod_container_port_protocol"), "TCP");
	g = &o.groups[2];
	assert_string_equal(g->targets[0], "10.244.1.7"); /* no port: for relabeling to add one */
	assert_string_equal(label(g, "__meta_kubernetes_pod_container_name"), "sidecar");
	assert_null(label(g, "__meta_kubernetes_pod_container_port_number"));
	assert_null(label(g, "__meta_kubernetes_pod_container_id"));
	g = &o.groups[3];
	assert_string_equal(label(g, "__meta_kubernetes_pod_container_init"), "true");
	scrape_k8s_object_release(&o);

	/* No pod IP yet (Pending): an object without targets. */
	static const char pending[] = "{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\"},"
				      "\"spec\":{\"containers\":[{\"name\":\"a\"}]},"
				      "\"status\":{\"phase\":\"Pending\"}}";
	prof_err_init(&err);
	assert_int_equal(
		scrape_k8s_object_decode(SCRAPE_K8S_POD, pending, strlen(pending), &o, &err), 0);
	assert_int_equal(o.ngroups, 0);
	assert_string_equal(o.key, "n/p");
	scrape_k8s_object_release(&o);

	/* IPv6 pod IPs get brackets, as net.JoinHostPort writes them. */
	static const char v6[] = "{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\"},"
				 "\"spec\":{\"containers\":[{\"name\":\"a\",\"ports\":[{"
				 "\"containerPort\":6060}]}]},\"status\":{\"podIP\":\"fd00::7\"}}";
	prof_err_init(&err);
	assert_int_equal(scrape_k8s_object_decode(SCRAPE_K8S_POD, v6, strlen(v6), &o, &err), 0);
	assert_string_equal(o.groups[0].targets[0], "[fd00::7]:6060");
	assert_string_equal(label(&o.groups[0], "__meta_kubernetes_pod_ready"), "unknown");
	scrape_k8s_object_release(&o);
}

static void test_endpoints_service_node(void **state)
{
	static const char ep[] =
		"{\"metadata\":{\"name\":\"web\",\"namespace\":\"shop\",\"labels\":{\"app\":\"web\"}},"
		"\"subsets\":[{\"addresses\":[{\"ip\":\"10.244.1.7\",\"nodeName\":\"node-a\","
		"\"targetRef\":{\"kind\":\"Pod\",\"name\":\"web-1\"}}],"
		"\"notReadyAddresses\":[{\"ip\":\"10.244.2.9\",\"hostname\":\"web-2\"}],"
		"\"ports\":[{\"name\":\"pprof\",\"port\":6060,\"protocol\":\"TCP\"},"
		"{\"name\":\"http\",\"port\":8080}]}]}";
	static const char svc[] =
		"{\"metadata\":{\"name\":\"web\",\"namespace\":\"shop\",\"annotations\":{"
		"\"parca.dev/scrape\":\"true\"}},\"spec\":{\"type\":\"LoadBalancer\","
		"\"clusterIP\":\"10.96.0.12\",\"ports\":[{\"name\":\"pprof\",\"port\":6060,"
		"\"protocol\":\"TCP\",\"targetPort\":6060}]},"
		"\"status\":{\"loadBalancer\":{\"ingress\":[{\"ip\":\"203.0.113.9\"}]}}}";
	static const char node[] =
		"{\"metadata\":{\"name\":\"node-a\",\"labels\":{\"kubernetes.io/arch\":\"amd64\"}},"
		"\"spec\":{\"providerID\":\"aws:///eu-west-1a/i-0abc\"},"
		"\"status\":{\"addresses\":[{\"type\":\"Hostname\",\"address\":\"node-a\"},"
		"{\"type\":\"InternalIP\",\"address\":\"10.0.0.11\"},"
		"{\"type\":\"InternalIP\",\"address\":\"10.0.0.99\"}],"
		"\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":10250}}}}";
	struct scrape_k8s_object o;
	struct prof_err err;
	const struct scrape_group *g;

	(void)state;
	prof_err_init(&err);
	assert_int_equal(scrape_k8s_object_decode(SCRAPE_K8S_ENDPOINTS, ep, strlen(ep), &o, &err),
			 0);
	assert_int_equal(o.ngroups, 4); /* 2 addresses x 2 ports */
	g = &o.groups[0];
	assert_string_equal(g->targets[0], "10.244.1.7:6060");
	assert_string_equal(label(g, "__meta_kubernetes_endpoints_name"), "web");
	assert_string_equal(label(g, "__meta_kubernetes_endpoints_label_app"), "web");
	assert_string_equal(label(g, "__meta_kubernetes_endpoint_ready"), "true");
	assert_string_equal(label(g, "__meta_kubernetes_endpoint_node_name"), "node-a");
	assert_string_equal(label(g, "__meta_kubernetes_endpoint_port_name"), "pprof");
	assert_string_equal(label(g, "__meta_kubernetes_endpoint_port_protocol"), "TCP");
	assert_string_equal(label(g, "__meta_kubernetes_endpoint_address_target_kind"), "Pod");
	assert_string_equal(label(g, "__meta_kubernetes_endpoint_address_target_name"), "web-1");
	g = &o.groups[3];
	assert_string_equal(g->targets[0], "10.244.2.9:8080");
	assert_string_equal(label(g, "__meta_kubernetes_endpoint_ready"), "false");
	assert_string_equal(label(g, "__meta_kubernetes_endpoint_hostname"), "web-2");
	scrape_k8s_object_release(&o);

	prof_err_init(&err);
	assert_int_equal(scrape_k8s_object_decode(SCRAPE_K8S_SERVICE, svc, strlen(svc), &o, &err),
			 0);
	assert_int_equal(o.ngroups, 1);
	g = &o.groups[0];
	assert_string_equal(g->targets[0], "web.shop.svc:6060");
	assert_string_equal(label(g, "__meta_kubernetes_service_name"), "web");
	assert_string_equal(label(g, "__meta_kubernetes_service_annotation_parca_dev_scrape"),
			    "true");
	assert_string_equal(label(g, "__meta_kubernetes_service_type"), "LoadBalancer");
	assert_string_equal(label(g, "__meta_kubernetes_service_cluster_ip"), "10.96.0.12");
	assert_string_equal(label(g, "__meta_kubernetes_service_loadbalancer_ip"), "203.0.113.9");
	assert_string_equal(label(g, "__meta_kubernetes_service_port_name"), "pprof");
	assert_string_equal(label(g, "__meta_kubernetes_service_port_number"), "6060");
	assert_null(label(g, "__meta_kubernetes_service_external_name"));
	scrape_k8s_object_release(&o);

	prof_err_init(&err);
	assert_int_equal(scrape_k8s_object_decode(SCRAPE_K8S_NODE, node, strlen(node), &o, &err),
			 0);
	assert_string_equal(o.key, "node-a");
	assert_int_equal(o.ngroups, 1);
	g = &o.groups[0];
	assert_string_equal(g->targets[0], "10.0.0.11:10250"); /* InternalIP before Hostname */
	assert_string_equal(label(g, "instance"), "node-a");
	assert_string_equal(label(g, "__meta_kubernetes_node_name"), "node-a");
	assert_string_equal(label(g, "__meta_kubernetes_node_provider_id"),
			    "aws:///eu-west-1a/i-0abc");
	assert_string_equal(label(g, "__meta_kubernetes_node_label_kubernetes_io_arch"), "amd64");
	assert_string_equal(label(g, "__meta_kubernetes_node_address_InternalIP"), "10.0.0.11");
	assert_string_equal(label(g, "__meta_kubernetes_node_address_Hostname"), "node-a");
	scrape_k8s_object_release(&o);
}

/* Decode @json as a pod and expect @code with @msg inside the error. */
static void expect_bad(const char *json, int code, const char *msg)
{
	struct scrape_k8s_object o;
	struct prof_err err;

	prof_err_init(&err);
	assert_int_equal(scrape_k8s_object_decode(SCRAPE_K8S_POD, json, strlen(json), &o, &err),
			 code);
	if (!strstr(err.msg, msg))
		fail_msg("error '%s' lacks '%s'", err.msg, msg);
	assert_null(o.key);
	assert_int_equal(o.ngroups, 0);
	scrape_k8s_object_release(&o);
}

static void test_mistakes_and_bounds(void **state)
{
	struct scrape_k8s_object o;
	struct prof_err err;
	struct buf b;
	char name[32], san[32];

	(void)state;
	expect_bad("{\"metadata\":", -EINVAL, "JSON:1:");
	expect_bad("[]", -EINVAL, "(object): expected an object");
	expect_bad("{\"metadata\":{\"name\":7,\"namespace\":\"n\"}}", -EINVAL,
		   "metadata.name: expected a string");
	expect_bad("{\"metadata\":{\"name\":\"p\"}}", -EINVAL, "metadata.namespace: missing");
	expect_bad("{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"labels\":{\"a\":1}}}",
		   -EINVAL, "metadata.labels: 'a': expected a string");
	expect_bad("{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\"},\"spec\":{\"containers\":["
		   "{\"name\":\"a\",\"ports\":[{\"containerPort\":70000}]}]},"
		   "\"status\":{\"podIP\":\"10.0.0.1\"}}",
		   -EINVAL,
		   "spec.containers[0].ports[0].containerPort: expected an integer 1..65535");
	expect_bad("{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\"},\"spec\":[]}", -EINVAL,
		   "spec: expected an object");
	expect_bad("{\"metadata\":{\"name\":\"a\\u0000b\",\"namespace\":\"n\"}}", -EINVAL,
		   "metadata.name: expected a string");

	/*
	 * An annotation value with a NUL byte: the pod decodes, the annotation
	 * present only (one such value once made its whole list fail to parse).
	 */
	prof_err_init(&err);
	static const char nul_ann[] =
		"{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"annotations\":{"
		"\"note\":\"a\\u0000b\",\"team\":\"shop\"}},\"spec\":{\"containers\":[{\"name\":\"a\"}]},"
		"\"status\":{\"podIP\":\"10.0.0.1\"}}";
	assert_int_equal(
		scrape_k8s_object_decode(SCRAPE_K8S_POD, nul_ann, strlen(nul_ann), &o, &err), 0);
	assert_int_equal(o.ngroups, 1);
	assert_string_equal(label(&o.groups[0], "__meta_kubernetes_pod_annotationpresent_note"),
			    "true");
	assert_null(label(&o.groups[0], "__meta_kubernetes_pod_annotation_note"));
	assert_string_equal(label(&o.groups[0], "__meta_kubernetes_pod_annotation_team"), "shop");
	scrape_k8s_object_release(&o);

	/* 257 annotations: refused. */
	buf_init(&b, 1 << 20);
	assert_int_equal(buf_addstr(&b, "{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\","
					"\"annotations\":{"),
			 0);
	for (int i = 0; i <= SCRAPE_K8S_MAX_KV; i++)
		assert_int_equal(buf_addf(&b, "%s\"a%d\":\"v\"", i ? "," : "", i), 0);
	assert_int_equal(buf_addstr(&b, "}}}"), 0);
	prof_err_init(&err);
	assert_int_equal(scrape_k8s_object_decode(SCRAPE_K8S_POD, b.p, b.len, &o, &err),
			 -PROF_ETOOBIG);
	assert_non_null(strstr(err.msg, "metadata.annotations: more than 256 entries"));
	scrape_k8s_object_release(&o);
	buf_reset(&b);

	/* A value over SCRAPE_MAX_LABEL_VALUE (kubectl's last-applied-configuration): present only. */
	assert_int_equal(buf_addstr(&b, "{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\","
					"\"annotations\":{\"kubectl.kubernetes.io/"
					"last-applied-configuration\":\""),
			 0);
	for (int i = 0; i < SCRAPE_MAX_LABEL_VALUE + 1; i++)
		assert_int_equal(buf_add(&b, "x", 1), 0);
	assert_int_equal(buf_addstr(&b, "\"}},\"spec\":{\"containers\":[{\"name\":\"a\"}]},"
					"\"status\":{\"podIP\":\"10.0.0.1\"}}"),
			 0);
	prof_err_init(&err);
	assert_int_equal(scrape_k8s_object_decode(SCRAPE_K8S_POD, b.p, b.len, &o, &err), 0);
	assert_int_equal(o.ngroups, 1);
	assert_string_equal(label(&o.groups[0],
				  "__meta_kubernetes_pod_annotationpresent_kubectl_kubernetes_io_"
				  "last_applied_configuration"),
			    "true");
	assert_null(label(&o.groups[0], "__meta_kubernetes_pod_annotation_kubectl_kubernetes_io_"
					"last_applied_configuration"));
	scrape_k8s_object_release(&o);
	buf_release(&b);

	snprintf(name, sizeof(name), "%s", "a.b/c-d~e");
	scrape_k8s_label_sanitize(name, san, sizeof(san));
	assert_string_equal(san, "a_b_c_d_e");
}

static void test_events(void **state)
{
	static const char added[] = "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\","
				    "\"metadata\":{\"name\":\"p\",\"namespace\":\"n\","
				    "\"resourceVersion\":\"77\"}}}";
	static const char bookmark[] = "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\","
				       "\"metadata\":{\"resourceVersion\":\"90\"}}}";
	static const char gone[] =
		"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
		"\"status\":\"Failure\",\"message\":\"too old resource version: 5 (10)\","
		"\"reason\":\"Expired\",\"code\":410}}";
	/* A deletion whose object no longer decodes (a bad port) still names its key. */
	static const char deleted[] =
		"{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\"},"
		"\"spec\":{\"containers\":[{\"name\":\"a\",\"ports\":[{\"containerPort\":0}]}]},"
		"\"status\":{\"podIP\":\"10.0.0.1\"}}}";
	static const char nope[] = "{\"type\":\"NOPE\",\"object\":{}}";
	static const char bad[] = "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":1}}}";
	enum scrape_k8s_event_type type;
	struct scrape_k8s_object o;
	struct prof_err err;
	long code;

	(void)state;
	prof_err_init(&err);
	assert_int_equal(scrape_k8s_event_decode(SCRAPE_K8S_POD, added, strlen(added), &type, &code,
						 &o, &err),
			 0);
	assert_int_equal(type, SCRAPE_K8S_ADDED);
	assert_string_equal(o.key, "n/p");
	assert_string_equal(o.rv, "77");
	assert_int_equal(o.ngroups, 0);
	scrape_k8s_object_release(&o);
	assert_int_equal(scrape_k8s_event_decode(SCRAPE_K8S_POD, bookmark, strlen(bookmark), &type,
						 &code, &o, &err),
			 0);
	assert_int_equal(type, SCRAPE_K8S_BOOKMARK);
	assert_string_equal(o.rv, "90");
	scrape_k8s_object_release(&o);
	assert_int_equal(
		scrape_k8s_event_decode(SCRAPE_K8S_POD, gone, strlen(gone), &type, &code, &o, &err),
		0);
	assert_int_equal(type, SCRAPE_K8S_ERROR);
	assert_int_equal(code, 410);
	assert_non_null(strstr(err.msg, "too old resource version"));
	scrape_k8s_object_release(&o);
	prof_err_init(&err);
	assert_int_equal(
		scrape_k8s_event_decode(SCRAPE_K8S_POD, bad, strlen(bad), &type, &code, &o, &err),
		-EINVAL);
	assert_string_equal(err.msg, "object.metadata.name: expected a string");
	scrape_k8s_object_release(&o);
	prof_err_init(&err);
	assert_int_equal(scrape_k8s_event_decode(SCRAPE_K8S_POD, deleted, strlen(deleted), &type,
						 &code, &o, &err),
			 0);
	assert_int_equal(type, SCRAPE_K8S_DELETED);
	assert_string_equal(o.key, "n/p");
	assert_int_equal(o.ngroups, 0);
	scrape_k8s_object_release(&o);
	prof_err_init(&err);
	assert_int_equal(
		scrape_k8s_event_decode(SCRAPE_K8S_POD, nope, strlen(nope), &type, &code, &o, &err),
		-EINVAL);
	assert_non_null(strstr(err.msg, "unknown event type 'NOPE'"));
}

static void test_config(void **state)
{
	static const char y[] =
		"scrape_configs:\n"
		"  - job_name: k\n"
		"    kubernetes_sd_configs:\n"
		"      - role: endpoints\n"
		"        api_server: https://10.0.0.1:6443\n"
		"        bearer_token_file: token\n"
		"        tls_config: {ca_file: ca.crt, insecure_skip_verify: true}\n"
		"        namespaces: {names: [shop, web], own_namespace: true}\n"
		"        selectors:\n"
		"          - {role: endpoints, label: 'app=web', field: 'x=y'}\n"
		"      - role: node\n"
		"        kubeconfig_file: /etc/kube/config\n";
	static const struct {
		const char *yaml, *msg;
	} bad[] = {
		{ "role: pods", "expected pod, endpoints, service or node, got 'pods'" },
		{ "api_server: 10.0.0.1", "expected an http:// or https:// URL" },
		{ "role: pod\n        namespaces: {names: [Shop]}", "is not a namespace name" },
		{ "role: pod\n        selectors: [{label: a}]", "selectors: missing: role" },
		{ "role: pod\n        tls_config: {cert_file: c}",
		  "cert_file and key_file go together" },
		{ "role: pod\n        api_server: http://a\n        kubeconfig_file: k",
		  "exclude each other" },
		{ "role: pod\n        port: 1", "unknown key 'port'" },
	};
	struct scrape_config c;
	struct prof_err err;
	const struct scrape_k8s_sd *k;

	(void)state;
	prof_err_init(&err);
	assert_int_equal(scrape_config_parse(y, strlen(y), "/etc/profd/scrape.yaml", 0, &c, &err),
			 0);
	assert_int_equal(c.jobs[0].nk8s_sds, 2);
	k = &c.jobs[0].k8s_sds[0];
	assert_int_equal(k->role, SCRAPE_K8S_ENDPOINTS);
	assert_string_equal(k->api_server, "https://10.0.0.1:6443");
	assert_string_equal(k->bearer_token_file, "/etc/profd/token");
	assert_string_equal(k->tls.ca_file, "/etc/profd/ca.crt");
	assert_true(k->tls.insecure_skip_verify);
	assert_int_equal(k->nnamespaces, 2);
	assert_string_equal(k->namespaces[1], "web");
	assert_true(k->own_namespace);
	assert_int_equal(k->nselectors, 1);
	assert_string_equal(k->selectors[0].label, "app=web");
	assert_string_equal(k->selectors[0].field, "x=y");
	assert_int_equal(c.jobs[0].k8s_sds[1].role, SCRAPE_K8S_NODE);
	assert_string_equal(c.jobs[0].k8s_sds[1].kubeconfig_file, "/etc/kube/config");
	scrape_config_release(&c);

	for (size_t i = 0; i < PROF_ARRAY_SIZE(bad); i++) {
		char *doc =
			xasprintf("scrape_configs:\n  - job_name: k\n    kubernetes_sd_configs:\n"
				  "      - %s\n",
				  bad[i].yaml);

		prof_err_init(&err);
		assert_int_equal(scrape_config_parse(doc, strlen(doc), "s.yaml", 0, &c, &err),
				 -EINVAL);
		if (!strstr(err.msg, bad[i].msg))
			fail_msg("case %zu: error '%s' lacks '%s'", i, err.msg, bad[i].msg);
		scrape_config_release(&c);
		free(doc);
	}
}

/*
 * The annotation example of docs/scrape-kubernetes.md: parse it, run its
 * rules over the targets of sample pods as the scrape manager does
 * (__address__, job, __scheme__, __path_prefix__ first), and check who
 * is kept, at which address, with which labels.
 */
struct outcome {
	size_t kept, distinct;
	char addr[64], scheme[8], prefix[32], ns_pod[64];
};

static void run_job(const struct scrape_job_conf *job, const char *pod, struct outcome *out)
{
	struct scrape_k8s_object o;
	struct prof_err err;
	uint64_t ids[16];

	memset(out, 0, sizeof(*out));
	prof_err_init(&err);
	assert_int_equal(scrape_k8s_object_decode(SCRAPE_K8S_POD, pod, strlen(pod), &o, &err), 0);
	assert_true(o.ngroups <= 16);
	for (size_t i = 0; i < o.ngroups; i++) {
		struct scrape_labels ls = { 0 };
		bool dup = false;

		scrape_labels_copy(&ls, &o.groups[i].labels);
		scrape_labels_set(&ls, "__address__", o.groups[i].targets[0]);
		scrape_labels_set(&ls, "job", job->name);
		scrape_labels_set(&ls, "__scheme__", "http");
		scrape_labels_set(&ls, "__path_prefix__", "");
		if (scrape_relabel_apply(job->relabel, job->nrelabel, &ls)) {
			uint64_t id = scrape_labels_hash(&ls);

			for (size_t k = 0; k < out->distinct && !dup; k++)
				dup = ids[k] == id;
			if (!dup)
				ids[out->distinct++] = id;
			out->kept++;
			snprintf(out->addr, sizeof(out->addr), "%s",
				 scrape_labels_get(&ls, "__address__"));
			snprintf(out->scheme, sizeof(out->scheme), "%s",
				 scrape_labels_get(&ls, "__scheme__"));
			snprintf(out->prefix, sizeof(out->prefix), "%s",
				 scrape_labels_get(&ls, "__path_prefix__"));
			snprintf(out->ns_pod, sizeof(out->ns_pod), "%s/%s",
				 scrape_labels_get(&ls, "namespace"),
				 scrape_labels_get(&ls, "pod"));
		}
		scrape_labels_release(&ls);
	}
	scrape_k8s_object_release(&o);
}

/* A pod in shop with @annotations (JSON members) and @containers (JSON list). */
static char *mkpod(const char *name, const char *ip, const char *annotations,
		   const char *containers)
{
	return xasprintf("{\"metadata\":{\"name\":\"%s\",\"namespace\":\"shop\","
			 "\"labels\":{\"app.kubernetes.io/name\":\"web\"},\"annotations\":{%s}},"
			 "\"spec\":{\"containers\":%s},\"status\":{\"podIP\":\"%s\"}}",
			 name, annotations, containers, ip);
}

static void test_docs_annotation_example(void **state)
{
	static const char marker[] =
		"<!-- the example below is tested by tests/unit/scrape/test_k8s.c -->";
	const char *two_ports =
		"[{\"name\":\"app\",\"ports\":[{\"name\":\"http\",\"containerPort\":8080},"
		"{\"name\":\"pprof\",\"containerPort\":6060}]},{\"name\":\"envoy\"}]";
	struct scrape_config c;
	struct prof_err err;
	struct outcome r;
	struct buf doc;
	const char *start, *end;
	char *pod;

	(void)state;
	buf_init(&doc, 1 << 20);
	assert_int_equal(buf_read_file(&doc, "docs/scrape-kubernetes.md"), 0);
	assert_int_equal(buf_add(&doc, "", 1), 0);
	start = strstr(doc.p, marker);
	assert_non_null(start);
	start = strstr(start, "```yaml\n");
	assert_non_null(start);
	start += 8;
	end = strstr(start, "```");
	assert_non_null(end);
	prof_err_init(&err);
	if (scrape_config_parse(start, (size_t)(end - start), "docs", 0, &c, &err))
		fail_msg("docs example: %s", err.msg);
	assert_int_equal(c.njobs, 2);
	assert_string_equal(c.jobs[0].name, "k8s-memory");

	/* .port: the pod's three targets (two ports, a port-less sidecar) become one. */
	pod = mkpod("a", "10.0.0.7",
		    "\"profiles.grafana.com/memory.scrape\":\"true\","
		    "\"profiles.grafana.com/memory.port\":\"7070\"",
		    two_ports);
	run_job(&c.jobs[0], pod, &r);
	assert_int_equal(r.kept, 3);
	assert_int_equal(r.distinct, 1);
	assert_string_equal(r.addr, "10.0.0.7:7070");
	assert_string_equal(r.ns_pod, "shop/a");
	free(pod);

	/* .port_name, .scheme and .path: the named port only, https, prefix /app. */
	pod = mkpod("b", "10.0.0.8",
		    "\"profiles.grafana.com/memory.scrape\":\"true\","
		    "\"profiles.grafana.com/memory.port_name\":\"pprof\","
		    "\"profiles.grafana.com/memory.scheme\":\"https\","
		    "\"profiles.grafana.com/memory.path\":\"/app/debug/pprof/heap\"",
		    two_ports);
	run_job(&c.jobs[0], pod, &r);
	assert_int_equal(r.kept, 1);
	assert_string_equal(r.addr, "10.0.0.8:6060");
	assert_string_equal(r.scheme, "https");
	assert_string_equal(r.prefix, "/app");
	free(pod);

	/* No annotation, or scrape "false": dropped; the Parca job ignores Grafana's. */
	pod = mkpod("c", "10.0.0.9", "\"profiles.grafana.com/memory.scrape\":\"false\"", two_ports);
	run_job(&c.jobs[0], pod, &r);
	assert_int_equal(r.kept, 0);
	run_job(&c.jobs[1], pod, &r);
	assert_int_equal(r.kept, 0);
	free(pod);

	/* Parca style on a container without declared ports: the bare IP gets the port. */
	pod = mkpod("d", "10.0.0.10", "\"parca.dev/scrape\":\"true\",\"parca.dev/port\":\"6060\"",
		    "[{\"name\":\"app\"}]");
	run_job(&c.jobs[1], pod, &r);
	assert_int_equal(r.kept, 1);
	assert_string_equal(r.addr, "10.0.0.10:6060");
	assert_string_equal(r.ns_pod, "shop/d");
	free(pod);
	scrape_config_release(&c);
	buf_release(&doc);
}

/* scrape_k8s_new's refusals, before any thread or request: credentials it cannot use. */
static void test_credentials_refused(void **state)
{
	static const struct {
		const char *kubeconfig, *msg;
	} cases[] = {
		{ "current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
		  "clusters: [{name: k, cluster: {server: 'https://10.0.0.1:6443', "
		  "certificate-authority-data: '!!not base64!!'}}]\n",
		  "certificate-authority-data: not base64" },
		{ "current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
		  "clusters: [{name: k, cluster: {server: 'https://10.0.0.1:6443'}}]\n"
		  "users: [{name: u, user: {exec: {command: aws}}}]\n",
		  "'exec' is not supported" },
		{ "current-context: other\ncontexts: [{name: c, context: {cluster: k}}]\n",
		  "current-context 'other' names no cluster" },
	};
	char path[] = "/tmp/profd-test-kubeconfig-XXXXXX";
	struct scrape_k8s_sd sd = { .role = SCRAPE_K8S_POD };
	struct scrape_k8s *k = NULL;
	struct prof_err err;
	int fd, rc;

	(void)state;
	prof_err_init(&err);
	unsetenv("KUBERNETES_SERVICE_HOST");
	rc = scrape_k8s_new(&sd, "j", true, &k, &err);
	if (rc == -PROF_EUNSUPPORTED)
		skip(); /* no libcurl on this machine */
	assert_int_equal(rc, -EINVAL);
	assert_null(k);
	assert_non_null(strstr(err.msg, "not in a cluster (KUBERNETES_SERVICE_HOST/PORT unset)"));
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	sd.kubeconfig_file = path;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(cases); i++) {
		FILE *f = fopen(path, "w");

		assert_non_null(f);
		fputs(cases[i].kubeconfig, f);
		fclose(f);
		prof_err_init(&err);
		assert_int_equal(scrape_k8s_new(&sd, "j", true, &k, &err), -EINVAL);
		assert_null(k);
		if (!strstr(err.msg, cases[i].msg))
			fail_msg("case %zu: error '%s' lacks '%s'", i, err.msg, cases[i].msg);
	}
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pod),
		cmocka_unit_test(test_endpoints_service_node),
		cmocka_unit_test(test_mistakes_and_bounds),
		cmocka_unit_test(test_events),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_docs_annotation_example),
		cmocka_unit_test(test_credentials_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
