// SPDX-License-Identifier: Apache-2.0
// pyroscope_push.mjs - a Node workload profiled by the real Pyroscope
// Node SDK (@pyroscope/nodejs, which uses @datadog/pprof), pushing to
// profd's Pyroscope-compatible /ingest. Used by
// tests/integration/test_ingest_pyroscope_node.sh.
//
//   node pyroscope_push.mjs SERVER_URL APP_NAME MS [TOKEN]
//
// Runs for MS milliseconds: hotLoop() (CPU) and allocWork() (heap, keeps
// about 1000 small arrays alive) in slices, yielding to the event loop
// between slices so the SDK's timers can flush every second; then
// stops the SDK (which flushes the rest). Tags: env=ci, region=eu.
import Pyroscope from '@pyroscope/nodejs';

const [server, app, msArg, token] = process.argv.slice(2);
const ms = Number(msArg) || 3000;

Pyroscope.init({
	serverAddress: server,
	appName: app,
	authToken: token || undefined,
	tags: { env: 'ci', region: 'eu' },
	flushIntervalMs: 1000,
	wall: { samplingDurationMs: 1000, collectCpuTime: true },
	heap: { samplingIntervalBytes: 8192 },
});
Pyroscope.start();

function hotLoop(n) {
	let x = 0;
	for (let i = 0; i < n; i++)
		x = (x * 31 + i) % 1000003;
	return x;
}

const keep = [];
function allocWork() {
	for (let i = 0; i < 200; i++)
		keep.push(new Array(64).fill(i));
	if (keep.length > 1000)
		keep.splice(0, keep.length - 1000);
}

const end = Date.now() + ms;
let acc = 0;
while (Date.now() < end) {
	const slice = Date.now() + 20;
	while (Date.now() < slice) {
		acc += hotLoop(2e5);
		allocWork();
	}
	await new Promise((resolve) => setImmediate(resolve));
}
await Pyroscope.stop();
// Give the last upload (started by stop) a moment to finish.
await new Promise((resolve) => setTimeout(resolve, 500));
console.log(JSON.stringify({ done: true, acc: acc % 7, kept: keep.length }));
