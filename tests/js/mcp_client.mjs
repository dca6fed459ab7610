// SPDX-License-Identifier: Apache-2.0
// mcp_client.mjs - drives profd's MCP server with the real MCP client of
// npm @modelcontextprotocol/sdk, over stdio (`profd mcp`) or streamable
// HTTP (the server's POST /mcp), and checks every tool's answer on the
// deterministic profiles of tests/integration/test_mcp.sh:
//
//   side A (T0 .. T0+20s):         main;serve;hot_loop 60%, main;serve;parse_request 30%, main;gc 10%
//   side B (T0+600s .. T0+620s):   hot_loop 80%, parse_request 10%, gc 10%
//   (each 10 ms per sample, 200 samples per side, service.name=api;
//    one sample of main;db_scan in service.name=db at T0)
//
//   (with PROFD_SORTLINE="T5 HOT CMP" also service.name=sortline at T5:
//    cmp_slow of tests/workloads/sortline.c, 20 samples on line HOT, 3 on
//    line CMP, 1 on its first line, with the source under --source-path)
//
//   node mcp_client.mjs stdio PROFD SERVER_URL TOKEN
//   node mcp_client.mjs http MCP_URL TOKEN
//
// Prints "ok - ..." / "FAIL - ..." lines and "N passed, M failed";
// exits 1 when anything failed.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [mode, a1, a2, a3] = process.argv.slice(2);
const T0 = 1700000000000;
const A = { from: T0, to: T0 + 19999 };
const B = { from: T0 + 600000, to: T0 + 619999 };
const ALL = { from: T0, to: T0 + 619999 };
const API = '{service.name="api"}';

let passed = 0;
let failed = 0;
function check(what, cond, detail) {
	if (cond) {
		passed++;
		console.log(`ok - [${mode}] ${what}`);
	} else {
		failed++;
		console.log(`FAIL - [${mode}] ${what}${detail ? `\n${detail}` : ''}`);
	}
}

function has(text, ...needles) {
	return needles.every((n) => text.includes(n));
}

async function call(client, name, args) {
	const r = await client.callTool({ name, arguments: args });
	const text = r.content?.[0]?.text ?? '';
	return { text, isError: r.isError === true };
}

async function expectRpcError(what, fn, code) {
	try {
		await fn();
		check(what, false, 'no error was raised');
	} catch (e) {
		check(what, e.code === code, `got ${e.code}: ${e.message}`);
	}
}

const client = new Client({ name: 'profd-mcp-test', version: '1.0.0' });
let transport;
if (mode === 'stdio') {
	transport = new StdioClientTransport({
		command: a1,
		args: ['mcp', '--server', a2],
		env: { ...process.env, PROFD_TOKEN: a3 },
		stderr: 'inherit',
	});
} else if (mode === 'http') {
	transport = new StreamableHTTPClientTransport(new URL(a1), {
		requestInit: { headers: { Authorization: `Bearer ${a2}` } },
	});
} else {
	console.error('usage: mcp_client.mjs stdio PROFD SERVER_URL TOKEN | http MCP_URL TOKEN');
	process.exit(2);
}

