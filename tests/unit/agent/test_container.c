// SPDX-License-Identifier: Apache-2.0
/*
 * test_container.c - container ids and pod UIDs from real-world
 * /proc/PID/cgroup texts (docker with both cgroup drivers, containerd
 * under Kubernetes with both drivers, cri-o and its conmon, podman, a
 * host process, a hybrid v1+v2 host), and NSpid from /proc/PID/status.
 */
#include "base/compat.h"
#include "agent/container.h"

#include <setjmp.h>
#include <cmocka.h>

#define ID64 "3f2b1c0d9e8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c"

static void parse(const char *text, struct agent_container *c, int want_rc)
{
	assert_int_equal(agent_container_parse(text, strlen(text), c), want_rc);
}

static void test_docker_both_drivers(void **state)
{
	struct agent_container c;

	(void)state;
	parse("0::/system.slice/docker-" ID64 ".scope\n", &c, 1);
	assert_string_equal(c.id, ID64);
	assert_string_equal(c.pod_uid, "");
	parse("12:memory:/docker/" ID64 "\n11:cpu:/docker/" ID64 "\n", &c, 1);
	assert_string_equal(c.id, ID64);
}

static void test_kubernetes_systemd_and_cgroupfs(void **state)
{
	struct agent_container c;

	(void)state;
	parse("0::/kubepods.slice/kubepods-burstable.slice/"
	      "kubepods-burstable-pod1a2b3c4d_5e6f_7a8b_9c0d_1e2f3a4b5c6d.slice/"
	      "cri-containerd-" ID64 ".scope\n",
	      &c, 1);
	assert_string_equal(c.id, ID64);
	assert_string_equal(c.pod_uid, "1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d");
	parse("0::/kubepods/besteffort/pod1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d/" ID64 "\n", &c, 1);
	assert_string_equal(c.id, ID64);
	assert_string_equal(c.pod_uid, "1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d");
	/* The pod's own cgroup (pause-less view): UID, no container. */
	parse("0::/kubepods.slice/kubepods-pod1a2b3c4d_5e6f_7a8b_9c0d_1e2f3a4b5c6d.slice\n", &c, 1);
	assert_string_equal(c.id, "");
	assert_string_equal(c.pod_uid, "1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d");
}

static void test_crio_podman_and_conmon(void **state)
{
	struct agent_container c;

	(void)state;
	parse("0::/kubepods.slice/crio-" ID64 ".scope\n", &c, 1);
	assert_string_equal(c.id, ID64);
	parse("0::/machine.slice/libpod-" ID64 ".scope/container\n", &c, 1);
	assert_string_equal(c.id, ID64);
	/* cri-o's monitor is not the container. */
	parse("0::/kubepods.slice/crio-conmon-" ID64 ".scope\n", &c, 0);
	assert_string_equal(c.id, "");
}

static void test_host_and_near_misses(void **state)
{
	struct agent_container c;

	(void)state;
	parse("0::/user.slice/user-1000.slice/session-2.scope\n", &c, 0);
	parse("4:memory:/process_api/e7552e00b2dcedccea2a20a68502a5a2\n0::/\n", &c, 0);
	/* 65 hex digits is not an id; uppercase is not what runtimes write. */
	parse("0::/docker/" ID64 "a\n", &c, 0);
	parse("0::/docker/3F2B1C0D9E8A7B6C5D4E3F2A1B0C9D8E7F6A5B4C3D2E1F0A9B8C7D6E5F4A3B2C\n", &c,
	      0);
	parse("", &c, 0);
	parse("garbage without colons", &c, 0);
	/* v2 wins over a v1 line naming something else. */
	parse("5:cpu:/docker/" ID64 "\n0::/system.slice/docker-"
	      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.scope\n",
	      &c, 1);
	assert_string_equal(c.id,
			    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
}

static void test_nspid(void **state)
{
	static const char st1[] = "Name:\tnode\nTgid:\t4242\nNSpid:\t4242\t17\nPPid:\t1\n";
	static const char st2[] = "Name:\tbash\nNSpid:\t99\n";
	static const char st3[] = "Name:\tx\nPid:\t5\n";
	static const char st4[] = "NSpid:\t12\t7\t3";
	static const char st5[] = "Name:\tx\nNSpid:\t12\tabc\n";

	(void)state;
	assert_int_equal(agent_status_nspid(st1, strlen(st1)), 17);
	assert_int_equal(agent_status_nspid(st2, strlen(st2)), 99);
	assert_int_equal(agent_status_nspid(st3, strlen(st3)), 0);
	assert_int_equal(agent_status_nspid(st4, strlen(st4)), 3);
	assert_int_equal(agent_status_nspid(st5, strlen(st5)), 0);
	/* A thread's status (/proc/PID/task/TID): the process's id is NStgid's. */
	{
		static const char st6[] = "Name:\tw\nTgid:\t4242\nNStgid:\t4242\t1\nPid:\t4250\n"
					  "NSpid:\t4250\t2\n";

		assert_int_equal(agent_status_nspid(st6, strlen(st6)), 1);
	}
}

/* /proc/PID/environ text: NUL-separated entries (sizeof - 1 keeps the last NUL). */
#define ENV(lit) lit, sizeof(lit) - 1

static void test_environ_service(void **state)
{
	char out[AGENT_SERVICE_LEN], small[4];

	(void)state;
	assert_true(agent_environ_service(ENV("PATH=/bin\0OTEL_SERVICE_NAME=svc-node\0HOME=/\0"),
					  out, sizeof(out)));
	assert_string_equal(out, "svc-node");
	/* OTEL_SERVICE_NAME wins over the resource attributes, wherever it comes. */
	assert_true(agent_environ_service(
		ENV("OTEL_RESOURCE_ATTRIBUTES=service.name=a,x=1\0OTEL_SERVICE_NAME=b\0"), out,
		sizeof(out)));
	assert_string_equal(out, "b");
	assert_true(agent_environ_service(
		ENV("OTEL_RESOURCE_ATTRIBUTES=deployment.environment=ci, service.name=shop,x=1\0"),
		out, sizeof(out)));
	assert_string_equal(out, "shop");
	/* Empty values, near misses, a cut last entry: none. */
	assert_false(agent_environ_service(ENV("OTEL_SERVICE_NAME=\0"), out, sizeof(out)));
	assert_string_equal(out, "");
	assert_false(agent_environ_service(ENV("XOTEL_SERVICE_NAME=a\0OTEL_SERVICE=b\0"), out,
					   sizeof(out)));
	assert_false(agent_environ_service(ENV("OTEL_RESOURCE_ATTRIBUTES=service.names=a\0"), out,
					   sizeof(out)));
	assert_false(agent_environ_service("OTEL_SERVICE_NAME=cut", 21, out, sizeof(out)));
	assert_false(agent_environ_service("", 0, out, sizeof(out)));
	/* Cut to the output's size. */
	assert_true(agent_environ_service(ENV("OTEL_SERVICE_NAME=abcdef\0"), small, sizeof(small)));
	assert_string_equal(small, "abc");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_docker_both_drivers),
		cmocka_unit_test(test_kubernetes_systemd_and_cgroupfs),
		cmocka_unit_test(test_crio_podman_and_conmon),
		cmocka_unit_test(test_host_and_near_misses),
		cmocka_unit_test(test_nspid),
		cmocka_unit_test(test_environ_service),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
