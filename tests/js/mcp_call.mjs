// SPDX-License-Identifier: Apache-2.0
// mcp_call.mjs - call MCP tools of profd with the real MCP client of npm
// @modelcontextprotocol/sdk over stdio (`profd mcp --server URL`) and print
// each answer's text, for shell tests that check the text themselves.
//
//   node mcp_call.mjs PROFD SERVER_URL TOOL JSON_ARGS [TOOL JSON_ARGS]...
//
// Each answer is printed as "=== TOOL" and its text; exits 1 when a call
// raised an error or answered isError.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [profd, server, ...calls] = process.argv.slice(2);
const transport = new StdioClientTransport({
	command: profd,
	args: ['mcp', '--server', server],
	env: { ...process.env },
	stderr: 'inherit',
});
const client = new Client({ name: 'profd-tests', version: '1' });
await client.connect(transport);
let rc = 0;
for (let i = 0; i + 1 < calls.length; i += 2) {
	const r = await client.callTool({ name: calls[i], arguments: JSON.parse(calls[i + 1]) });
	console.log(`=== ${calls[i]}`);
	console.log(r.content?.[0]?.text ?? '');
	if (r.isError)
		rc = 1;
}
await client.close();
process.exit(rc);
