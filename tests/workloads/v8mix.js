// SPDX-License-Identifier: Apache-2.0
// v8mix.js - JavaScript workload for the agent's V8 frames
// (tests/integration/test_agent_node.sh): a driver spends its CPU in four
// functions of different kinds, each a leaf that allocates little (so the
// garbage collector, which V8's profiler counts apart, takes almost no
// time) and each too large for TurboFan to inline into the driver
// (bytecode well over --max-inlined-bytecode-size, 460 bytes):
//   crunch       a plain function, optimized early;  ~40 % of the CPU
//   digest       an async function (awaits once per call);  ~30 %
//   (anonymous)  an arrow function returned by makeSmoother, a closure
//                over its buffer: V8 names it "" (cpuprofile);  ~20 %
//   multiply     a class method (Matrix.prototype.multiply);  ~10 %
// Run: node v8mix.js MS [CPU_MS]: for MS milliseconds, then on until the
// process has used CPU_MS of CPU (at most 5 * MS).
'use strict';

function crunch(n) {
	let a = 1, b = 2, c = 3, d = 4;
	for (let i = 0; i < n; i++) {
		a = (a * 1103515245 + 12345 + i) % 2147483647;
		b = (b ^ (a >>> 3)) + ((a & 0xff) * 7);
		c = (c + a % 97 + b % 89) | 0;
		d = (d * 31 + (c & 1023)) % 1000003;
		if ((i & 1023) === 0) {
			a = (a + d) % 2147483647;
			b = (b + c) | 0;
		}
		c ^= (d << 3) & 0xffff;
		d = (d + ((a >>> 7) & 255) + ((b >>> 5) & 127)) % 1000003;
		a = (a + (c & 0x3ff) * 13 + (d & 0x1ff) * 17) % 2147483647;
		b = (b * 3 + (a >>> 11)) | 0;
		c = (c + (b >>> 13) + (a & 0xf)) | 0;
		d = (d ^ (c >>> 2)) % 1000003;
		if (d < 0)
			d = -d;
		a = (a + ((d * 7) & 0xffff)) % 2147483647;
		b = (b + (c * 5 & 0xfff)) | 0;
		c = (c + ((a ^ b) & 0x7ff)) | 0;
	}
	return (a + b + c + d) | 0;
}

const TEXT = (() => {
	let s = '';
	for (let i = 0; i < 4096; i++)
		s += String.fromCharCode(97 + ((i * 7919) % 26));
	return s;
})();

async function digest(n) {
	let h1 = 0x811c9dc5, h2 = 0x12345678, h3 = 7, h4 = 11;
	const len = TEXT.length;
	for (let i = 0; i < n; i++) {
		const ch = TEXT.charCodeAt(i % len);
		h1 = Math.imul(h1 ^ ch, 16777619);
		h2 = (h2 + ch * 31 + (h1 >>> 7)) | 0;
		h3 = (h3 * 33 + (ch ^ (h2 & 0xff))) % 1000000007;
		h4 = (h4 + (h3 & 0xffff) + (h1 & 0xfff)) | 0;
		if ((i & 2047) === 0) {
			h1 ^= h4;
			h2 = Math.imul(h2, 0x5bd1e995);
		}
		h3 = (h3 + ((h4 >>> 3) & 0x3ff)) % 1000000007;
		h4 = (h4 ^ (h2 >>> 11)) | 0;
		h1 = (h1 + ((h3 * 3) & 0x7fff)) | 0;
		h2 = (h2 ^ (h4 << 5)) | 0;
		h3 = (h3 + (ch * ch)) % 1000000007;
		h4 = (h4 + ((h1 ^ h3) & 0x1fff)) | 0;
		h1 = Math.imul(h1, 3) ^ (h2 >>> 9);
	}
	await null;
	return (h1 ^ h2 ^ h3 ^ h4) | 0;
}

function makeSmoother(size) {
	const buf = new Float64Array(size);
	for (let i = 0; i < size; i++)
		buf[i] = (i * 37) % 101;
	return (rounds) => {
		let acc = 0, prev = 0, mx = 0, mn = 1e9;
		for (let r = 0; r < rounds; r++) {
			for (let i = 1; i < size - 1; i++) {
				const v = (buf[i - 1] + 2 * buf[i] + buf[i + 1]) * 0.25;
				buf[i] = v + ((r + i) % 3) * 0.5;
				acc += v * 0.001;
				if (v > mx)
					mx = v;
				if (v < mn)
					mn = v;
				prev = (prev + v) * 0.5;
			}
			buf[0] = (buf[1] + prev) * 0.5 + (r % 5);
			buf[size - 1] = (buf[size - 2] + mx - mn) * 0.5;
			if (acc > 1e9)
				acc = 0;
			mx *= 0.99;
			mn *= 1.01;
			if (mn > mx)
				mn = mx * 0.5;
		}
		return acc + prev + mx + mn;
	};
}

class Matrix {
	constructor(n) {
		this.n = n;
		this.a = new Float64Array(n * n);
		this.b = new Float64Array(n * n);
		this.c = new Float64Array(n * n);
		for (let i = 0; i < n * n; i++) {
			this.a[i] = (i % 13) * 0.5;
			this.b[i] = (i % 7) * 0.25;
		}
	}

	multiply(times) {
		const n = this.n, a = this.a, b = this.b, c = this.c;
		let trace = 0;
		for (let t = 0; t < times; t++) {
			for (let i = 0; i < n; i++) {
				for (let j = 0; j < n; j++) {
					let s = 0, s2 = 0;
					for (let k = 0; k < n; k += 2) {
						s += a[i * n + k] * b[k * n + j];
						s2 += a[i * n + k + 1] * b[(k + 1) * n + j];
					}
					c[i * n + j] = s + s2;
				}
			}
			for (let i = 0; i < n; i++)
				trace += c[i * n + i];
			if (trace > 1e12)
				trace = 0;
			a[t % (n * n)] = (c[(t * 7) % (n * n)] % 17) * 0.5;
			b[(t * 3) % (n * n)] = (c[(t * 11) % (n * n)] % 5) * 0.25;
		}
		return trace;
	}
}

async function main() {
	const ms = Number(process.argv[2]) || 3000, cpuMs = Number(process.argv[3]) || 0;
	const start = Date.now();
	const cpuUsed = () => {
		const u = process.cpuUsage();
		return (u.user + u.system) / 1000;
	};
	const smooth = makeSmoother(1024);
	const m = new Matrix(32);
	let acc = 0;
	// Work per round, measured on node 20 once optimized: ~40, 30, 20, 10 ms.
	for (;;) {
		const ran = Date.now() - start;
		if (ran >= 5 * ms || (ran >= ms && cpuUsed() >= cpuMs))
			break;
		acc += crunch(360000);
		acc += await digest(370000);
		acc += smooth(3400);
		acc += m.multiply(160);
	}
	if (acc === 42)
		console.log(acc);
}

main();
