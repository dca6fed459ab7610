// SPDX-License-Identifier: Apache-2.0
/*
 * app.js - the profd Profiling Explorer.
 *
 * One selection (dataset, profile type, label selector, time range, view
 * filters) drives a time-series chart (uPlot, "sum by" a label) and six
 * views: flame graph, table, sandwich, flame chart, compare (differential
 * flame graph) and stack health. Every number comes from the JSON API of
 * `profd server` (docs/api.md); nothing is recomputed here but layout.
 *
 * State lives in the URL (see readUrl/writeUrl for the keys), so a reload
 * or a copied link restores type, range, filters, view, zoom and search.
 *
 * For browser tests the page publishes its models:
 *   window.profdFlame - the main flame graph: {state, unit, total, request,
 *       nodes: [{name, x, y, w, h, self, total, depth, match, selected}]}
 *       (CSS pixels relative to #flamegraph);
 *   window.profd - {state, views: {flame, table, sandwich, flamechart,
 *       compare, health, chart}, timings}; each view has a `state`
 *       ('idle', 'loading', 'ready', 'empty', 'error') and its data.
 *
 * Plain modern JS, no framework; uPlot is the only library.
 */
'use strict';

(function () {
	const ROW_H = 18; /* px per stack level */
	const MIN_W = 0.35; /* frames narrower than this (px) are not drawn */
	const TEXT_PAD = 4;
	const FONT = '12px ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", Menlo, Consolas, monospace';
	const MAX_NODES = 32768;
	const TABLE_ROWS = 500;
	const PRESETS = {
		'5m': ['the last 5 minutes', 5 * 60e3],
		'15m': ['the last 15 minutes', 15 * 60e3],
		'1h': ['the last hour', 3600e3],
		'6h': ['the last 6 hours', 6 * 3600e3],
		'24h': ['the last 24 hours', 24 * 3600e3],
		'7d': ['the last 7 days', 7 * 24 * 3600e3],
	};
	const VIEWS = ['flame', 'table', 'sandwich', 'flamechart', 'compare', 'health'];
	const SERIES_COLORS = ['#e0582b', '#2f6fde', '#2e9e6a', '#9b59d0', '#d9a21b', '#1aa3b8', '#c2417a', '#6b8e23', '#8a6d3b', '#5f6b7a', '#b0b7c3'];

	const $ = (id) => document.getElementById(id);
	const el = {
		form: $('query-form'),
		dataset: $('dataset-input'),
		type: $('type-select'),
		query: $('query-input'),
		suggest: $('suggest'),
		groupBy: $('groupby-select'),
		range: $('range-select'),
		absRange: $('abs-range'),
		from: $('from-input'),
		to: $('to-input'),
		run: $('run-button'),
		refresh: $('refresh-button'),
		status: $('server-status'),
		copyLink: $('copy-link'),
		theme: $('theme-toggle'),
		chart: $('chart'),
		chartMsg: $('chart-message'),
		chartSummary: $('chart-summary'),
		legend: $('legend'),
		chips: $('chips'),
		chipKind: $('chip-kind'),
		chipInput: $('chip-input'),
		chipAdd: $('chip-add'),
		hidePresets: $('hide-presets'),
		tabs: $('tabs'),
		tooltip: $('tooltip'),
		toast: $('toast'),
		/* flame graph */
		canvas: $('flamegraph'),
		overlay: $('flame-overlay'),
		message: $('message'),
		breadcrumb: $('breadcrumb'),
		reset: $('reset-button'),
		summary: $('summary'),
		search: $('search-input'),
		searchResult: $('search-result'),
		invert: $('invert-toggle'),
		icicle: $('icicle-toggle'),
		color: $('color-select'),
		ftLegend: $('ft-legend'),
		/* table */
		topTable: $('top-table'),
		tableSummary: $('table-summary'),
		tableSearch: $('table-search'),
		tableMsg: $('table-message'),
		/* sandwich */
		swFn: $('sandwich-fn'),
		fnList: $('fn-list'),
		swSummary: $('sandwich-summary'),
		swMsg: $('sandwich-message'),
		/* flame chart */
		fcCanvas: $('flamechart'),
		fcWrap: $('fc-wrap'),
		fcLanes: $('fc-lanes'),
		fcReset: $('fc-reset'),
		fcSummary: $('fc-summary'),
		fcMsg: $('fc-message'),
		/* compare */
		cmpRun: $('cmp-run'),
		cmpSummary: $('cmp-summary'),
		cmpMsg: $('cmp-message'),
		/* health */
		healthSummary: $('health-summary'),
		healthCards: $('health-cards'),
		healthTable: $('health-table'),
		healthMsg: $('health-message'),
		exports: {
			main: $('exports'),
			pprof: $('export-pprof'),
			svg: $('export-svg'),
			folded: $('export-folded'),
			speedscope: $('export-speedscope'),
			cmp: $('cmp-exports'),
			sides: {
				a: { pprof: $('cmp-export-a-pprof'), folded: $('cmp-export-a-folded'), svg: $('cmp-export-a-svg') },
				b: { pprof: $('cmp-export-b-pprof'), folded: $('cmp-export-b-folded'), svg: $('cmp-export-b-svg') },
			},
			diff: $('cmp-export-diff'),
		},
	};

	const state = {
		dataset: '',
		type: '',
		query: '',
		range: '1h', /* a preset key or 'abs' */
		from: 0, /* ms, when range is 'abs' */
		to: 0,
		groupBy: '',
		view: 'flame',
		search: '',
		focusPath: [],
		fn: '', /* the selected function: sandwich, highlighted in the flame graph */
		sf: [], /* stack filter regexes */
		ff: [], /* frame filter regexes */
		hide: [],
		invert: false,
		icicle: true,
		color: 'hot',
		sort: 'self',
		tableSearch: '',
		lanes: '',
		cmp: { aType: '', bType: '', aQuery: '', bQuery: '', aFrom: 0, aTo: 0, bFrom: 0, bTo: 0, mode: 'normalized' },
		seq: 0,
		types: [],
	};

	const timings = { flameRenderMs: [], hoverMs: [] };
	const pub = { state, views: {}, timings };
	window.profd = pub;

	/* ---------- formatting ---------- */

	function sig(x) {
		const a = Math.abs(x);
		if (a >= 100) return x.toFixed(0);
		if (a >= 10) return x.toFixed(1);
		return x.toFixed(2);
	}

	function fmtDuration(ns) {
		const a = Math.abs(ns);
		if (a < 1e3) return `${Math.round(ns)} ns`;
		if (a < 1e6) return `${sig(ns / 1e3)} µs`;
		if (a < 1e9) return `${sig(ns / 1e6)} ms`;
		if (a < 60e9) return `${sig(ns / 1e9)} s`;
		if (a < 3600e9) return `${sig(ns / 60e9)} min`;
		if (a < 86400e9) return `${sig(ns / 3600e9)} h`;
		return `${sig(ns / 86400e9)} days`;
	}

	function fmtBytes(b) {
		const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
		let i = 0;
		let v = b;
		while (Math.abs(v) >= 1024 && i < units.length - 1) {
			v /= 1024;
			i++;
		}
		return i === 0 ? `${Math.round(v)} B` : `${sig(v)} ${units[i]}`;
	}

	function fmtCount(n) {
		return Math.round(n).toLocaleString('en-US');
	}

	function fmtValue(v, unit) {
		switch ((unit || '').toLowerCase()) {
		case 'nanoseconds':
		case 'nanosecond':
		case 'ns':
			return fmtDuration(v);
		case 'microseconds':
		case 'us':
			return fmtDuration(v * 1e3);
		case 'milliseconds':
		case 'ms':
			return fmtDuration(v * 1e6);
		case 'seconds':
		case 's':
			return fmtDuration(v * 1e9);
		case 'bytes':
		case 'byte':
			return fmtBytes(v);
		case '':
		case 'count':
		case 'counts':
			return fmtCount(v);
		default:
			return `${fmtCount(v)} ${unit}`;
		}
	}

	function fmtPct(part, whole) {
		if (!whole) return '–';
		const p = (100 * part) / whole;
		if (p > 0 && p < 0.01) return '<0.01%';
		return `${Math.abs(p) >= 10 ? p.toFixed(1) : p.toFixed(2)}%`;
	}

	function fmtTime(ms) {
		const d = new Date(ms);
		const p = (n) => String(n).padStart(2, '0');
		return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
	}

	/* datetime-local value (local time) <-> unix ms */
	function toLocalInput(ms) {
		if (!ms) return '';
		return fmtTime(ms).replace(' ', 'T');
	}
	function fromLocalInput(s) {
		if (!s) return 0;
		const t = new Date(s).getTime();
		return Number.isFinite(t) ? t : 0;
	}

	/* "process_cpu:cpu:nanoseconds:cpu:nanoseconds" -> parts and a label. */
	function parseType(id) {
		const p = String(id).split(':');
		if (p.length < 3) return { id, name: id, sampleType: '', unit: '', label: id };
		const [name, sampleType, unit] = p;
		return { id, name, sampleType, unit, label: `${name} · ${sampleType} (${unit})` };
	}

	function escapeHtml(s) {
		return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
	}

	function rangeWords() {
		if (state.range === 'abs') return `${fmtTime(state.from)} – ${fmtTime(state.to)}`;
		return PRESETS[state.range][0];
	}

	/* The hide presets the API knows (query/filter.h), as hide= takes them. */
	const HIDE_PRESETS = ['go', 'jvm', 'libc', 'kernel', 'python', 'ruby', 'php', 'node'];

	/* Theme colours, read once per theme (getComputedStyle is too slow per frame). */
	const cssCache = new Map();
	function cssVar(name) {
		let v = cssCache.get(name);
		if (v === undefined) {
			v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
			cssCache.set(name, v);
		}
		return v;
	}

	/* ---------- URL state ---------- */

	function readUrl() {
		const p = new URLSearchParams(location.search);
		state.dataset = p.get('dataset') || '';
		state.type = p.get('type') || '';
		state.query = p.get('query') || '';
		const from = +p.get('from');
		const to = +p.get('to');
		if (from > 0 && to > from) {
			state.range = 'abs';
			state.from = from;
			state.to = to;
		} else {
			state.range = PRESETS[p.get('range')] ? p.get('range') : '1h';
		}
		state.groupBy = p.get('groupBy') || '';
		state.view = VIEWS.includes(p.get('view')) ? p.get('view') : 'flame';
		state.search = p.get('search') || '';
		const f = p.get('focus');
		state.focusPath = f ? f.split(';').filter(Boolean) : [];
		state.fn = p.get('fn') || '';
		state.sf = p.getAll('sf').filter(Boolean);
		state.ff = p.getAll('ff').filter(Boolean);
		state.hide = (p.get('hide') || '').split(',').filter((x) => HIDE_PRESETS.includes(x));
		state.invert = p.get('invert') === '1';
		state.icicle = p.get('flame') !== '1';
		state.color = ['package', 'frametype'].includes(p.get('color')) ? p.get('color') : 'hot';
		state.sort = ['self', 'total', 'name'].includes(p.get('sort')) ? p.get('sort') : 'self';
		state.tableSearch = p.get('tsearch') || '';
		state.lanes = p.get('lanes') || '';
		const c = state.cmp;
		c.aType = p.get('a_type') || '';
		c.bType = p.get('b_type') || '';
		c.aQuery = p.get('a_query') || '';
		c.bQuery = p.get('b_query') || '';
		c.aFrom = +p.get('a_from') || 0;
		c.aTo = +p.get('a_to') || 0;
		c.bFrom = +p.get('b_from') || 0;
		c.bTo = +p.get('b_to') || 0;
		c.mode = p.get('mode') === 'absolute' ? 'absolute' : 'normalized';
	}

	function writeUrl() {
		const p = new URLSearchParams();
		if (state.dataset) p.set('dataset', state.dataset);
		if (state.type) p.set('type', state.type);
		if (state.query) p.set('query', state.query);
		if (state.range === 'abs') {
			p.set('from', String(state.from));
			p.set('to', String(state.to));
		} else {
			p.set('range', state.range);
		}
		if (state.groupBy) p.set('groupBy', state.groupBy);
		p.set('view', state.view);
		if (state.search) p.set('search', state.search);
		if (state.focusPath.length) p.set('focus', state.focusPath.join(';'));
		if (state.fn) p.set('fn', state.fn);
		for (const s of state.sf) p.append('sf', s);
		for (const s of state.ff) p.append('ff', s);
		if (state.hide.length) p.set('hide', state.hide.join(','));
		if (state.invert) p.set('invert', '1');
		if (!state.icicle) p.set('flame', '1');
		if (state.color !== 'hot') p.set('color', state.color);
		if (state.sort !== 'self') p.set('sort', state.sort);
		if (state.tableSearch) p.set('tsearch', state.tableSearch);
		if (state.lanes) p.set('lanes', state.lanes);
		const c = state.cmp;
		if (c.aType) p.set('a_type', c.aType);
		if (c.bType) p.set('b_type', c.bType);
		if (c.aQuery) p.set('a_query', c.aQuery);
		if (c.bQuery) p.set('b_query', c.bQuery);
		if (c.aFrom && c.aTo) {
			p.set('a_from', String(c.aFrom));
			p.set('a_to', String(c.aTo));
		}
		if (c.bFrom && c.bTo) {
			p.set('b_from', String(c.bFrom));
			p.set('b_to', String(c.bTo));
		}
		if (c.mode !== 'normalized') p.set('mode', c.mode);
		const url = `${location.pathname}?${p.toString()}`;
		if (url !== location.pathname + location.search) history.replaceState(null, '', url);
		updateExports();
	}

	/* ---------- API ---------- */

	function timeParams() {
		if (state.range === 'abs') return { from: String(state.from), to: String(state.to) };
		return { from: `now-${state.range}`, to: 'now' };
	}

	/*
	 * The view filters as API parameters. The chips go as repeated
	 * stack_filter / frame_filter parameters, which the server joins so
	 * that each means what it means alone (docs/api.md); joining them here
	 * would let one chip's \Q or group numbers reach into the next.
	 */
	function filterParams() {
		return { stack_filter: state.sf.slice(), frame_filter: state.ff.slice(), hide: state.hide.join(',') };
	}

	/* The selection and the view filters, as API parameters. */
	function selection(extra) {
		return {
			dataset: state.dataset,
			type: state.type,
			query: state.query,
			...timeParams(),
			...filterParams(),
			...(extra || {}),
		};
	}

	/* @params: values, or arrays of values for a repeated parameter; empty ones are left out. */
	function apiUrl(path, params) {
		const url = new URL(path, location.href);
		for (const [k, v] of Object.entries(params)) {
			for (const x of Array.isArray(v) ? v : [v]) {
				if (x !== undefined && x !== null && x !== '') url.searchParams.append(k, x);
			}
		}
		return url;
	}

	async function api(path, params) {
		const url = apiUrl(path, params);
		let res;
		try {
			res = await fetch(url, { headers: { Accept: 'application/json' } });
		} catch (e) {
			throw new Error(`Cannot reach the profd server at ${location.host || 'this address'}. Is it running?`);
		}
		const text = await res.text();
		if (!res.ok) {
			let reason = text.trim();
			try {
				const j = JSON.parse(text);
				reason = j.error || j.message || reason;
			} catch (e) {
				/* not JSON: keep the text */
			}
			if (res.status === 401 || res.status === 403) reason = `${reason} (this dataset needs a token the page does not have)`;
			throw new Error(`The server answered ${res.status}${reason ? ': ' + reason : ''}`);
		}
		try {
			return JSON.parse(text);
		} catch (e) {
			throw new Error('The server answered with something that is not JSON.');
		}
	}

	/* ---------- messages, toast ---------- */

	function showMsg(node, kind, title, detail) {
		node.classList.remove('loading', 'error', 'empty');
		node.classList.add('message', 'visible', kind);
		node.innerHTML = `<strong>${escapeHtml(title)}</strong>${detail ? `<span>${detail}</span>` : ''}`;
	}
	function hideMsg(node) {
		node.classList.remove('visible', 'loading', 'error', 'empty');
		node.innerHTML = '';
	}

	let toastTimer = 0;
	function toast(text) {
		el.toast.textContent = text;
		el.toast.hidden = false;
		clearTimeout(toastTimer);
		toastTimer = setTimeout(() => (el.toast.hidden = true), 2500);
	}

	function emptyWords() {
		const what = state.query ? `matching <code>${escapeHtml(state.query)}</code>` : 'of this type';
		return `Nothing ${what} was recorded in ${escapeHtml(rangeWords())}. Check the label filters, pick another profile type, or widen the time range.`;
	}

	/* ---------- colours ---------- */

	function hash(s) {
		let h = 2166136261;
		for (let i = 0; i < s.length; i++) {
			h ^= s.charCodeAt(i);
			h = Math.imul(h, 16777619);
		}
		return h >>> 0;
	}

	/* Warm palette (Brendan Gregg's "hot"), stable per function name. */
	const hotCache = new Map();
	function hotColor(name) {
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
	function packageOf(name) {
		let n = name.replace(/\s*\(.*$/, '');
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
	const PKG_HUES = [18, 35, 200, 140, 270, 330, 95, 175, 225, 55, 300, 5];
	const pkgCache = new Map();
	function packageColor(name) {
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
	const FT_COLORS = {
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
	const FT_UNKNOWN = 'hsl(0,0%,82%)';
	function frameTypeColor(t) {
		if (!t) return FT_UNKNOWN;
		return FT_COLORS[t] || `hsl(${PKG_HUES[hash(t) % PKG_HUES.length]},55%,60%)`;
	}
	/* Frame type by name, from the last flame graph (the sandwich and flame chart have none). */
	let ftByName = new Map();

	function frameColor(name, node) {
		if (state.color === 'frametype') return frameTypeColor((node && node.frameType) || ftByName.get(name) || '');
		return state.color === 'package' ? packageColor(name) : hotColor(name);
	}

	/* ---------- trees ---------- */

	/* Add parent and depth links; keep the API's order (heaviest first). */
	function prepare(root, frameTypes) {
		const fts = Array.isArray(frameTypes) ? frameTypes : null;
		let count = 0;
		const stack = [[root, null, 0]];
		let maxDepth = 0;
		while (stack.length) {
			const [n, parent, depth] = stack.pop();
			n.parent = parent;
			n.depth = depth;
			if (depth > maxDepth) maxDepth = depth;
			n.self = +n.self || 0;
			n.total = +n.total || 0;
			n.name = n.name == null ? '' : String(n.name);
			n.frameType = fts && Number.isInteger(n.ft) && fts[n.ft] != null ? String(fts[n.ft]) : '';
			n.children = Array.isArray(n.children) ? n.children : [];
			count++;
			for (const c of n.children) stack.push([c, n, depth + 1]);
		}
		root.nodeCount = count;
		root.maxDepth = maxDepth;
		return count;
	}

	function pathOf(node) {
		const p = [];
		for (let n = node; n && n.parent; n = n.parent) p.push(n.name);
		return p.reverse();
	}

	function nodeAtPath(root, names) {
		let n = root;
		for (const name of names) {
			const c = n.children.find((x) => x.name === name);
			if (!c) return null;
			n = c;
		}
		return n;
	}

	/* ---------- a flame graph on a canvas ---------- */

	/*
	 * FlameGraph draws one tree (prepared) on `canvas`, with hover on the
	 * `overlay` canvas laid over it. opts:
	 *   flipped()       true: root at the bottom
	 *   fill(node)      colour of a frame (default: frameColor / search)
	 *   tooltip(node)   HTML rows for the tooltip
	 *   onZoom(node)    called after a click zoomed (node or null)
	 *   rootLabel(root) text of the root frame
	 * model: {state, unit, total, nodes, request} is what tests read.
	 */
	class FlameGraph {
		constructor(canvas, overlay, opts) {
			this.canvas = canvas;
			this.overlay = overlay;
			this.opts = opts;
			this.root = null;
			this.unit = '';
			this.focus = null;
			this.hover = null;
			this.rects = [];
			this.rows = [];
			this.model = { state: 'idle', unit: '', total: 0, request: null, nodes: [], renderMs: 0 };
			canvas.addEventListener('mousemove', (ev) => this.onMove(ev));
			canvas.addEventListener('mouseleave', () => this.onLeave());
			canvas.addEventListener('click', (ev) => {
				const r = this.rectAt(ev);
				if (r) this.zoom(r.node, true);
			});
		}

		setState(s) {
			this.model.state = s;
			this.canvas.dataset.state = s;
		}

		setData(root, unit) {
			this.root = root;
			this.unit = unit || '';
			this.focus = null;
			this.hover = null;
			this.model.unit = this.unit;
			this.model.total = root ? root.total : 0;
		}

		clear() {
			this.root = null;
			this.rects = [];
			this.model.nodes = [];
			this.canvas.style.height = '0px';
			this.canvas.height = 0;
			this.overlay.style.height = '0px';
			this.overlay.height = 0;
			hideTooltip();
		}

		zoom(node, fromClick) {
			this.focus = node && node.parent ? node : null;
			this.hover = null;
			hideTooltip();
			this.render();
			if (this.opts.onZoom) this.opts.onZoom(this.focus, fromClick);
		}

		layout(width) {
			const focus = this.focus || this.root;
			const rects = [];
			const chain = [];
			for (let n = focus; n; n = n.parent) chain.push(n);
			chain.reverse();
			chain.forEach((n) => rects.push({ node: n, x: 0, depth: n.depth, w: width, ancestor: n !== focus }));
			const scale = focus.total > 0 ? width / focus.total : 0;
			const stack = [[focus, 0]];
			let maxDepth = chain.length - 1;
			while (stack.length) {
				const [n, x] = stack.pop();
				let cx = x;
				for (const c of n.children) {
					const w = c.total * scale;
					if (w >= MIN_W) {
						rects.push({ node: c, x: cx, depth: c.depth, w, ancestor: false });
						if (c.depth > maxDepth) maxDepth = c.depth;
						stack.push([c, cx]);
					}
					cx += w;
				}
			}
			const flipped = this.opts.flipped && this.opts.flipped();
			for (const r of rects) r.y = (flipped ? maxDepth - r.depth : r.depth) * ROW_H;
			return { rects, height: (maxDepth + 1) * ROW_H, maxDepth, flipped };
		}

		render() {
			if (!this.root) return;
			const t0 = performance.now();
			const wrap = this.canvas.parentElement;
			const cs = getComputedStyle(wrap);
			const width = Math.max(100, Math.floor(wrap.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight)));
			const { rects, height } = this.layout(width);
			const dpr = window.devicePixelRatio || 1;
			for (const c of [this.canvas, this.overlay]) {
				c.width = Math.round(width * dpr);
				c.height = Math.round(height * dpr);
				c.style.width = `${width}px`;
				c.style.height = `${height}px`;
			}
			const ctx = this.canvas.getContext('2d');
			ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
			ctx.clearRect(0, 0, width, height);
			ctx.font = FONT;
			ctx.textBaseline = 'middle';
			const charW = ctx.measureText('MMMMMMMMMM').width / 10;
			const text = cssVar('--frame-text') || '#1b1f27';
			const rootFill = cssVar('--frame-root') || '#c8ccd3';
			const rootText = cssVar('--frame-root-text') || '#1b1f27';
			const dimText = cssVar('--frame-dim-text') || '#8a929e';
			const h = ROW_H - 1;
			for (const r of rects) {
				const n = r.node;
				const w = Math.max(r.w - (r.w > 2 ? 1 : 0), 0.5);
				const f = n === this.root ? (this.opts.rootFill ? this.opts.rootFill() : { fill: rootFill, text: rootText }) : this.opts.fill(n);
				ctx.globalAlpha = r.ancestor ? 0.55 : 1;
				r.fill = f.fill;
				ctx.fillStyle = f.fill;
				ctx.fillRect(r.x, r.y, w, h);
				if (f.outline) {
					ctx.strokeStyle = f.outline;
					ctx.lineWidth = 2;
					ctx.strokeRect(r.x + 1, r.y + 1, Math.max(w - 2, 1), h - 2);
				}
				if (r.w - TEXT_PAD * 2 >= charW * 2) {
					const maxChars = Math.floor((r.w - TEXT_PAD * 2) / charW);
					let label = n === this.root ? this.opts.rootLabel(n) : n.name;
					if (label.length > maxChars) label = maxChars > 1 ? label.slice(0, maxChars - 1) + '…' : '';
					if (label) {
						ctx.fillStyle = f.dim ? dimText : f.text || text;
						ctx.fillText(label, r.x + TEXT_PAD, r.y + h / 2 + 0.5);
					}
				}
			}
			ctx.globalAlpha = 1;
			this.rects = rects;
			/* rows[y / ROW_H] = rects of that row, by x, for hit tests */
			const rows = [];
			for (const r of rects) (rows[r.y / ROW_H] || (rows[r.y / ROW_H] = [])).push(r);
			for (const row of rows) if (row) row.sort((a, b) => a.x - b.x);
			this.rows = rows;
			this.model.nodes = rects.map((r) => ({
				name: r.node.name,
				x: r.x,
				y: r.y,
				w: r.w,
				h,
				self: r.node.self,
				total: r.node.total,
				depth: r.node.depth,
				fill: r.fill,
				...(this.opts.extra ? this.opts.extra(r.node) : {}),
			}));
			this.drawHover();
			this.model.renderMs = performance.now() - t0;
		}

		drawHover() {
			const ctx = this.overlay.getContext('2d');
			const dpr = window.devicePixelRatio || 1;
			ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
			ctx.clearRect(0, 0, this.overlay.width, this.overlay.height);
			if (!this.hover) return;
			const r = this.rects.find((x) => x.node === this.hover);
			if (!r) return;
			ctx.strokeStyle = cssVar('--frame-hover') || '#1b1f27';
			ctx.lineWidth = 1.5;
			ctx.strokeRect(r.x + 0.75, r.y + 0.75, Math.max(r.w - 2.5, 1), ROW_H - 2.5);
		}

		rectAt(ev) {
			const b = this.canvas.getBoundingClientRect();
			const x = ev.clientX - b.left;
			const row = this.rows[Math.floor((ev.clientY - b.top) / ROW_H)];
			if (!row) return null;
			/* binary search for the last rect starting at or before x */
			let lo = 0;
			let hi = row.length - 1;
			let best = -1;
			while (lo <= hi) {
				const mid = (lo + hi) >> 1;
				if (row[mid].x <= x) {
					best = mid;
					lo = mid + 1;
				} else {
					hi = mid - 1;
				}
			}
			for (let i = best; i >= 0 && i > best - 3; i--) {
				const r = row[i];
				if (x >= r.x && x < r.x + Math.max(r.w, 1)) return r;
			}
			return null;
		}

		onMove(ev) {
			if (!this.root) return;
			const t0 = performance.now();
			const r = this.rectAt(ev);
			const node = r ? r.node : null;
			if (node !== this.hover) {
				this.hover = node;
				this.drawHover();
			}
			if (r) showTooltip(this.opts.tooltip(r.node, r, this), ev);
			else hideTooltip();
			timings.hoverMs.push(performance.now() - t0);
			if (timings.hoverMs.length > 1000) timings.hoverMs.shift();
		}

		onLeave() {
			hideTooltip();
			if (this.hover) {
				this.hover = null;
				this.drawHover();
			}
		}
	}

	/* ---------- tooltip ---------- */

	function showTooltip(html, ev) {
		el.tooltip.innerHTML = html;
		el.tooltip.hidden = false;
		const pad = 14;
		const tw = el.tooltip.offsetWidth;
		const th = el.tooltip.offsetHeight;
		let x = ev.clientX + pad;
		let y = ev.clientY + pad;
		if (x + tw > window.innerWidth - 4) x = Math.max(4, ev.clientX - tw - pad);
		if (y + th > window.innerHeight - 4) y = Math.max(4, ev.clientY - th - pad);
		el.tooltip.style.left = `${x}px`;
		el.tooltip.style.top = `${y}px`;
	}

	function hideTooltip() {
		el.tooltip.hidden = true;
	}

	function valueTooltip(name, n, total, unit, focus) {
		let rows = `<tr><td class="k">Self</td><td class="v">${escapeHtml(fmtValue(n.self, unit))}</td><td class="p">${fmtPct(n.self, total)}</td></tr>`;
		rows += `<tr><td class="k">Total</td><td class="v">${escapeHtml(fmtValue(n.total, unit))}</td><td class="p">${fmtPct(n.total, total)}</td></tr>`;
		if (focus && n !== focus && focus.total && n.depth > focus.depth)
			rows += `<tr><td class="k">Of zoomed</td><td class="v"></td><td class="p">${fmtPct(n.total, focus.total)}</td></tr>`;
		return `<div class="tt-name">${escapeHtml(name)}</div><table>${rows}</table>`;
	}

	/* ---------- the main flame graph ---------- */

	function matches(node) {
		return state.search && node.name.toLowerCase().includes(state.search.toLowerCase());
	}

	function searchFill(n) {
		if (state.fn && n.name === state.fn) return { fill: frameColor(n.name, n), outline: cssVar('--selected') || '#2f6fde' };
		if (!state.search) return { fill: frameColor(n.name, n) };
		if (matches(n)) return { fill: cssVar('--match') || '#d94fbf' };
		return { fill: cssVar('--frame-dim') || '#e4e6ea', dim: true };
	}

	const flame = new FlameGraph(el.canvas, el.overlay, {
		flipped: () => !state.icicle,
		fill: searchFill,
		rootLabel: (n) => `total · ${fmtValue(n.total, flame.unit)}`,
		tooltip: (n) => valueTooltip(n.parent ? n.name : 'total (all samples)', n, flame.root.total, flame.unit, flame.focus),
		extra: (n) => ({ match: !!matches(n), selected: !!state.fn && n.name === state.fn }),
		onZoom: (focus) => {
			state.focusPath = focus ? pathOf(focus) : [];
			writeUrl();
			renderBreadcrumb();
			el.reset.disabled = !focus;
		},
	});
	window.profdFlame = flame.model;
	pub.views.flame = flame.model;

	/* The legend of colour-by-frame-type: the types of the flame graph, with their colours. */
	function renderFtLegend() {
		const lg = el.ftLegend;
		const d = flame.data;
		if (state.color !== 'frametype' || !d || !d.root) {
			lg.hidden = true;
			flame.model.frameTypes = null;
			return;
		}
		const count = new Map();
		const stack = [d.root];
		while (stack.length) {
			const n = stack.pop();
			if (n.parent) count.set(n.frameType, (count.get(n.frameType) || 0) + 1);
			for (const c of n.children) stack.push(c);
		}
		const types = [...count.keys()].sort((a, b) => (a === '') - (b === '') || count.get(b) - count.get(a) || a.localeCompare(b));
		flame.model.frameTypes = types.map((t) => ({ type: t || 'unknown', color: frameTypeColor(t), frames: count.get(t) }));
		lg.innerHTML =
			(Array.isArray(d.frame_types) && d.frame_types.length ? '' : '<span class="ft-none">This profile carries no frame types.</span> ') +
			types
				.map((t) => `<span class="ft-item" data-type="${escapeHtml(t || 'unknown')}"><span class="sw" style="background:${frameTypeColor(t)}"></span>${escapeHtml(t || 'unknown')}</span>`)
				.join('');
		lg.hidden = false;
	}

	function renderFlame() {
		renderFtLegend();
		flame.render();
		timings.flameRenderMs.push(flame.model.renderMs);
		renderBreadcrumb();
		renderSearch();
		el.reset.disabled = !flame.focus;
	}

	async function loadFlame(seq) {
		const request = selection({ invert: state.invert ? 'true' : '', max_nodes: MAX_NODES });
		flame.model.request = request;
		flame.setState('loading');
		el.summary.textContent = 'Loading…';
		if (!flame.root) showMsg(el.message, 'loading', 'Loading the flame graph…', '');
		let data;
		const t0 = performance.now();
		try {
			data = await api('api/v1/flamegraph', request);
		} catch (e) {
			if (seq !== state.seq) return;
			flame.clear();
			el.breadcrumb.innerHTML = '';
			el.summary.textContent = '';
			flame.setState('error');
			showMsg(el.message, 'error', 'Could not load the flame graph', escapeHtml(e.message));
			return;
		}
		if (seq !== state.seq) return;
		if (!data || !data.root) data = { unit: '', total: 0, root: { name: 'total', self: 0, total: 0, children: [] } };
		const t1 = performance.now();
		prepare(data.root, data.frame_types);
		const t2 = performance.now();
		ftByName = new Map();
		if (Array.isArray(data.frame_types)) {
			const st = [data.root];
			while (st.length) {
				const n = st.pop();
				if (n.frameType && !ftByName.has(n.name)) ftByName.set(n.name, n.frameType);
				for (const c of n.children) st.push(c);
			}
		}
		data.total = +data.total || data.root.total;
		flame.setData(data.root, data.unit);
		flame.data = data;
		flame.model.total = data.total;
		if (!data.total || !data.root.children.length) {
			flame.clear();
			el.breadcrumb.innerHTML = '';
			el.summary.textContent = '';
			flame.setState('empty');
			const filtered = data.filtered_samples ? ` The view filters removed ${fmtCount(data.filtered_samples)} samples.` : '';
			showMsg(el.message, 'empty', `No samples in ${rangeWords()}`, emptyWords() + escapeHtml(filtered));
			return;
		}
		flame.focus = (state.focusPath.length && nodeAtPath(data.root, state.focusPath)) || null;
		if (!flame.focus) state.focusPath = [];
		hideMsg(el.message);
		renderFlame();
		renderFlameSummary();
		timings.lastFlame = { nodes: data.root.nodeCount, fetchMs: t1 - t0, prepareMs: t2 - t1, renderMs: flame.model.renderMs, drawn: flame.model.nodes.length };
		flame.setState('ready');
	}

	function renderFlameSummary() {
		const d = flame.data;
		if (!d) return;
		const t = parseType(state.type);
		const parts = [`${fmtValue(d.total, d.unit)} ${t.sampleType || 'total'}`, `${fmtCount(d.samples || 0)} samples`, `${fmtCount(d.root.nodeCount - 1)} frames`];
		if (d.truncated && d.truncated.nodes) parts.push(`${fmtCount(d.truncated.nodes)} small frames merged into "other"`);
		if (d.filtered_samples) parts.push(`${fmtCount(d.filtered_samples)} samples filtered out`);
		if (d.unsymbolized) parts.push(`${fmtCount(d.unsymbolized)} unsymbolized`);
		el.summary.textContent = parts.join(' · ');
	}

	function renderBreadcrumb() {
		const bc = el.breadcrumb;
		bc.innerHTML = '';
		if (!flame.root || !flame.root.total) return;
		const chain = [];
		for (let n = flame.focus || flame.root; n; n = n.parent) chain.push(n);
		chain.reverse();
		chain.forEach((n, i) => {
			if (i > 0) {
				const s = document.createElement('span');
				s.className = 'sep';
				s.textContent = '›';
				bc.appendChild(s);
			}
			const label = n === flame.root ? 'total' : n.name;
			if (i === chain.length - 1) {
				const c = document.createElement('span');
				c.className = 'current';
				c.textContent = label;
				c.title = `${label} — ${fmtValue(n.total, flame.unit)} (${fmtPct(n.total, flame.root.total)})`;
				bc.appendChild(c);
			} else {
				const b = document.createElement('button');
				b.type = 'button';
				b.textContent = label;
				b.title = `Zoom out to ${label}`;
				b.addEventListener('click', () => flame.zoom(n === flame.root ? null : n));
				bc.appendChild(b);
			}
		});
	}

	/* Names matching the search, and the share of samples through a match (nested matches counted once). */
	function searchStats() {
		const root = flame.root;
		const names = new Set();
		let sum = 0;
		const stack = [[root, false]];
		while (stack.length) {
			const [node, under] = stack.pop();
			const m = node !== root && matches(node);
			if (m) names.add(node.name);
			if (m && !under) sum += node.total;
			for (const c of node.children) stack.push([c, under || m]);
		}
		return { names, sum };
	}

	function renderSearch() {
		if (!state.search || !flame.root) {
			el.searchResult.textContent = '';
			return;
		}
		const { names, sum } = searchStats();
		el.searchResult.textContent = names.size
			? `${fmtCount(names.size)} function${names.size > 1 ? 's' : ''} · ${fmtPct(sum, flame.root.total)} of total (${fmtValue(sum, flame.unit)})`
			: 'no matches';
		el.searchResult.dataset.share = String(flame.root.total ? sum / flame.root.total : 0);
		el.searchResult.dataset.matches = String(names.size);
	}

	/* ---------- table ---------- */

	const table = { state: 'idle', rows: [], unit: '', total: 0, key: '' };
	pub.views.table = table;

	async function loadTable(seq) {
		table.state = 'loading';
		showMsg(el.tableMsg, 'loading', 'Loading the table…', '');
		let data;
		try {
			data = await api('api/v1/table', selection({ sort: 'self' }));
		} catch (e) {
			if (seq !== state.seq) return;
			table.state = 'error';
			table.rows = [];
			el.topTable.tBodies[0].innerHTML = '';
			showMsg(el.tableMsg, 'error', 'Could not load the table', escapeHtml(e.message));
			return;
		}
		if (seq !== state.seq) return;
		table.rows = data.rows || [];
		table.unit = data.unit || '';
		table.total = +data.total || 0;
		table.samples = data.samples || 0;
		el.fnList.innerHTML = table.rows.slice(0, 2000).map((r) => `<option value="${escapeHtml(r.name)}">`).join('');
		if (!table.rows.length) {
			table.state = 'empty';
			el.topTable.tBodies[0].innerHTML = '';
			el.tableSummary.textContent = '';
			showMsg(el.tableMsg, 'empty', `No samples in ${rangeWords()}`, emptyWords());
			return;
		}
		hideMsg(el.tableMsg);
		renderTable();
		table.state = 'ready';
	}

	function barCell(v, whole) {
		const pct = whole ? Math.max(0, Math.min(100, (100 * v) / whole)) : 0;
		return `<td class="col-bar"><div class="bar"><span class="bar-pct">${fmtPct(v, whole)}</span><span class="bar-track"><span class="bar-fill" style="width:${pct.toFixed(2)}%"></span></span></div></td>`;
	}

	function renderTable() {
		const key = state.sort;
		const q = state.tableSearch.toLowerCase();
		let rows = q ? table.rows.filter((r) => r.name.toLowerCase().includes(q)) : table.rows.slice();
		rows.sort(key === 'name' ? (a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) : (a, b) => b[key] - a[key] || (a.name < b.name ? -1 : 1));
		const shown = rows.slice(0, TABLE_ROWS);
		table.shown = shown.map((r) => r.name);
		const what = `${fmtCount(rows.length)}${q ? ` of ${fmtCount(table.rows.length)}` : ''} functions`;
		el.tableSummary.textContent = `${rows.length > TABLE_ROWS ? `first ${TABLE_ROWS} of ` : ''}${what} · total ${fmtValue(table.total, table.unit)} · sorted by ${key}`;
		for (const th of el.topTable.querySelectorAll('th.sortable'))
			th.setAttribute('aria-sort', th.dataset.sort === key ? (key === 'name' ? 'ascending' : 'descending') : 'none');
		el.topTable.tBodies[0].innerHTML = shown
			.map((r) => `<tr data-name="${escapeHtml(r.name)}" data-self="${r.self}" data-total="${r.total}"${state.fn === r.name ? ' class="selected"' : ''}>` +
				`<td class="col-fn" title="${escapeHtml(r.name)}">${escapeHtml(r.name)}</td>` +
				`<td class="col-num">${escapeHtml(fmtValue(r.self, table.unit))}</td>${barCell(r.self, table.total)}` +
				`<td class="col-num">${escapeHtml(fmtValue(r.total, table.unit))}</td>${barCell(r.total, table.total)}</tr>`)
			.join('');
		if (!shown.length) showMsg(el.tableMsg, 'empty', 'No function matches the filter', `Nothing contains <code>${escapeHtml(state.tableSearch)}</code>.`);
		else hideMsg(el.tableMsg);
	}

	/* ---------- sandwich ---------- */

	const swOpts = (getView, flipped) => ({
		flipped: () => flipped,
		fill: (n) => ({ fill: frameColor(n.name, n) }),
		rootFill: () => ({ fill: cssVar('--selected-fill') || '#9ec1f7', text: cssVar('--frame-text') || '#1b1f27' }),
		rootLabel: (n) => `${n.name} · ${fmtValue(n.total, sandwich.unit)}`,
		tooltip: (n) => valueTooltip(n.name, n, sandwich.profileTotal, sandwich.unit, getView().focus),
	});
	const swCallers = new FlameGraph($('sw-callers'), $('sw-callers-wrap').querySelector('.overlay'), swOpts(() => swCallers, true));
	const swCallees = new FlameGraph($('sw-callees'), $('sw-callees-wrap').querySelector('.overlay'), swOpts(() => swCallees, false));
	const sandwich = { state: 'idle', fn: '', callers: swCallers.model, callees: swCallees.model, unit: '', profileTotal: 0 };
	pub.views.sandwich = sandwich;

	async function loadSandwich(seq) {
		el.swFn.value = state.fn;
		if (!state.fn) {
			swCallers.clear();
			swCallees.clear();
			sandwich.state = 'empty';
			el.swSummary.textContent = '';
			showMsg(el.swMsg, 'empty', 'Pick a function', 'Type a function name above, click a row of the table, or press <kbd>Enter</kbd> in the flame graph search.');
			return;
		}
		sandwich.state = 'loading';
		showMsg(el.swMsg, 'loading', `Loading callers and callees of ${state.fn}…`, '');
		let data;
		try {
			data = await api('api/v1/sandwich', selection({ function: state.fn, max_nodes: 4096 }));
		} catch (e) {
			if (seq !== state.seq) return;
			swCallers.clear();
			swCallees.clear();
			sandwich.state = 'error';
			showMsg(el.swMsg, 'error', 'Could not load the sandwich', escapeHtml(e.message));
			return;
		}
		if (seq !== state.seq) return;
		sandwich.fn = state.fn;
		sandwich.unit = data.unit || '';
		sandwich.profileTotal = +data.profile_total || 0;
		sandwich.total = +data.total || 0;
		sandwich.self = +data.self || 0;
		if (!data.found) {
			swCallers.clear();
			swCallees.clear();
			sandwich.state = 'empty';
			el.swSummary.textContent = '';
			showMsg(el.swMsg, 'empty', `${state.fn} is not in this selection`, `No sample in ${escapeHtml(rangeWords())} has a frame named exactly <code>${escapeHtml(state.fn)}</code>.`);
			return;
		}
		hideMsg(el.swMsg);
		for (const [view, side] of [[swCallers, data.callers], [swCallees, data.callees]]) {
			prepare(side.root);
			view.setData(side.root, data.unit);
			view.render();
		}
		sandwich.callerNames = data.callers.root.children.map((c) => c.name);
		sandwich.calleeNames = data.callees.root.children.map((c) => c.name);
		$('sw-callers-note').textContent = sandwich.callerNames.length ? '(who calls it; the function at the bottom)' : '(none: it is a root of its stacks)';
		$('sw-callees-note').textContent = sandwich.calleeNames.length ? '(what it calls; the function at the top)' : '(none: all of its time is self time)';
		el.swSummary.innerHTML = `<strong>${escapeHtml(state.fn)}</strong> · self ${escapeHtml(fmtValue(sandwich.self, sandwich.unit))} (${fmtPct(sandwich.self, sandwich.profileTotal)}) · total ${escapeHtml(fmtValue(sandwich.total, sandwich.unit))} (${fmtPct(sandwich.total, sandwich.profileTotal)})`;
		sandwich.state = 'ready';
	}

	function selectFunction(name, openSandwich) {
		state.fn = name;
		if (openSandwich) setView('sandwich');
		else writeUrl();
		if (flame.root) renderFlame();
		if (table.rows.length) renderTable();
	}

	/* ---------- flame chart ---------- */

	const fc = { state: 'idle', data: null, lanes: [], view: null, rendered: 0, renderMs: 0, rects: [] };
	pub.views.flamechart = fc;
	const FC_HEAD = 22;
	const FC_AXIS = 22;
	const NICE_NS = [1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6, 5e6, 1e7, 2e7, 5e7, 1e8, 2e8, 5e8, 1e9, 2e9, 5e9, 1e10, 15e9, 3e10, 6e10, 12e10, 3e11, 6e11, 9e11, 18e11, 36e11, 72e11, 144e11, 216e11, 432e11, 864e11];

	/* Ticks along the top: wall-clock times (UTC offset of the browser), about one per 130 px, with grid lines. */
	function drawTimeAxis(ctx, width, height, v0, v1, fromMs) {
		const span = v1 - v0;
		const step = NICE_NS.find((s) => (span / s) * 130 <= width) || NICE_NS[NICE_NS.length - 1];
		const abs0 = fromMs * 1e6 + v0;
		const first = Math.ceil(abs0 / step) * step;
		ctx.save();
		ctx.font = `11px ${cssVar('--font') || 'sans-serif'}`;
		ctx.textBaseline = 'middle';
		for (let t = first; t <= fromMs * 1e6 + v1; t += step) {
			const x = ((t - abs0) / span) * width;
			ctx.fillStyle = cssVar('--grid') || '#eceef1';
			ctx.fillRect(Math.round(x), FC_AXIS - 4, 1, height - FC_AXIS + 4);
			const ms = t / 1e6;
			const d = new Date(ms);
			const p2 = (n) => String(n).padStart(2, '0');
			let label = `${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())}`;
			if (step < 1e9) label += `.${String(Math.round(ms % 1000)).padStart(3, '0')}`;
			ctx.fillStyle = cssVar('--muted') || '#5f6b7a';
			const tw = ctx.measureText(label).width;
			if (x - tw / 2 > 0 && x + tw / 2 < width) ctx.fillText(label, x - tw / 2, FC_AXIS / 2 - 1);
		}
		ctx.restore();
	}
	const FC_MAX_ROWS = 24;

	async function loadFlamechart(seq) {
		const lanes = state.lanes || state.groupBy || 'process.executable.name';
		fc.state = 'loading';
		showMsg(el.fcMsg, 'loading', 'Loading the flame chart…', '');
		let data;
		try {
			data = await api('api/v1/flamechart', selection({ group_by: lanes, max_spans: 200000 }));
		} catch (e) {
			if (seq !== state.seq) return;
			fc.state = 'error';
			fc.data = null;
			clearCanvas(el.fcCanvas);
			showMsg(el.fcMsg, 'error', 'Could not load the flame chart', escapeHtml(e.message));
			return;
		}
		if (seq !== state.seq) return;
		fc.data = data;
		fc.lanes = data.lanes || [];
		let end = 0;
		for (const l of fc.lanes) for (const s of l.spans) end = Math.max(end, s[0] + s[1]);
		let start = end;
		for (const l of fc.lanes) for (const s of l.spans) start = Math.min(start, s[0]);
		fc.extent = [start, Math.max(end, start + 1)];
		fc.view = fc.extent.slice();
		if (!fc.lanes.length) {
			fc.state = 'empty';
			clearCanvas(el.fcCanvas);
			el.fcSummary.textContent = '';
			showMsg(el.fcMsg, 'empty', `No samples in ${rangeWords()}`, emptyWords());
			return;
		}
		hideMsg(el.fcMsg);
		const trunc = data.truncated_spans ? ` · ${fmtCount(data.truncated_spans)} spans left out (narrow the range)` : '';
		el.fcSummary.textContent = `${fmtCount(fc.lanes.length)} rows by ${lanes} · ${fmtCount(data.samples || 0)} samples · ${fmtCount(data.spans_total || 0)} spans · sampling every ${fmtDuration(data.interval_ns || 0)}${trunc}`;
		renderFlamechart();
		fc.state = 'ready';
	}

	function clearCanvas(c) {
		c.height = 0;
		c.style.height = '0px';
	}

	function laneLabel(labels) {
		const e = Object.entries(labels || {});
		return e.length ? e.map(([k, v]) => (v === '' ? `(no ${k})` : `${k}=${v}`)).join(', ') : '(no label)';
	}

	function renderFlamechart() {
		const d = fc.data;
		if (!d) return;
		const t0 = performance.now();
		const cs = getComputedStyle(el.fcWrap);
		const width = Math.max(200, Math.floor(el.fcWrap.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight)));
		const lanes = fc.lanes.map((l) => {
			let depth = 0;
			for (const s of l.spans) depth = Math.max(depth, d.stacks[s[2]].length);
			return { lane: l, rows: Math.min(depth, FC_MAX_ROWS) };
		});
		let height = FC_AXIS;
		for (const l of lanes) height += FC_HEAD + l.rows * ROW_H + 8;
		const dpr = window.devicePixelRatio || 1;
		const c = el.fcCanvas;
		c.width = Math.round(width * dpr);
		c.height = Math.round(height * dpr);
		c.style.width = `${width}px`;
		c.style.height = `${height}px`;
		const ctx = c.getContext('2d');
		ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
		ctx.clearRect(0, 0, width, height);
		ctx.font = FONT;
		ctx.textBaseline = 'middle';
		const charW = ctx.measureText('MMMMMMMMMM').width / 10;
		const [v0, v1] = fc.view;
		const scale = width / (v1 - v0);
		const rects = [];
		drawTimeAxis(ctx, width, height, v0, v1, d.from_ms);
		let y = FC_AXIS;
		const headText = cssVar('--muted') || '#5f6b7a';
		const headLine = cssVar('--border') || '#dcdfe4';
		for (const { lane, rows } of lanes) {
			ctx.fillStyle = headText;
			ctx.font = `600 12px ${cssVar('--font') || 'sans-serif'}`;
			ctx.fillText(`${laneLabel(lane.labels)} · ${fmtValue(lane.total, d.unit)}`, 4, y + FC_HEAD / 2);
			ctx.font = FONT;
			ctx.fillStyle = headLine;
			ctx.fillRect(0, y + FC_HEAD - 2, width, 1);
			const top = y + FC_HEAD;
			/* per depth, merge neighbouring spans with the same frames down to that depth */
			for (let depth = 0; depth < rows; depth++) {
				let run = null;
				const flush = () => {
					if (!run) return;
					const x = (run.s - v0) * scale;
					const w = Math.max((run.e - v0) * scale - x, 1);
					if (x + w >= 0 && x <= width) {
						const name = d.names[run.stack[depth]];
						ctx.fillStyle = frameColor(name);
						ctx.fillRect(x, top + depth * ROW_H, Math.max(w - (w > 2 ? 1 : 0), 1), ROW_H - 1);
						if (w - TEXT_PAD * 2 >= charW * 2) {
							const maxChars = Math.floor((w - TEXT_PAD * 2) / charW);
							let label = name.length > maxChars ? name.slice(0, maxChars - 1) + '…' : name;
							ctx.fillStyle = cssVar('--frame-text') || '#1b1f27';
							ctx.fillText(label, Math.max(x, 0) + TEXT_PAD, top + depth * ROW_H + ROW_H / 2);
						}
						rects.push({ x, y: top + depth * ROW_H, w, name, lane, depth, s: run.s, e: run.e, value: run.value, samples: run.samples });
					}
					run = null;
				};
				for (const s of lane.spans) {
					const stack = d.stacks[s[2]];
					if (stack.length <= depth) {
						flush();
						continue;
					}
					let same = run && s[0] <= run.e + 1 / scale && run.stack.length > depth;
					if (same && stack !== run.stack) {
						for (let i = 0; i <= depth; i++) {
							if (stack[i] !== run.stack[i]) {
								same = false;
								break;
							}
						}
					}
					if (same) {
						run.e = Math.max(run.e, s[0] + s[1]);
						run.value += s[3];
						run.samples += s[4];
					} else {
						flush();
						run = { s: s[0], e: s[0] + s[1], stack, value: s[3], samples: s[4] };
					}
				}
				flush();
			}
			y += FC_HEAD + rows * ROW_H + 8;
		}
		fc.rects = rects;
		fc.rendered = rects.length;
		fc.renderMs = performance.now() - t0;
		el.fcReset.disabled = v0 === fc.extent[0] && v1 === fc.extent[1];
	}

	function fcTimeAt(clientX) {
		const b = el.fcCanvas.getBoundingClientRect();
		const [v0, v1] = fc.view;
		return v0 + ((clientX - b.left) / b.width) * (v1 - v0);
	}

	function fcSetView(a, b) {
		const [e0, e1] = fc.extent;
		const minW = Math.max(1e3, (fc.data && fc.data.interval_ns) || 1e3);
		if (b - a < minW) {
			const m = (a + b) / 2;
			a = m - minW / 2;
			b = m + minW / 2;
		}
		fc.view = [Math.max(e0, a), Math.min(e1, b)];
		renderFlamechart();
	}

	let fcDrag = null;
	el.fcCanvas.addEventListener('mousedown', (ev) => {
		if (!fc.data) return;
		fcDrag = { x: ev.clientX, t: fcTimeAt(ev.clientX) };
	});
	window.addEventListener('mouseup', (ev) => {
		if (!fcDrag) return;
		const d = fcDrag;
		fcDrag = null;
		el.fcWrap.querySelectorAll('.fc-sel').forEach((n) => n.remove());
		if (Math.abs(ev.clientX - d.x) > 4) {
			const t = fcTimeAt(ev.clientX);
			fcSetView(Math.min(d.t, t), Math.max(d.t, t));
		}
	});
	el.fcCanvas.addEventListener('mousemove', (ev) => {
		if (!fc.data) return;
		const b = el.fcCanvas.getBoundingClientRect();
		if (fcDrag) {
			let sel = el.fcWrap.querySelector('.fc-sel');
			if (!sel) {
				sel = document.createElement('div');
				sel.className = 'fc-sel';
				el.fcWrap.appendChild(sel);
			}
			const x0 = Math.min(fcDrag.x, ev.clientX) - b.left;
			sel.style.left = `${x0 + el.fcCanvas.offsetLeft}px`;
			sel.style.width = `${Math.abs(ev.clientX - fcDrag.x)}px`;
			sel.style.top = `${el.fcCanvas.offsetTop}px`;
			sel.style.height = `${b.height}px`;
			return;
		}
		const x = ev.clientX - b.left;
		const y = ev.clientY - b.top;
		const r = fc.rects.find((q) => x >= q.x && x < q.x + q.w && y >= q.y && y < q.y + ROW_H);
		if (!r) return hideTooltip();
		const start = fc.data.from_ms * 1e6 + r.s;
		showTooltip(`<div class="tt-name">${escapeHtml(r.name)}</div><table>` +
			`<tr><td class="k">When</td><td class="v" colspan="2">${escapeHtml(fmtTime(start / 1e6))}</td></tr>` +
			`<tr><td class="k">Span</td><td class="v" colspan="2">${escapeHtml(fmtDuration(r.e - r.s))}</td></tr>` +
			`<tr><td class="k">Value</td><td class="v">${escapeHtml(fmtValue(r.value, fc.data.unit))}</td><td class="p">${fmtCount(r.samples)} samples</td></tr>` +
			`<tr><td class="k">Row</td><td class="v" colspan="2">${escapeHtml(laneLabel(r.lane.labels))}</td></tr></table>`, ev);
	});
	el.fcCanvas.addEventListener('mouseleave', hideTooltip);
	el.fcCanvas.addEventListener('wheel', (ev) => {
		if (!fc.data) return;
		ev.preventDefault();
		const t = fcTimeAt(ev.clientX);
		const [v0, v1] = fc.view;
		const k = ev.deltaY > 0 ? 1.25 : 0.8;
		fcSetView(t - (t - v0) * k, t + (v1 - t) * k);
	}, { passive: false });
	el.fcReset.addEventListener('click', () => {
		if (fc.extent) fcSetView(fc.extent[0], fc.extent[1]);
	});

	/* ---------- compare ---------- */

	function diffFill(n) {
		const dark = document.documentElement.dataset.theme === 'dark';
		const strong = dark || n.intensity > 0.6 ? '#ffffff' : undefined;
		if (n.diffClass === 'more') return { fill: mix(cssVar('--diff-same'), cssVar('--diff-more'), n.intensity), text: strong };
		if (n.diffClass === 'less') return { fill: mix(cssVar('--diff-same'), cssVar('--diff-less'), n.intensity), text: strong };
		return { fill: cssVar('--diff-same') || '#d5d8dd', text: dark ? '#e3e7ed' : undefined };
	}

	function parseColor(c) {
		const m = /^#([0-9a-f]{6})$/i.exec(c || '');
		if (!m) return [200, 200, 200];
		const v = parseInt(m[1], 16);
		return [v >> 16, (v >> 8) & 255, v & 255];
	}
	function mix(a, b, t) {
		const x = parseColor(a);
		const y = parseColor(b);
		const k = 0.35 + 0.65 * Math.max(0, Math.min(1, t));
		return `rgb(${x.map((v, i) => Math.round(v + (y[i] - v) * k)).join(',')})`;
	}

	const diffView = new FlameGraph($('diffgraph'), $('diff-wrap').querySelector('.overlay'), {
		flipped: () => !state.icicle,
		fill: diffFill,
		rootLabel: () => 'total',
		tooltip: (n) => diffTooltip(n),
		extra: (n) => ({ diffClass: n.diffClass, delta: n.delta, noise: n.noise, status: n.status }),
	});
	const compare = { state: 'idle', graph: diffView.model, mode: 'normalized', charts: {} };
	pub.views.compare = compare;

	function diffTooltip(n) {
		const d = compare.data;
		const u = d.unit;
		const norm = d.mode === 'normalized';
		const change = norm ? `${n.delta >= 0 ? '+' : ''}${(100 * n.delta).toFixed(2)} pp of total` : `${n.delta >= 0 ? '+' : ''}${fmtValue(n.delta, u)}`;
		const verdict = n.status === 'appeared' ? 'only in B' : n.status === 'disappeared' ? 'only in A' : n.noise ? 'within sampling noise' : n.delta > 0 ? 'more in B' : 'less in B';
		return `<div class="tt-name">${escapeHtml(n.parent ? n.name : 'total')}</div><table>` +
			`<tr><td class="k">A total</td><td class="v">${escapeHtml(fmtValue(n.a_total, u))}</td><td class="p">${fmtPct(n.a_share, 1)}</td></tr>` +
			`<tr><td class="k">B total</td><td class="v">${escapeHtml(fmtValue(n.b_total, u))}</td><td class="p">${fmtPct(n.b_share, 1)}</td></tr>` +
			`<tr><td class="k">Change</td><td class="v" colspan="2">${escapeHtml(change)}</td></tr>` +
			`<tr><td class="k">Verdict</td><td class="v" colspan="2">${escapeHtml(verdict)} (z = ${(+n.z || 0).toFixed(2)})</td></tr></table>`;
	}

	/* Default sides: the two halves of the current range. */
	function compareSides() {
		const c = state.cmp;
		if (!(c.aFrom && c.aTo && c.bFrom && c.bTo)) {
			let from;
			let to;
			if (state.range === 'abs') {
				from = state.from;
				to = state.to;
			} else {
				to = Date.now();
				from = to - PRESETS[state.range][1];
			}
			const mid = Math.round((from + to) / 2);
			c.aFrom = from;
			c.aTo = mid - 1;
			c.bFrom = mid;
			c.bTo = to;
		}
		if (!c.aType) c.aType = state.type;
		if (!c.bType) c.bType = state.type;
	}

	function fillCompareInputs() {
		const c = state.cmp;
		for (const side of ['a', 'b']) {
			const root = document.querySelector(`.cmp-side[data-side="${side}"]`);
			const sel = root.querySelector('.cmp-type');
			if (sel.options.length !== el.type.options.length) sel.innerHTML = el.type.innerHTML;
			sel.value = c[`${side}Type`];
			if (sel.value !== c[`${side}Type`]) {
				const o = document.createElement('option');
				o.value = o.textContent = c[`${side}Type`];
				sel.appendChild(o);
				sel.value = c[`${side}Type`];
			}
			root.querySelector('.cmp-query').value = c[`${side}Query`];
			root.querySelector('.cmp-from').value = toLocalInput(c[`${side}From`]);
			root.querySelector('.cmp-to').value = toLocalInput(c[`${side}To`]);
		}
		for (const r of document.querySelectorAll('input[name="cmp-mode"]')) r.checked = r.value === c.mode;
	}

	function readCompareInputs() {
		const c = state.cmp;
		for (const side of ['a', 'b']) {
			const root = document.querySelector(`.cmp-side[data-side="${side}"]`);
			c[`${side}Type`] = root.querySelector('.cmp-type').value;
			c[`${side}Query`] = root.querySelector('.cmp-query').value.trim();
			const f = fromLocalInput(root.querySelector('.cmp-from').value);
			const t = fromLocalInput(root.querySelector('.cmp-to').value);
			if (f && t > f) {
				/* keep milliseconds the inputs cannot show */
				if (Math.floor(c[`${side}From`] / 1000) !== Math.floor(f / 1000)) c[`${side}From`] = f;
				if (Math.floor(c[`${side}To`] / 1000) !== Math.floor(t / 1000)) c[`${side}To`] = t;
			}
		}
		const m = document.querySelector('input[name="cmp-mode"]:checked');
		c.mode = m ? m.value : 'normalized';
	}

	function sideParams(side) {
		const c = state.cmp;
		return { type: c[`${side}Type`] || state.type, query: c[`${side}Query`] || state.query, from: String(c[`${side}From`]), to: String(c[`${side}To`]) };
	}

	/* /api/v1/diff's parameters for sides @a and @b (sideParams), with the view filters. */
	function diffParams(a, b) {
		return {
			dataset: state.dataset,
			type: a.type,
			a_type: a.type,
			b_type: b.type,
			a_query: a.query,
			b_query: b.query,
			a_from: a.from,
			a_to: a.to,
			b_from: b.from,
			b_to: b.to,
			mode: state.cmp.mode,
			max_nodes: 8192,
			...filterParams(),
		};
	}

	async function loadCompare(seq) {
		compareSides();
		fillCompareInputs();
		compare.state = 'loading';
		showMsg(el.cmpMsg, 'loading', 'Comparing…', '');
		const a = sideParams('a');
		const b = sideParams('b');
		for (const side of ['a', 'b']) sideChart(side, side === 'a' ? a : b, seq);
		const ta = parseType(a.type);
		const tb = parseType(b.type);
		if (ta.unit && tb.unit && ta.unit !== tb.unit) {
			diffView.clear();
			compare.state = 'error';
			el.cmpSummary.textContent = '';
			showMsg(el.cmpMsg, 'error', 'These two sides cannot be compared',
				`A is ${escapeHtml(ta.label)}, measured in ${escapeHtml(ta.unit)}; B is ${escapeHtml(tb.label)}, measured in ${escapeHtml(tb.unit)}. Pick the same profile type on both sides.`);
			return;
		}
		let data;
		try {
			data = await api('api/v1/diff', diffParams(a, b));
		} catch (e) {
			if (seq !== state.seq) return;
			diffView.clear();
			compare.state = 'error';
			el.cmpSummary.textContent = '';
			showMsg(el.cmpMsg, 'error', 'Could not compare', escapeHtml(e.message));
			return;
		}
		if (seq !== state.seq) return;
		compare.data = data;
		compare.mode = data.mode;
		const norm = data.mode === 'normalized';
		/* width: both sides together; colour: the sign and size of delta, grey when within noise */
		let maxAbs = 0;
		const stack = [data.root];
		while (stack.length) {
			const n = stack.pop();
			n.self = norm ? (data.a.total ? n.a_self / data.a.total : 0) + (data.b.total ? n.b_self / data.b.total : 0) : n.a_self + n.b_self;
			n.total = norm ? n.a_share + n.b_share : n.a_total + n.b_total;
			if (n !== data.root) maxAbs = Math.max(maxAbs, Math.abs(n.delta));
			for (const c of n.children || []) stack.push(c);
		}
		prepare(data.root);
		const walk = [data.root];
		while (walk.length) {
			const n = walk.pop();
			if (n.status === 'appeared') n.diffClass = 'more';
			else if (n.status === 'disappeared') n.diffClass = 'less';
			else if (n.noise || !n.delta) n.diffClass = 'same';
			else n.diffClass = n.delta > 0 ? 'more' : 'less';
			n.intensity = n.status !== 'both' ? 1 : maxAbs ? Math.abs(n.delta) / maxAbs : 0;
			for (const c of n.children) walk.push(c);
		}
		if (!data.a.total && !data.b.total) {
			diffView.clear();
			compare.state = 'empty';
			el.cmpSummary.textContent = '';
			showMsg(el.cmpMsg, 'empty', 'Both sides are empty', 'Neither time range has samples for these selections. Drag on the charts above to pick ranges with data.');
			return;
		}
		hideMsg(el.cmpMsg);
		diffView.setData(data.root, data.unit);
		diffView.render();
		const u = data.unit;
		el.cmpSummary.innerHTML = `A: ${escapeHtml(fmtValue(data.a.total, u))} in ${fmtCount(data.a.samples)} samples (${escapeHtml(fmtTime(+a.from))} – ${escapeHtml(fmtTime(+a.to))}) · ` +
			`B: ${escapeHtml(fmtValue(data.b.total, u))} in ${fmtCount(data.b.samples)} samples (${escapeHtml(fmtTime(+b.from))} – ${escapeHtml(fmtTime(+b.to))}) · ` +
			`${norm ? 'shares of each side' : 'absolute values'}; noise test: ${escapeHtml(data.noise_test || '')}`;
		compare.state = 'ready';
	}

	/* ---------- charts (uPlot) ---------- */

	function chartTheme() {
		return { text: cssVar('--muted') || '#5f6b7a', grid: cssVar('--grid') || '#eceef1' };
	}

	/*
	 * A uPlot chart of a series answer in `node`; onSelect(fromMs, toMs)
	 * when the user drags across it. Returns the uPlot instance or null.
	 */
	function drawChart(node, data, height, onSelect, old, band) {
		if (old) old.destroy();
		node.innerHTML = '';
		if (!window.uPlot) {
			node.innerHTML = '<div class="message visible error"><strong>The chart library is missing</strong><span>vendor/uPlot.iife.min.js was not found next to the page: run <code>make deps</code> (it copies uPlot from npm).</span></div>';
			return null;
		}
		const th = chartTheme();
		const xs = data.timestamps.map((t) => t / 1000);
		const series = [{}];
		const cols = [xs];
		const groups = seriesGroups(data);
		for (const g of groups) {
			series.push({ label: g.label, stroke: g.color, width: 1.5, fill: `${g.color}22`, points: { show: false } });
			cols.push(g.values);
		}
		const unit = data.unit;
		const u = new window.uPlot({
			width: Math.max(200, node.clientWidth),
			height,
			legend: { show: false },
			cursor: { drag: { x: true, y: false, setScale: false }, points: { show: false } },
			select: { show: true },
			scales: { x: { time: true } },
			series,
			axes: [
				{ stroke: th.text, grid: { stroke: th.grid, width: 1 }, ticks: { stroke: th.grid } },
				{ stroke: th.text, grid: { stroke: th.grid, width: 1 }, ticks: { stroke: th.grid }, size: 70, values: (_, vals) => vals.map((v) => fmtValue(v, unit)) },
			],
			hooks: {
				draw: [(uu) => {
					if (!band) return;
					const x0 = Math.max(uu.bbox.left, uu.valToPos(band.from / 1000, 'x', true));
					const x1 = Math.min(uu.bbox.left + uu.bbox.width, uu.valToPos(band.to / 1000, 'x', true));
					if (!(x1 > x0)) return;
					uu.ctx.save();
					uu.ctx.fillStyle = band.fill;
					uu.ctx.fillRect(x0, uu.bbox.top, x1 - x0, uu.bbox.height);
					uu.ctx.fillStyle = band.edge;
					uu.ctx.fillRect(x0, uu.bbox.top, 1.5, uu.bbox.height);
					uu.ctx.fillRect(x1 - 1.5, uu.bbox.top, 1.5, uu.bbox.height);
					uu.ctx.restore();
				}],
				setSelect: [(uu) => {
					if (uu.select.width < 3) return;
					const a = uu.posToVal(uu.select.left, 'x');
					const b = uu.posToVal(uu.select.left + uu.select.width, 'x');
					uu.setSelect({ left: 0, width: 0, top: 0, height: 0 }, false);
					onSelect(Math.round(a * 1000), Math.round(b * 1000));
				}],
			},
		}, cols, node);
		return u;
	}

	function seriesGroups(data) {
		const out = [];
		(data.series || []).forEach((s, i) => {
			const label = data.group_by && data.group_by.length ? laneLabel(s.labels) : 'total';
			out.push({ label, labels: s.labels, color: SERIES_COLORS[i % (SERIES_COLORS.length - 1)], values: s.values, total: s.total !== undefined ? s.total : s.mean, mean: s.mean !== undefined });
		});
		if (data.other && data.other.groups) {
			const tot = data.other.values.reduce((a, b) => a + b, 0);
			out.push({ label: `other (${data.other.groups} groups)`, other: true, color: SERIES_COLORS[SERIES_COLORS.length - 1], values: data.other.values, total: tot });
		}
		return out;
	}

	const chart = { state: 'idle', groups: [], u: null, data: null, seq: 0 }; /* own sequence: a view reload must not orphan it */
	pub.views.chart = chart;

	async function loadChart(seq) {
		chart.state = 'loading';
		showMsg(el.chartMsg, 'loading', 'Loading…', '');
		let data;
		try {
			data = await api('api/v1/series', selection({ group_by: state.groupBy, limit: 10 }));
		} catch (e) {
			if (seq !== chart.seq) return;
			chart.state = 'error';
			if (chart.u) chart.u.destroy();
			chart.u = null;
			el.chart.innerHTML = '';
			el.legend.innerHTML = '';
			el.chartSummary.textContent = '';
			showMsg(el.chartMsg, 'error', 'Could not load the time series', escapeHtml(e.message));
			return;
		}
		if (seq !== chart.seq) return;
		chart.data = data;
		chart.groups = seriesGroups(data);
		if (!data.samples) {
			chart.state = 'empty';
			if (chart.u) chart.u.destroy();
			chart.u = null;
			el.chart.innerHTML = '';
			el.legend.innerHTML = '';
			el.chartSummary.textContent = '';
			showMsg(el.chartMsg, 'empty', `No samples in ${rangeWords()}`, emptyWords());
			return;
		}
		hideMsg(el.chartMsg);
		renderChart();
		chart.state = 'ready';
	}

	function renderChart() {
		const data = chart.data;
		if (!data || !data.samples) return;
		chart.u = drawChart(el.chart, data, 170, (a, b) => setAbsRange(a, b), chart.u);
		const agg = data.cumulative ? 'sum per step' : 'mean per step';
		el.chartSummary.textContent = `${fmtCount(data.samples)} samples · ${agg}, step ${fmtDuration(data.step_ms * 1e6)}${state.groupBy ? ` · sum by ${state.groupBy}` : ''}`;
		el.legend.innerHTML = chart.groups
			.map((g, i) => `<li data-i="${i}"${g.other || !state.groupBy ? ' class="static"' : ''} title="${g.other || !state.groupBy ? '' : 'Filter to this group'}" data-label="${escapeHtml(g.label)}" data-total="${g.total}">` +
				`<span class="sw" style="background:${g.color}"></span><span class="lg-name">${escapeHtml(g.label)}</span>` +
				`<span class="lg-total">${escapeHtml(fmtValue(g.total, data.unit))}${g.mean ? ' mean' : ''}</span></li>`)
			.join('');
	}

	el.legend.addEventListener('click', (ev) => {
		const li = ev.target.closest('li');
		if (!li || li.classList.contains('static')) return;
		const g = chart.groups[+li.dataset.i];
		if (!g || !g.labels) return;
		let q = state.query.trim();
		const add = Object.entries(g.labels).map(([k, v]) => `${k}="${String(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`).join(', ');
		if (!q || q === '{}') q = `{${add}}`;
		else if (q.endsWith('}')) q = `${q.slice(0, -1).replace(/\s*,?\s*$/, '')}, ${add}}`;
		else q = `{${add}}`;
		el.query.value = q;
		run();
	});

	/* The compare view's per-side charts: the side's total over a window around both sides. */
	async function sideChart(side, p, seq) {
		const node = document.querySelector(`.cmp-side[data-side="${side}"] .cmp-chart`);
		const c = state.cmp;
		const from = Math.min(c.aFrom, c.bFrom);
		const to = Math.max(c.aTo, c.bTo);
		const pad = Math.round((to - from) * 0.1);
		let data;
		try {
			data = await api('api/v1/series', { dataset: state.dataset, type: p.type, query: p.query, from: String(from - pad), to: String(to + pad) });
		} catch (e) {
			if (seq !== state.seq) return;
			node.innerHTML = `<div class="message visible error"><span>${escapeHtml(e.message)}</span></div>`;
			return;
		}
		if (seq !== state.seq) return;
		compare.charts[side] = data;
		const band = side === 'a' ? { fill: 'rgba(120,130,145,0.22)', edge: '#7d8796' } : { fill: 'rgba(47,111,222,0.18)', edge: '#2f6fde' };
		band.from = +p.from;
		band.to = +p.to;
		compare.uplots = compare.uplots || {};
		compare.uplots[side] = drawChart(node, data, 130, (a, b) => {
			state.cmp[`${side}From`] = a;
			state.cmp[`${side}To`] = b;
			writeUrl();
			rerunView();
		}, compare.uplots && compare.uplots[side], band);
	}

	/* ---------- stack health ---------- */

	const health = { state: 'idle', data: null };
	pub.views.health = health;

	async function loadHealth(seq) {
		health.state = 'loading';
		showMsg(el.healthMsg, 'loading', 'Checking symbols…', '');
		let data;
		try {
			data = await api('api/v1/health/symbols', { dataset: state.dataset, type: state.type, query: state.query, ...timeParams() });
		} catch (e) {
			if (seq !== state.seq) return;
			health.state = 'error';
			el.healthCards.innerHTML = '';
			el.healthTable.tBodies[0].innerHTML = '';
			showMsg(el.healthMsg, 'error', 'Could not load the stack health', escapeHtml(e.message));
			return;
		}
		if (seq !== state.seq) return;
		health.data = data;
		if (!data.samples) {
			health.state = 'empty';
			el.healthCards.innerHTML = '';
			el.healthTable.tBodies[0].innerHTML = '';
			el.healthSummary.textContent = '';
			showMsg(el.healthMsg, 'empty', `No samples in ${rangeWords()}`, emptyWords());
			return;
		}
		hideMsg(el.healthMsg);
		const full = data.samples - data.samples_with_unsymbolized;
		const card = (title, part, whole, what) => {
			const p = whole ? part / whole : 1;
			const cls = p >= 0.99 ? 'good' : p >= 0.9 ? 'fair' : 'poor';
			return `<div class="card ${cls}"><div class="card-title">${escapeHtml(title)}</div><div class="card-value">${fmtPct(part, whole || 1)}</div>` +
				`<div class="card-sub">${fmtCount(part)} of ${fmtCount(whole)} ${escapeHtml(what)}</div><div class="meter"><span style="width:${(100 * p).toFixed(1)}%"></span></div></div>`;
		};
		let cards = card('Frames symbolized', data.frames_symbolized, data.frames, 'frames');
		cards += card('Samples fully symbolized', full, data.samples, 'samples');
		cards += card('Stacks fully unwound', data.samples - (data.samples_truncated || 0), data.samples, 'samples');
		for (const r of data.runtimes || []) cards += card(`${r.runtime.charAt(0).toUpperCase()}${r.runtime.slice(1)} frames named`, r.frames_symbolized, r.frames, 'frames');
		for (const why of data.unsupported_runtimes || [])
			cards += `<div class="card poor unsupported-runtime"><div class="card-title">Interpreter frames missing</div><div class="card-sub">${escapeHtml(why)}: these processes show the interpreter's own native frames</div></div>`;
		el.healthCards.innerHTML = cards;
		const bins = data.binaries || [];
		el.healthTable.tBodies[0].innerHTML = bins.length
			? bins.map((b) => `<tr data-path="${escapeHtml(b.path)}"><td class="col-fn" title="${escapeHtml(b.build_id || '')}">${escapeHtml(b.path || '(unknown)')}<div class="sub">build ID ${escapeHtml(b.build_id || 'unknown')}</div></td>` +
				`<td><span class="status status-${escapeHtml(b.status)}">${escapeHtml(b.status.replace(/_/g, ' '))}</span></td>` +
				`<td class="col-num">${fmtPct(b.frames_symbolized, b.frames)} <span class="sub">${fmtCount(b.frames_symbolized)} / ${fmtCount(b.frames)}</span></td>` +
				`<td class="col-num">${fmtPct(b.samples - b.samples_unsymbolized, b.samples)} <span class="sub">${fmtCount(b.samples - b.samples_unsymbolized)} / ${fmtCount(b.samples)}</span></td>` +
				`<td class="col-num">${fmtPct(b.samples - (b.samples_truncated || 0), b.samples)} <span class="sub">${fmtCount(b.samples - (b.samples_truncated || 0))} / ${fmtCount(b.samples)}</span></td>` +
				`<td class="col-fix">${escapeHtml([b.hint, b.samples_truncated ? 'Some stacks through it are cut short ([truncated] root): deeper than the agent walks (its 16 KiB stack copy, or 127 frame-pointer frames).' : ''].filter(Boolean).join(' '))}</td></tr>`).join('')
			: '<tr class="static"><td colspan="6" class="all-good">Every frame in this selection is named: no binary needs debug info.</td></tr>';
		const missing = bins.filter((b) => b.frames_symbolized < b.frames).length;
		el.healthSummary.textContent = `${fmtCount(data.samples)} samples · ${fmtCount(data.frames)} frames · ` +
			(missing ? `${missing} of ${bins.length} binar${bins.length === 1 ? 'y' : 'ies'} not fully symbolized` : bins.length ? `every binary symbolized (${bins.length} through the symbolizer)` : 'every frame named by its producer');
		health.state = 'ready';
	}

	/* ---------- exports ---------- */

	function fileBase(type) {
		return (parseType(type).name || 'profile').replace(/[^A-Za-z0-9_.-]/g, '_');
	}

	/*
	 * The Download links. Compare has its own: each side's selection
	 * (baseline A, comparison B: its type, selector and range, with the view
	 * filters) as pprof, folded and SVG, and the diff as JSON, the answer
	 * of /api/v1/diff the view draws (the server renders no diff SVG).
	 */
	function updateExports() {
		const cmp = state.view === 'compare';
		el.exports.main.hidden = cmp;
		el.exports.cmp.hidden = !cmp;
		if (cmp) {
			compareSides();
			const sides = { a: sideParams('a'), b: sideParams('b') };
			for (const side of ['a', 'b']) {
				const s = sides[side];
				const p = { dataset: state.dataset, ...s, ...filterParams() };
				const words = `${side === 'a' ? 'A (baseline)' : 'B (comparison)'}: ${parseType(s.type).label} · ${fmtTime(+s.from)} – ${fmtTime(+s.to)}`;
				const base = `${fileBase(s.type)}.${side.toUpperCase()}`;
				const links = el.exports.sides[side];
				links.pprof.href = apiUrl('api/v1/export/pprof', p).toString();
				links.folded.href = apiUrl('api/v1/export/folded', p).toString();
				links.svg.href = apiUrl('api/v1/export/svg', { ...p, title: words }).toString();
				links.pprof.download = `${base}.pb.gz`;
				links.folded.download = `${base}.folded.txt`;
				links.svg.download = `${base}.svg`;
				for (const [fmt, a] of Object.entries(links)) a.title = `${words}, as ${fmt === 'svg' ? 'an SVG flame graph' : fmt}`;
			}
			el.exports.diff.href = apiUrl('api/v1/diff', diffParams(sides.a, sides.b)).toString();
			el.exports.diff.download = `${fileBase(sides.a.type)}.diff.json`;
			el.exports.diff.title = 'The comparison: B minus A per frame (/api/v1/diff), as JSON';
			return;
		}
		const p = selection();
		el.exports.pprof.href = apiUrl('api/v1/export/pprof', p).toString();
		el.exports.folded.href = apiUrl('api/v1/export/folded', p).toString();
		el.exports.svg.href = apiUrl('api/v1/export/svg', { ...p, invert: state.invert ? 'true' : '', title: `${parseType(state.type).label} · ${rangeWords()}` }).toString();
		const base = fileBase(state.type);
		el.exports.pprof.download = `${base}.pb.gz`;
		el.exports.folded.download = `${base}.folded.txt`;
		el.exports.svg.download = `${base}.svg`;
	}

	/*
	 * speedscope's file format (https://www.speedscope.app/file-format-schema.json):
	 * one "sampled" profile built from the folded export, frames shared.
	 */
	function foldedToSpeedscope(text, unit, name) {
		const frames = [];
		const index = new Map();
		const samples = [];
		const weights = [];
		let total = 0;
		for (const line of text.split('\n')) {
			const sp = line.lastIndexOf(' ');
			if (sp <= 0) continue;
			const v = +line.slice(sp + 1);
			if (!Number.isFinite(v)) continue;
			const stack = line.slice(0, sp).split(';').map((f) => {
				let i = index.get(f);
				if (i === undefined) {
					i = frames.length;
					frames.push({ name: f });
					index.set(f, i);
				}
				return i;
			});
			samples.push(stack);
			weights.push(v);
			total += v;
		}
		const u = { nanoseconds: 'nanoseconds', bytes: 'bytes', microseconds: 'microseconds', milliseconds: 'milliseconds', seconds: 'seconds' }[unit] || 'none';
		return {
			$schema: 'https://www.speedscope.app/file-format-schema.json',
			shared: { frames },
			profiles: [{ type: 'sampled', name, unit: u, startValue: 0, endValue: total, samples, weights }],
			name,
			activeProfileIndex: 0,
			exporter: 'profd explorer',
		};
	}

	async function exportSpeedscope() {
		try {
			const res = await fetch(apiUrl('api/v1/export/folded', selection()));
			const text = await res.text();
			if (!res.ok) throw new Error(`The server answered ${res.status}: ${text.trim()}`);
			const t = parseType(state.type);
			const doc = foldedToSpeedscope(text, t.unit, `${t.label} · ${rangeWords()}`);
			const blob = new Blob([JSON.stringify(doc)], { type: 'application/json' });
			const a = document.createElement('a');
			a.href = URL.createObjectURL(blob);
			a.download = `${(t.name || 'profile').replace(/[^A-Za-z0-9_.-]/g, '_')}.speedscope.json`;
			document.body.appendChild(a);
			a.click();
			a.remove();
			setTimeout(() => URL.revokeObjectURL(a.href), 10000);
			pub.lastSpeedscope = doc;
		} catch (e) {
			toast(`Could not export: ${e.message}`);
		}
	}
	el.exports.speedscope.addEventListener('click', exportSpeedscope);

	/* ---------- view filters (chips) ---------- */

	function renderChips() {
		const chips = [];
		state.sf.forEach((s, i) => chips.push(`<span class="chip stack" data-kind="sf" data-i="${i}" title="Keep only stacks with a frame matching this regex">stack ∋ <code>${escapeHtml(s)}</code><button type="button" aria-label="Remove">×</button></span>`));
		state.ff.forEach((s, i) => chips.push(`<span class="chip frame" data-kind="ff" data-i="${i}" title="Frames matching this regex are hidden; their cost goes to the caller">hide <code>${escapeHtml(s)}</code><button type="button" aria-label="Remove">×</button></span>`));
		el.chips.innerHTML = chips.length ? chips.join('') : '<span class="chips-none">none</span>';
		for (const cb of el.hidePresets.querySelectorAll('input')) cb.checked = state.hide.includes(cb.value);
	}

	function addChip() {
		const v = el.chipInput.value.trim();
		if (!v) return;
		try {
			new RegExp(v); // eslint-disable-line no-new
		} catch (e) {
			toast(`Not a regular expression: ${e.message}`);
			return;
		}
		(el.chipKind.value === 'frame' ? state.ff : state.sf).push(v);
		el.chipInput.value = '';
		renderChips();
		rerunAll();
	}
	el.chipAdd.addEventListener('click', addChip);
	el.chipInput.addEventListener('keydown', (ev) => {
		if (ev.key === 'Enter') {
			ev.preventDefault();
			addChip();
		}
	});
	el.chips.addEventListener('click', (ev) => {
		const b = ev.target.closest('button');
		if (!b) return;
		const chip = b.closest('.chip');
		state[chip.dataset.kind].splice(+chip.dataset.i, 1);
		renderChips();
		rerunAll();
	});
	el.hidePresets.addEventListener('change', () => {
		state.hide = [...el.hidePresets.querySelectorAll('input:checked')].map((c) => c.value);
		rerunAll();
	});

	/* ---------- label autocompletion ---------- */

	const labelCache = { key: '', names: null, values: new Map() };

	function labelScope() {
		return { dataset: state.dataset, type: el.type.value, ...timeParams() };
	}

	async function labelNames() {
		const key = JSON.stringify(labelScope());
		if (labelCache.key !== key) {
			labelCache.key = key;
			labelCache.names = null;
			labelCache.values = new Map();
		}
		if (!labelCache.names) {
			try {
				labelCache.names = await api('api/v1/labels', labelScope());
			} catch (e) {
				labelCache.names = [];
			}
		}
		return labelCache.names;
	}

	async function labelValues(name) {
		await labelNames();
		if (!labelCache.values.has(name)) {
			let v = [];
			try {
				v = await api(`api/v1/labels/${encodeURIComponent(name)}/values`, labelScope());
			} catch (e) {
				v = [];
			}
			labelCache.values.set(name, v);
		}
		return labelCache.values.get(name);
	}

	const suggest = { items: [], active: -1, replace: null };

	/* What is being typed at the cursor: a label name or a label's value. */
	function suggestContext() {
		const v = el.query.value;
		const pos = el.query.selectionStart == null ? v.length : el.query.selectionStart;
		const before = v.slice(0, pos);
		const open = before.lastIndexOf('{');
		if (open < 0) return before.trim() === '' ? { kind: 'name', prefix: '', start: pos, end: pos, needBrace: true } : null;
		if (before.indexOf('}', open) >= 0) return null;
		const seg = before.slice(Math.max(open, before.lastIndexOf(',')) + 1);
		const segStart = pos - seg.length;
		let m = /^\s*([A-Za-z0-9_.]*)$/.exec(seg);
		if (m) return { kind: 'name', prefix: m[1], start: pos - m[1].length, end: pos };
		m = /^\s*([A-Za-z0-9_.]+)\s*(=~|!~|!=|=)\s*"([^"]*)$/.exec(seg);
		if (m) return { kind: 'value', label: m[1], op: m[2], prefix: m[3], start: segStart + seg.length - m[3].length, end: pos };
		return null;
	}

	async function updateSuggest() {
		const ctx = suggestContext();
		if (!ctx || document.activeElement !== el.query) return closeSuggest();
		let list;
		if (ctx.kind === 'name') list = (await labelNames()).filter((n) => n.toLowerCase().startsWith(ctx.prefix.toLowerCase()));
		else list = (await labelValues(ctx.label)).filter((n) => String(n).toLowerCase().includes(ctx.prefix.toLowerCase()));
		if (JSON.stringify(ctx) !== JSON.stringify(suggestContext())) return; /* typed on meanwhile */
		suggest.items = list.slice(0, 50).map(String);
		suggest.ctx = ctx;
		suggest.active = suggest.items.length ? 0 : -1;
		if (!suggest.items.length) return closeSuggest();
		el.suggest.innerHTML = suggest.items
			.map((s, i) => `<li role="option" data-i="${i}"${i === suggest.active ? ' class="active" aria-selected="true"' : ''}><span class="sg-kind">${ctx.kind === 'name' ? 'label' : escapeHtml(ctx.label)}</span>${escapeHtml(s)}</li>`)
			.join('');
		el.suggest.hidden = false;
	}

	function closeSuggest() {
		el.suggest.hidden = true;
		suggest.items = [];
		suggest.active = -1;
	}

	function pickSuggest(i) {
		const ctx = suggest.ctx;
		const item = suggest.items[i];
		if (!ctx || item === undefined) return;
		const v = el.query.value;
		let ins;
		let caret;
		if (ctx.kind === 'name') {
			ins = `${ctx.needBrace ? '{' : ''}${item}="`;
			caret = ctx.start + ins.length;
			ins += `"${ctx.needBrace || !v.includes('}') ? '}' : ''}`;
		} else {
			const esc = ctx.op === '=' || ctx.op === '!=' ? item.replace(/\\/g, '\\\\').replace(/"/g, '\\"') : item.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
			const rest = v.slice(ctx.end);
			const closed = rest.startsWith('"');
			ins = esc + (closed ? '' : `"${v.includes('}') ? '' : '}'}`);
			caret = ctx.start + esc.length + 1;
		}
		el.query.value = v.slice(0, ctx.start) + ins + v.slice(ctx.end);
		el.query.setSelectionRange(caret, caret);
		closeSuggest();
		if (ctx.kind === 'name') updateSuggest();
	}

	el.query.addEventListener('input', updateSuggest);
	/* on focus only when something is typed: an empty field opens its list on typing or the down arrow */
	el.query.addEventListener('focus', () => el.query.value && updateSuggest());
	el.query.addEventListener('click', () => el.query.value && updateSuggest());
	el.query.addEventListener('blur', () => setTimeout(closeSuggest, 150));
	el.query.addEventListener('keydown', (ev) => {
		if (el.suggest.hidden) {
			if (ev.key === 'ArrowDown') updateSuggest();
			return;
		}
		if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
			ev.preventDefault();
			const n = suggest.items.length;
			suggest.active = (suggest.active + (ev.key === 'ArrowDown' ? 1 : n - 1)) % n;
			[...el.suggest.children].forEach((li, i) => li.classList.toggle('active', i === suggest.active));
		} else if (ev.key === 'Enter' || ev.key === 'Tab') {
			if (suggest.active >= 0) {
				ev.preventDefault();
				pickSuggest(suggest.active);
			}
		} else if (ev.key === 'Escape') {
			ev.stopPropagation();
			closeSuggest();
		}
	});
	el.suggest.addEventListener('mousedown', (ev) => {
		const li = ev.target.closest('li');
		if (!li) return;
		ev.preventDefault();
		pickSuggest(+li.dataset.i);
	});

	async function loadGroupBy() {
		const names = await labelNames();
		const cur = state.groupBy;
		const opts = ['', ...names];
		if (cur && !opts.includes(cur)) opts.push(cur);
		el.groupBy.innerHTML = opts.map((n) => `<option value="${escapeHtml(n)}">${n ? escapeHtml(n) : '(nothing)'}</option>`).join('');
		el.groupBy.value = cur;
		const lanes = state.lanes || state.groupBy || 'process.executable.name';
		const lopts = [...new Set([...names, lanes])];
		el.fcLanes.innerHTML = lopts.map((n) => `<option value="${escapeHtml(n)}">${escapeHtml(n)}</option>`).join('');
		el.fcLanes.value = lanes;
	}

	/* ---------- profile types ---------- */

	async function loadTypes() {
		el.status.textContent = `Server ${location.host}`;
		let list;
		try {
			const p = state.range === 'abs' ? timeParams() : { from: 'now-7d', to: 'now' };
			list = await api('api/v1/profile-types', { dataset: state.dataset, ...p });
		} catch (e) {
			el.type.innerHTML = '<option value="">(unavailable)</option>';
			flame.setState('error');
			showMsg(el.message, 'error', 'Could not load the profile types', escapeHtml(e.message));
			return false;
		}
		const idsOf = (l) => (Array.isArray(l) ? l : l.types || l.profile_types || []).map((t) => (typeof t === 'string' ? t : t.id || t.name)).filter(Boolean);
		let ids = idsOf(list);
		/* Nothing in the last 7 days: offer what the server has at all (old
		 * data, a replayed file) rather than claiming it is empty. */
		if (!ids.length && state.range !== 'abs') {
			try {
				ids = idsOf(await api('api/v1/profile-types', { dataset: state.dataset, from: '0', to: 'now' }));
			} catch (e) {
				ids = [];
			}
		}
		if (state.type && !ids.includes(state.type)) ids.unshift(state.type); /* shared link */
		state.types = ids;
		/* Types that differ only in their period (alloc_objects of a Go heap
		 * profile and of an async-profiler one) say which period they have. */
		const seen = {};
		for (const id of ids) seen[parseType(id).label] = (seen[parseType(id).label] || 0) + 1;
		const optLabel = (id) => {
			const t = parseType(id);
			const per = String(id).split(':').slice(3).filter(Boolean).join(' ');
			return seen[t.label] > 1 ? `${t.label} · ${per ? `per ${per}` : 'no period'}` : t.label;
		};
		el.type.innerHTML = ids.map((id) => `<option value="${escapeHtml(id)}" title="${escapeHtml(id)}">${escapeHtml(optLabel(id))}</option>`).join('');
		if (!ids.length) {
			el.type.innerHTML = '<option value="">No profile types yet</option>';
			flame.setState('empty');
			showMsg(el.message, 'empty', 'No profiles stored yet',
				'Start an agent with <code>profd agent --server URL</code> or send profiles to this server; types appear here as soon as data arrives.');
			showMsg(el.chartMsg, 'empty', 'No profiles stored yet', '');
			return false;
		}
		if (!state.type) state.type = ids.find((id) => /(^|:)cpu:/.test(id)) || ids[0];
		el.type.value = state.type;
		return true;
	}

	/* ---------- views ---------- */

	const loaders = { flame: loadFlame, table: loadTable, sandwich: loadSandwich, flamechart: loadFlamechart, compare: loadCompare, health: loadHealth };
	const loadedKey = {};

	function viewKey(v) {
		const base = JSON.stringify([selection(), state.invert]);
		if (v === 'sandwich') return base + state.fn;
		if (v === 'flamechart') return base + state.lanes;
		if (v === 'compare') return base + JSON.stringify(state.cmp);
		return base;
	}

	function loadView(v) {
		const key = viewKey(v);
		if (loadedKey[v] === key) return Promise.resolve();
		loadedKey[v] = key;
		return loaders[v](state.seq);
	}

	function setView(v) {
		state.view = v;
		for (const b of el.tabs.querySelectorAll('button')) {
			const on = b.dataset.view === v;
			b.classList.toggle('active', on);
			b.setAttribute('aria-selected', on ? 'true' : 'false');
		}
		for (const s of document.querySelectorAll('.view')) s.hidden = s.dataset.view !== v;
		document.body.dataset.view = v;
		writeUrl();
		hideTooltip();
		return loadView(v).then(() => {
			/* a view drawn while hidden has the wrong width */
			if (v === 'flame' && flame.root) renderFlame();
			if (v === 'sandwich') for (const f of [swCallers, swCallees]) if (f.root) f.render();
			if (v === 'compare' && diffView.root) diffView.render();
			if (v === 'flamechart' && fc.data) renderFlamechart();
		});
	}

	function rerunView() {
		state.seq++;
		for (const k of Object.keys(loadedKey)) delete loadedKey[k];
		writeUrl();
		return loadView(state.view);
	}

	function rerunAll() {
		state.seq++;
		for (const k of Object.keys(loadedKey)) delete loadedKey[k];
		writeUrl();
		return Promise.all([loadChart(++chart.seq), loadView(state.view)]);
	}

	function readForm() {
		state.dataset = el.dataset.value.trim();
		state.type = el.type.value;
		state.query = el.query.value.trim();
		state.groupBy = el.groupBy.value;
		if (el.range.value === 'abs') {
			const f = fromLocalInput(el.from.value);
			const t = fromLocalInput(el.to.value);
			if (f && t > f) {
				if (Math.floor(state.from / 1000) !== Math.floor(f / 1000)) state.from = f;
				if (Math.floor(state.to / 1000) !== Math.floor(t / 1000)) state.to = t;
				state.range = 'abs';
			}
		} else {
			state.range = el.range.value;
		}
	}

	function fillForm() {
		el.dataset.value = state.dataset;
		el.query.value = state.query;
		el.range.value = state.range;
		el.absRange.hidden = state.range !== 'abs';
		if (state.range === 'abs') {
			el.from.value = toLocalInput(state.from);
			el.to.value = toLocalInput(state.to);
		}
		el.search.value = state.search;
		el.invert.checked = state.invert;
		el.icicle.checked = state.icicle;
		el.color.value = state.color;
		el.tableSearch.value = state.tableSearch;
		if (state.groupBy && ![...el.groupBy.options].some((o) => o.value === state.groupBy)) {
			const o = document.createElement('option');
			o.value = o.textContent = state.groupBy;
			el.groupBy.appendChild(o);
		}
		el.groupBy.value = state.groupBy;
		renderChips();
	}

	async function run() {
		closeSuggest();
		const oldType = state.type;
		const oldDataset = state.dataset;
		readForm();
		if (state.dataset !== oldDataset) {
			/* another dataset has its own types and labels */
			state.type = '';
			labelCache.key = '';
			if (!(await loadTypes())) return;
			state.type = el.type.value;
		}
		if (state.type !== oldType) {
			state.focusPath = [];
			state.cmp.aType = state.cmp.bType = '';
		}
		if (!state.type) return;
		flame.model.request = selection({ invert: state.invert ? 'true' : '', max_nodes: MAX_NODES });
		if (state.view === 'flame') flame.setState('loading');
		el.run.disabled = true;
		try {
			await Promise.all([rerunAll(), loadGroupBy()]);
		} finally {
			el.run.disabled = false;
		}
	}

	function setAbsRange(a, b) {
		if (!(b > a)) return;
		state.range = 'abs';
		state.from = a;
		state.to = b;
		state.cmp.aFrom = state.cmp.aTo = state.cmp.bFrom = state.cmp.bTo = 0;
		fillForm();
		run();
	}

	/* ---------- controls ---------- */

	el.form.addEventListener('submit', (ev) => {
		ev.preventDefault();
		run();
	});
	el.refresh.addEventListener('click', () => run());
	el.type.addEventListener('change', () => run());
	el.groupBy.addEventListener('change', () => run());
	el.range.addEventListener('change', () => {
		if (el.range.value === 'abs') {
			if (state.range !== 'abs') {
				state.to = Date.now();
				state.from = state.to - (PRESETS[state.range] ? PRESETS[state.range][1] : 3600e3);
			}
			el.absRange.hidden = false;
			el.from.value = toLocalInput(state.from);
			el.to.value = toLocalInput(state.to);
			state.range = 'abs';
			return;
		}
		el.absRange.hidden = true;
		state.cmp.aFrom = state.cmp.aTo = state.cmp.bFrom = state.cmp.bTo = 0;
		run();
	});
	for (const i of [el.from, el.to]) i.addEventListener('change', () => run());
	el.reset.addEventListener('click', () => flame.zoom(null));
	el.tabs.addEventListener('click', (ev) => {
		const b = ev.target.closest('button[data-view]');
		if (b) setView(b.dataset.view);
	});
	el.invert.addEventListener('change', () => {
		state.invert = el.invert.checked;
		state.focusPath = [];
		rerunView();
	});
	el.icicle.addEventListener('change', () => {
		state.icicle = el.icicle.checked;
		writeUrl();
		if (flame.root) renderFlame();
		if (diffView.root) diffView.render();
	});
	el.color.addEventListener('change', () => {
		state.color = el.color.value;
		writeUrl();
		redrawAll();
	});
	el.topTable.tHead.addEventListener('click', (ev) => {
		const th = ev.target.closest('th.sortable');
		if (!th) return;
		state.sort = th.dataset.sort;
		writeUrl();
		renderTable();
	});
	el.topTable.tBodies[0].addEventListener('click', (ev) => {
		const tr = ev.target.closest('tr[data-name]');
		if (tr) selectFunction(tr.dataset.name, true);
	});
	el.tableSearch.addEventListener('input', () => {
		state.tableSearch = el.tableSearch.value.trim();
		writeUrl();
		renderTable();
	});
	el.swFn.addEventListener('change', () => {
		const v = el.swFn.value.trim();
		if (v !== state.fn) selectFunction(v, false);
		loadView('sandwich');
	});
	el.search.addEventListener('input', () => {
		state.search = el.search.value.trim();
		writeUrl();
		if (flame.root && flame.root.total) renderFlame();
	});
	el.search.addEventListener('keydown', (ev) => {
		if (ev.key !== 'Enter' || !state.search || !flame.root) return;
		ev.preventDefault();
		/* open the heaviest matching function in the sandwich */
		let best = null;
		const stack = [flame.root];
		while (stack.length) {
			const n = stack.pop();
			if (n.parent && matches(n) && (!best || n.total > best.total)) best = n;
			for (const c of n.children) stack.push(c);
		}
		if (best) selectFunction(best.name, true);
	});
	el.fcLanes.addEventListener('change', () => {
		state.lanes = el.fcLanes.value;
		writeUrl();
		loadView('flamechart');
	});
	el.cmpRun.addEventListener('click', () => {
		readCompareInputs();
		rerunView();
	});
	for (const r of document.querySelectorAll('input[name="cmp-mode"]'))
		r.addEventListener('change', () => {
			readCompareInputs();
			rerunView();
		});
	for (const s of document.querySelectorAll('.cmp-type, .cmp-from, .cmp-to'))
		s.addEventListener('change', () => {
			readCompareInputs();
			rerunView();
		});
	for (const s of document.querySelectorAll('.cmp-query'))
		s.addEventListener('keydown', (ev) => {
			if (ev.key === 'Enter') {
				readCompareInputs();
				rerunView();
			}
		});

	el.copyLink.addEventListener('click', async () => {
		writeUrl();
		const link = location.href;
		pub.copiedLink = link;
		try {
			await navigator.clipboard.writeText(link);
			toast('Link copied: it restores this page as you see it.');
		} catch (e) {
			window.prompt('Copy this link:', link);
		}
	});

	function applyTheme(t) {
		document.documentElement.dataset.theme = t;
		cssCache.clear();
		el.theme.textContent = t === 'dark' ? 'Light theme' : 'Dark theme';
		try {
			localStorage.setItem('profd-theme', t);
		} catch (e) {
			/* private mode: the choice lasts this page */
		}
	}
	el.theme.addEventListener('click', () => {
		applyTheme(document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark');
		redrawAll();
	});

	function redrawAll() {
		if (flame.root && state.view === 'flame') renderFlame();
		for (const f of [swCallers, swCallees, diffView]) if (f.root && !f.canvas.closest('.view').hidden) f.render();
		if (fc.data && state.view === 'flamechart') renderFlamechart();
		if (chart.data && chart.data.samples) renderChart();
		if (state.view === 'compare' && compare.data) {
			for (const side of ['a', 'b']) if (compare.charts[side]) sideChart(side, sideParams(side), state.seq);
		}
	}

	document.addEventListener('keydown', (ev) => {
		const t = ev.target;
		const typing = t instanceof HTMLInputElement || t instanceof HTMLSelectElement || t instanceof HTMLTextAreaElement;
		if (ev.key === 'Escape') {
			if (t === el.search && el.search.value) {
				el.search.value = '';
				el.search.dispatchEvent(new Event('input'));
			} else if (state.view === 'flame' && flame.focus) {
				flame.zoom(null);
			} else if (state.view === 'flamechart' && fc.extent) {
				fcSetView(fc.extent[0], fc.extent[1]);
			}
			return;
		}
		if (typing || ev.ctrlKey || ev.metaKey || ev.altKey) return;
		if (ev.key === '/') {
			ev.preventDefault();
			if (state.view === 'table') el.tableSearch.focus();
			else {
				if (state.view !== 'flame') setView('flame');
				el.search.focus();
			}
		} else if (ev.key >= '1' && ev.key <= '6') {
			setView(VIEWS[+ev.key - 1]);
		} else if (ev.key === 'u' || ev.key === 'Backspace') {
			/* zoom out one level */
			if (state.view === 'flame' && flame.focus) flame.zoom(flame.focus.parent);
		}
	});

	let resizePending = false;
	window.addEventListener('resize', () => {
		if (resizePending) return;
		resizePending = true;
		requestAnimationFrame(() => {
			resizePending = false;
			redrawAll();
		});
	});

	/* ---------- start ---------- */

	async function start() {
		readUrl();
		applyTheme(document.documentElement.dataset.theme === 'dark' ? 'dark' : 'light');
		fillForm();
		for (const b of el.tabs.querySelectorAll('button')) b.classList.toggle('active', b.dataset.view === state.view);
		for (const s of document.querySelectorAll('.view')) s.hidden = s.dataset.view !== state.view;
		document.body.dataset.view = state.view;
		updateExports();
		if (!(await loadTypes())) return;
		await run();
		if (state.view !== 'flame') await setView(state.view);
	}

	start();
})();