try {
	await client.connect(transport);
	const info = client.getServerVersion();
	check('initialize: serverInfo names profd', info?.name === 'profd', JSON.stringify(info));
	const caps = client.getServerCapabilities();
	check('initialize: tools and resources capabilities', !!caps?.tools && !!caps?.resources,
		JSON.stringify(caps));
	if (mode === 'http')
		check('negotiated protocol version is one profd speaks (client offered a newer one)',
			transport.protocolVersion === '2025-06-18', transport.protocolVersion);

	const { tools } = await client.listTools();
	const names = tools.map((t) => t.name).sort();
	const want = ['callers_callees', 'compare', 'explain_change', 'find_function', 'flamegraph_summary',
		'function_timeseries', 'label_values', 'list_labels', 'list_profile_types', 'optimization_candidates',
		'source_location', 'top_functions'];
	check('tools/list: the eleven tools', JSON.stringify(names) === JSON.stringify(want), names.join(','));
	check('tools/list: every tool has an object input schema',
		tools.every((t) => t.inputSchema?.type === 'object' && t.inputSchema.additionalProperties === false));

	let r = await call(client, 'list_profile_types', ALL);
	check('list_profile_types names the CPU type with its unit',
		has(r.text, '- process_cpu:cpu:nanoseconds:cpu:nanoseconds: cpu measured in nanoseconds'), r.text);

	r = await call(client, 'list_labels', ALL);
	check('list_labels: service.name', has(r.text, '- service.name'), r.text);

	r = await call(client, 'label_values', { name: 'service.name', ...ALL });
	check('label_values: api and db', has(r.text, '2 values of label service.name:\n- api\n- db\n'), r.text);

	r = await call(client, 'top_functions', { query: API, ...A });
	check('top_functions: hot_loop self 1.20s = 60.00% of 2.00s',
		!r.isError && has(r.text, 'Total: 2.00s in 200 samples',
			'     1.20s   60.00%      1.20s   60.00%  hot_loop\n'), r.text);
	check('top_functions: the caller serve has total 90.00%',
		has(r.text, '       0ns    0.00%      1.80s   90.00%  serve\n'), r.text);
	check('top_functions: no links unless asked', !r.text.includes('/api/v1/') && !r.text.includes('Explorer'), r.text);
	r = await call(client, 'top_functions', { query: API, ...A, links: true });
	check('top_functions with links: the exact API query and an explorer link',
		has(r.text, '/api/v1/table?type=process_cpu%3Acpu%3Ananoseconds%3Acpu%3Ananoseconds&query=%7Bservice.name%3D%22api%22%7D&from=1700000000000&to=1700000019999',
			'Explorer: http://'), r.text);

	r = await call(client, 'flamegraph_summary', { query: API, ...A });
	check('flamegraph_summary: hottest path main -> serve -> hot_loop at 60.00%',
		has(r.text, '1. 1.20s self (60.00%): main -> serve -> hot_loop\n',
			'\n  serve  total 1.80s (90.00%), self 0ns (0.00%)\n'), r.text);

	r = await call(client, 'callers_callees', { function: 'hot_loop', query: API, ...A });
	check('callers_callees: serve calls hot_loop, 100% of it, 60% of all',
		has(r.text, 'Function hot_loop: total 1.20s (60.00% of all)',
			'\nserve  1.20s (60.00% of all, 100.00% of hot_loop)\n',
			'\n  main  1.20s (60.00% of all, 100.00% of hot_loop)\n'), r.text);

	r = await call(client, 'compare', {
		query: API, a_from: A.from, a_to: A.to, b_from: B.from, b_to: B.to,
	});
	check('compare: hot_loop grew from 60 to 80 ms/s, significant in absolute terms and in share',
		has(r.text, 'Significant in absolute terms (rate per second): hot_loop grew +20.00ms/s = +0.02 cores (+33.3%), parse_request shrank -20.00ms/s = -0.02 cores (-66.7%)\n',
			'1. hot_loop: self 1.20s -> 1.60s; rate 60.00ms/s = 0.06 cores -> 80.00ms/s = 0.08 cores (+20.00ms/s = +0.02 cores; q=0.029, significant); share 60.00% -> 80.00% (+20.00 pts; q=1.9e-05, significant)'),
		r.text);
	check('compare: parse_request shrank from 30 to 10 ms/s',
		has(r.text, '1. parse_request: self 600.00ms -> 200.00ms; rate 30.00ms/s = 0.03 cores -> 10.00ms/s = 0.01 cores (-20.00ms/s = -0.02 cores;'), r.text);

	r = await call(client, 'explain_change', { query: API, from: B.from, to: B.to, a_from: A.from, a_to: A.to });
	check('explain_change: hot_loop GREW with its call path',
		has(r.text, 'hot_loop GREW: self rate 60.00ms/s = 0.06 cores -> 80.00ms/s = 0.08 cores (+20.00ms/s = +0.02 cores, q=0.029); self 1.20s -> 1.60s; self share 60.00% -> 80.00% (+20.00 pts)',
			'   - main -> serve -> hot_loop: A 60.00% -> B 80.00% (+20.00 pts)'), r.text);

	r = await call(client, 'function_timeseries', { function: 'hot_loop', query: API, ...ALL, step: '60s' });
	check('function_timeseries: 2.80s of 4.00s, 60% then 80%',
		has(r.text, 'In range: 2.80s of 4.00s (70.00%)', '1.20s        2.00s   60.00%', '1.60s        2.00s   80.00%'),
		r.text);

	r = await call(client, 'find_function', { search: 'loop', ...ALL });
	check('find_function: hot_loop', has(r.text, "1 function matches the substring 'loop'", '  hot_loop\n'), r.text);

	r = await call(client, 'source_location', { function: 'hot_loop', ...ALL });
	check('source_location: says plainly that the location is unknown',
		!r.isError && has(r.text, 'Source location: unknown'), r.text);

	if (process.env.PROFD_SORTLINE) {
		const [t5, hot, cmp] = process.env.PROFD_SORTLINE.split(' ').map(Number);
		r = await call(client, 'source_location',
			{ function: 'cmp_slow', query: '{service.name="sortline"}', from: t5, to: t5 + 9999, limit: 2 });
		check('source_location: the HOT line of the slow comparator first, with its text, then CMP',
			!r.isError && has(r.text, `Hottest lines (2 of 3; % of the function's total):\nsortline.c:${hot}  self 200.00ms (83.33%)  total 200.00ms (83.33%)\n    | for (long i = 0;`,
				'/* HOT */\n', `sortline.c:${cmp}  self 30.00ms (12.50%)`), r.text);
		r = await call(client, 'optimization_candidates', { query: '{service.name="sortline"}', from: t5, to: t5 + 9999, limit: 1 });
		check('optimization_candidates: the slow comparator, its HOT line and its caller',
			!r.isError && has(r.text, '1. cmp_slow: self 230.00ms (95.83% of all, 0.023 cores on average)',
				`   line sortline.c:${hot}  self 200.00ms (86.96% of its self)  | for (long i = 0;`, '   called from: qsort 100.00%')
				&& !r.text.includes('2. memcpy'), r.text);
	}

	r = await call(client, 'top_functions', { query: API, ...A, max_tokens: 200, limit: 200 });
	check('max_tokens bounds the output', r.text.length < 200 * 4 + 1200, `${r.text.length} bytes`);

	/* The budget holds for every tool: 200 tokens is about 800 characters, plus the cut note. */
	const minimal = {
		callers_callees: { function: 'hot_loop' }, function_timeseries: { function: 'hot_loop' },
		source_location: { function: 'hot_loop' }, label_values: { name: 'service.name' }, find_function: { search: 'o' },
	};
	const sizes = [];
	for (const t of tools) {
		const args = { ...(minimal[t.name] || {}), max_tokens: 200 };
		if (t.inputSchema.properties.from) Object.assign(args, ALL);
		if (t.inputSchema.properties.a_from) Object.assign(args, { a_from: A.from, a_to: A.to, b_from: B.from, b_to: B.to });
		r = await call(client, t.name, args);
		sizes.push(`${t.name} ${r.text.length}`);
		check(`max_tokens 200 bounds ${t.name}'s answer (${r.text.length} characters)`, !r.isError && r.text.length <= 200 * 4 + 200, r.text);
	}
	console.log(`# answers at max_tokens 200: ${sizes.join(', ')}`);

	r = await call(client, 'top_functions', { query: '{service.name=', ...A, type: 'process_cpu:cpu:nanoseconds:cpu:nanoseconds' });
	check('a selector the API refuses is an isError result with its reason',
		r.isError && has(r.text, 'HTTP 400'), r.text);

	await expectRpcError('unknown tool -> JSON-RPC -32602',
		() => client.callTool({ name: 'no_such_tool', arguments: {} }), -32602);
	await expectRpcError('bad argument type -> -32602',
		() => client.callTool({ name: 'top_functions', arguments: { limit: 'many' } }), -32602);
	await expectRpcError('unknown argument -> -32602',
		() => client.callTool({ name: 'top_functions', arguments: { colour: 'red' } }), -32602);
	await expectRpcError('missing required argument -> -32602',
		() => client.callTool({ name: 'callers_callees', arguments: {} }), -32602);
	await expectRpcError('time range over 31 days -> -32602',
		() => client.callTool({ name: 'top_functions', arguments: { from: 'now-60d' } }), -32602);
	await client.ping();
	check('the server answers ping after the errors', true);

	const { resources } = await client.listResources();
	check('resources/list: guide and profile types', resources.length === 2, JSON.stringify(resources));
	const guide = await client.readResource({ uri: 'profd://guide' });
	check('resources/read profd://guide', has(guide.contents[0].text, 'Selectors'));
	await expectRpcError('resources/read unknown uri -> -32002',
		() => client.readResource({ uri: 'profd://nope' }), -32002);
} catch (e) {
	check(`no unexpected exception (${e?.message ?? e})`, false, e?.stack);
} finally {
	await client.close().catch(() => {});
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
