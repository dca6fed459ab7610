// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_mcp.c - libFuzzer target for the MCP server's JSON-RPC handling
 * (src/mcp/mcp.c, tools.c, text.c, resources.c) over a stub query API
 * that answers fixed JSON (tests/unit/mcp/mcp_stub.h): any bytes give
 * one well-formed JSON-RPC response (an object or a batch array), or
 * none for notifications, never a crash, a hang or a leak; and the same
 * server answers a ping afterwards. Build and run: scripts/fuzz.sh.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/err.h"
#include "mcp/mcp.h"
#include "../unit/mcp/mcp_stub.h"

#include <jansson.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct mcp_backend be = { stub_get, NULL, "http://fuzz" };
	static const char ping[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";
	struct mcp_server *s = mcp_server_new(&be);
	struct buf out = BUF_INIT;
	json_t *j;
	int rc = mcp_server_handle(s, (const char *)data, size, &out);

	PROF_ASSERT(rc == 0 || rc == -PROF_ETOOBIG);
	if (out.len) {
		PROF_ASSERT(!memchr(out.p, '\n', out.len));
		j = json_loadb(out.p, out.len, 0, NULL);
		PROF_ASSERT(json_is_object(j) || json_is_array(j));
		json_decref(j);
	}
	buf_reset(&out);
	PROF_ASSERT(mcp_server_handle(s, ping, sizeof(ping) - 1, &out) == 0);
	PROF_ASSERT(out.len && strstr(out.p, "\"result\""));
	buf_release(&out);
	mcp_server_free(s);
	return 0;
}
