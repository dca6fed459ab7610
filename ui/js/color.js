// SPDX-License-Identifier: Apache-2.0
/*
 * color.js - frame colours: warm by name (Brendan Gregg's "hot"), by
 * package, by OpenTelemetry frame type, and the diff's red/green mix.
 *
 * Pure functions, no DOM: the same name always gets the same colour
 * (FNV-1a hash of the name), so two views of one profile agree.
 */

export function hash(s) {
	let h = 2166136261;
	for (let i = 0; i < s.length; i++) {
		h ^= s.charCodeAt(i);
		h = Math.imul(h, 16777619);
	}
	return h >>> 0;
}

const hotCache = new Map();
export function hotColor(name) {
	let c = hotCache.get(name);
	if (!c) {
		const h = hash(name);
		const r = 205 + Math.round((50 * ((h >>> 16) & 0xff)) / 255);
		const g = 70 + Math.round((160 * (h & 0xff)) / 255);
		const b = Math.round((55 * ((h >>> 8) & 0xff)) / 255);
		c = `rgb(${r},${g},${b})`;
		hotCache.set(name, c);
	}
	return c;
}

/*
 * The package or module of a frame name: "crypto/sha256.block" ->
 * "crypto/sha256", "com.acme.Cart.add" -> "com.acme.Cart",
 * "std::vector<int>::push_back" -> "std::vector<int>",
 * "libc.so.6+0x1234" -> "libc.so.6", "main" -> "main".
 */
export function packageOf(name) {
	const n = name.replace(/\s*\(.*$/, '');
	const plus = n.indexOf('+0x');
	if (plus > 0) return n.slice(0, plus);
	const cc = n.lastIndexOf('::');
	if (cc > 0) return n.slice(0, cc);
	const slash = n.lastIndexOf('/');
	if (slash >= 0) {
		const dot = n.indexOf('.', slash);
		return dot > 0 ? n.slice(0, dot) : n;
	}
	const dot = n.lastIndexOf('.');
	return dot > 0 ? n.slice(0, dot) : n;
}

export const PKG_HUES = [18, 35, 200, 140, 270, 330, 95, 175, 225, 55, 300, 5];
const pkgCache = new Map();
export function packageColor(name) {
	let c = pkgCache.get(name);
	if (!c) {
		const h = hash(packageOf(name));
		const hue = PKG_HUES[h % PKG_HUES.length];
		const light = 66 + ((h >>> 8) % 10);
		c = `hsl(${hue},62%,${light}%)`;
		pkgCache.set(name, c);
	}
	return c;
}

/*
 * Colours of the OpenTelemetry frame types (profile.frame.type, the
 * flame graph's "frame_types" and per-node "ft"); a type not listed
 * gets a hue from its name, a frame without a type the unknown grey.
 */
export const FT_COLORS = {
	native: 'hsl(215,18%,70%)',
	kernel: 'hsl(30,20%,62%)',
	cpython: 'hsl(205,70%,62%)',
	ruby: 'hsl(355,68%,64%)',
	php: 'hsl(250,50%,70%)',
	jvm: 'hsl(28,85%,62%)',
	v8js: 'hsl(50,85%,58%)',
	go: 'hsl(185,60%,52%)',
	dotnet: 'hsl(275,55%,66%)',
	perl: 'hsl(160,40%,56%)',
	beam: 'hsl(320,55%,66%)',
	luajit: 'hsl(120,40%,58%)',
	'abort-marker': 'hsl(0,0%,40%)',
};
export const FT_UNKNOWN = 'hsl(0,0%,82%)';
export function frameTypeColor(t) {
	if (!t) return FT_UNKNOWN;
	return FT_COLORS[t] || `hsl(${PKG_HUES[hash(t) % PKG_HUES.length]},55%,60%)`;
}

/* The colour of a frame in @mode ('hot', 'package', 'frametype'); @frameType for the last. */
export function frameColor(mode, name, frameType) {
	if (mode === 'frametype') return frameTypeColor(frameType || '');
	return mode === 'package' ? packageColor(name) : hotColor(name);
}

export function parseColor(c) {
	const m = /^#([0-9a-f]{6})$/i.exec(c || '');
	if (!m) return [200, 200, 200];
	const v = parseInt(m[1], 16);
	return [v >> 16, (v >> 8) & 255, v & 255];
}

/* Between #rrggbb @a and @b: at least 35 % of the way, more with @t (0..1). */
export function mix(a, b, t) {
	const x = parseColor(a);
	const y = parseColor(b);
	const k = 0.35 + 0.65 * Math.max(0, Math.min(1, t));
	return `rgb(${x.map((v, i) => Math.round(v + (y[i] - v) * k)).join(',')})`;
}

export const SERIES_COLORS = ['#e0582b', '#2f6fde', '#2e9e6a', '#9b59d0', '#d9a21b', '#1aa3b8', '#c2417a', '#6b8e23', '#8a6d3b', '#5f6b7a', '#b0b7c3'];
