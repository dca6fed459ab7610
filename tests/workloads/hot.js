// SPDX-License-Identifier: Apache-2.0
// hot.js - JavaScript workload for the V8 .cpuprofile test
// (tests/integration/test_formats_corpus.sh): main() calls hotLoop(), a
// tight arithmetic loop ten times longer than coldWork(), until MS
// milliseconds (argv[2], default 1000) have passed, so hotLoop is the top
// self function of `node --cpu-prof hot.js`. With CPU_MS (argv[3]) it runs
// on past MS until the process has used that many milliseconds of CPU (a
// loaded machine gives it less than MS), but for at most 5 * MS.
'use strict';
function hotLoop(n) {
	let x = 0;
	for (let i = 0; i < n; i++)
		x = (x * 31 + i) % 1000003;
	return x;
}
function coldWork(n) {
	let s = 0;
	for (let i = 0; i < n; i++)
		s += i & 7;
	return s;
}
function main() {
	const ms = Number(process.argv[2]) || 1000, cpuMs = Number(process.argv[3]) || 0;
	const start = Date.now();
	const cpuUsed = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
	let acc = 0;
	for (;;) {
		const ran = Date.now() - start;
		if (ran >= 5 * ms || (ran >= ms && cpuUsed() >= cpuMs))
			break;
		acc += hotLoop(3e6);
		acc += coldWork(3e5);
	}
	if (acc < 0)
		console.log(acc);
}
main();
