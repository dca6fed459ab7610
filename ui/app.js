// SPDX-License-Identifier: Apache-2.0
/*
 * app.js - the profd Profiling Explorer: query bar, flame graph on a canvas
 * (icicle: root at the top), zoom, breadcrumb, search highlight, tooltip.
 *
 * API (served by `profd server`, JSON):
 *   GET /api/v1/profile-types?from=&to=        -> ["name:type:unit:ptype:punit", ...]
 *   GET /api/v1/flamegraph?type=&query=&from=&to=&max_nodes=
 *        -> {"unit": "nanoseconds", "total": N,
 *            "root": {"name": "total", "self": S, "total": T, "children": [...]}}
 *   from/to: unix milliseconds or "now-15m" / "now".
 *
 * State lives in the URL (?type=&query=&range=&search=&focus=) so a reload
 * or a copied link restores the view. Rendered frames are published on
 * window.profdFlame = {state, unit, total, request, nodes: [{name, x, y, w,
 * h, self, total, depth}]} (CSS pixels relative to #flamegraph) so browser
 * tests can find and hover them.
 *
 * Plain modern JS, no dependencies, no network access except the server.
 */
'use strict';

(function () {
	const ROW_H = 18; /* px per stack level */
	const MIN_W = 0.35; /* frames narrower than this (px) are not drawn */
	const TEXT_PAD = 4;
	const FONT = '12px ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", Menlo, Consolas, monospace';
	const MAX_NODES = 8192;
	const RANGES = {
		'5m': 'the last 5 minutes',
		'15m': 'the last 15 minutes',
		'1h': 'the last hour',
		'6h': 'the last 6 hours',
		'24h': 'the last 24 hours',
	};

	const $ = (id) => document.getElementById(id);
	const el = {
		form: $('query-form'),
		type: $('type-select'),
		query: $('query-input'),
		range: $('range-select'),
		run: $('run-button'),
		refresh: $('refresh-button'),
		canvas: $('flamegraph'),
		wrap: $('flame-wrap'),
		flamePanel: $('flame-panel'),
		message: $('message'),
		tooltip: $('tooltip'),
		breadcrumb: $('breadcrumb'),
		reset: $('reset-button'),
		summary: $('summary'),
		search: $('search-input'),
		topPanel: $('top-panel'),
		topTable: $('top-table'),
		topSummary: $('top-summary'),
		searchResult: $('search-result'),
		status: $('server-status'),
	};

	const state = {
		type: '',
		query: '',
		range: '15m',
		search: '',
		focusPath: [], /* names from the root's child down to the focused node */
		data: null, /* {unit, total, root} with parent/depth added */
		focus: null,
		hover: null,
		rects: [],
		seq: 0,
		request: null,
		topSort: 'self',
		top: null, /* [{name, self, total}] for the current data */
	};

	const flame = { state: 'idle', unit: '', total: 0, request: null, nodes: [] };
	window.profdFlame = flame;

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
		return `${p >= 10 ? p.toFixed(1) : p.toFixed(2)}%`;
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

	/* ---------- URL state ---------- */

	function readUrl() {
		const p = new URLSearchParams(location.search);
		state.type = p.get('type') || '';
		state.query = p.get('query') || '';
		state.range = RANGES[p.get('range')] ? p.get('range') : '15m';
		state.search = p.get('search') || '';
		const f = p.get('focus');
		state.focusPath = f ? f.split(';').filter(Boolean) : [];
	}

	function writeUrl() {
		const p = new URLSearchParams();
		if (state.type) p.set('type', state.type);
		if (state.query) p.set('query', state.query);
		p.set('range', state.range);
		if (state.search) p.set('search', state.search);
		if (state.focusPath.length) p.set('focus', state.focusPath.join(';'));
		const url = `${location.pathname}?${p.toString()}`;
		if (url !== location.pathname + location.search) history.replaceState(null, '', url);
	}

	/* ---------- API ---------- */

	async function api(path, params) {
		const url = new URL(path, location.href);
		for (const [k, v] of Object.entries(params)) {
			if (v !== undefined && v !== null && v !== '') url.searchParams.set(k, v);
		}
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
			throw new Error(`The server answered ${res.status}${res.statusText ? ' ' + res.statusText : ''}${reason ? ': ' + reason : ''}`);
		}
		try {
			return JSON.parse(text);
		} catch (e) {
			throw new Error('The server answered with something that is not JSON.');
		}
	}

	/* ---------- messages ---------- */

	function showMessage(kind, title, detail) {
		el.message.className = `message visible ${kind}`;
		el.message.innerHTML = `<strong>${escapeHtml(title)}</strong>${detail ? `<span>${detail}</span>` : ''}`;
	}

	function hideMessage() {
		el.message.className = 'message';
		el.message.innerHTML = '';
	}

	function setFlameState(s) {
		flame.state = s;
		el.canvas.dataset.state = s;
		el.flamePanel.dataset.state = s;
	}

	/* ---------- profile types ---------- */

	async function loadTypes() {
		el.status.textContent = `Server ${location.host}`;
		let list;
		try {
			/* Types seen over at least a day, so the choice does not flicker with the range. */
			const wide = ['6h', '24h'].includes(state.range) ? state.range : '24h';
			list = await api('api/v1/profile-types', { from: `now-${wide}`, to: 'now' });
		} catch (e) {
			el.type.innerHTML = '<option value="">(unavailable)</option>';
			setFlameState('error');
			showMessage('error', 'Could not load the profile types', escapeHtml(e.message));
			return false;
		}
		if (!Array.isArray(list)) list = list.types || list.profile_types || [];
		const ids = list.map((t) => (typeof t === 'string' ? t : t.id || t.name)).filter(Boolean);
		if (state.type && !ids.includes(state.type)) ids.unshift(state.type); /* shared link */
		el.type.innerHTML = '';
		for (const id of ids) {
			const t = parseType(id);
			const o = document.createElement('option');
			o.value = id;
			o.textContent = t.label;
			o.title = id;
			el.type.appendChild(o);
		}
		if (!ids.length) {
			el.type.innerHTML = '<option value="">No profile types yet</option>';
			setFlameState('empty');
			showMessage('empty', 'No profiles stored yet',
				'Start an agent with <code>profd agent --server URL</code> or send profiles to this server; types appear here as soon as data arrives.');
			return false;
		}
		if (!state.type) state.type = ids.find((id) => /(^|:)cpu:/.test(id)) || ids[0];
		el.type.value = state.type;
		return true;
	}

	/* ---------- flame graph data ---------- */

	/* Add parent and depth links, sort children by name (stable layout), count nodes. */
	function prepare(root) {
		let count = 0;
		const stack = [[root, null, 0]];
		while (stack.length) {
			const [n, parent, depth] = stack.pop();
			n.parent = parent;
			n.depth = depth;
			n.self = +n.self || 0;
			n.total = +n.total || 0;
			n.name = n.name == null ? '' : String(n.name);
			n.children = Array.isArray(n.children) ? n.children : [];
			n.children.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
			count++;
			for (const c of n.children) stack.push([c, n, depth + 1]);
		}
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

	async function run() {
		state.type = el.type.value;
		state.query = el.query.value.trim();
		state.range = el.range.value;
		writeUrl();
		if (!state.type) return;
		const seq = ++state.seq;
		const request = { type: state.type, query: state.query, from: `now-${state.range}`, to: 'now' };
		state.request = request;
		flame.request = request;
		setFlameState('loading');
		el.run.disabled = true;
		el.summary.textContent = 'Loading…';
		if (!state.data) showMessage('loading', 'Loading flame graph…', '');
		let data;
		try {
			data = await api('api/v1/flamegraph', { ...request, max_nodes: MAX_NODES });
		} catch (e) {
			if (seq !== state.seq) return;
			el.run.disabled = false;
			state.data = null;
			clearCanvas();
			renderTop();
			setFlameState('error');
			el.summary.textContent = '';
			showMessage('error', 'Could not load the flame graph', escapeHtml(e.message));
			return;
		}
		if (seq !== state.seq) return; /* a newer query was started meanwhile */
		el.run.disabled = false;
		if (!data || !data.root) data = { unit: '', total: 0, root: { name: 'total', self: 0, total: 0, children: [] } };
		data.nodeCount = prepare(data.root);
		data.total = +data.total || data.root.total;
		state.data = data;
		flame.unit = data.unit || '';
		flame.total = data.total;
		state.focus = (state.focusPath.length && nodeAtPath(data.root, state.focusPath)) || null;
		if (!state.focus) state.focusPath = [];
		state.top = aggregateTop(data.root);
		if (!data.total || !data.root.children.length) {
			clearCanvas();
			renderTop();
			setFlameState('empty');
			el.summary.textContent = '';
			renderBreadcrumb();
			const what = state.query ? `matching <code>${escapeHtml(state.query)}</code>` : 'of this type';
			showMessage('empty', `No samples in ${RANGES[state.range]}`,
				`Nothing ${what} was recorded then. Check the selector, pick another profile type, or widen the time range.`);
			return;
		}
		hideMessage();
		render();
		renderTop();
		setFlameState('ready');
	}

	/* ---------- layout and drawing ---------- */

	function clearCanvas() {
		state.rects = [];
		flame.nodes = [];
		el.canvas.style.height = '0px';
		el.canvas.height = 0;
		hideTooltip();
	}

	/* Warm palette (Brendan Gregg's "hot"), stable per function name. */
	const colorCache = new Map();
	function hash(s) {
		let h = 2166136261;
		for (let i = 0; i < s.length; i++) {
			h ^= s.charCodeAt(i);
			h = Math.imul(h, 16777619);
		}
		return h >>> 0;
	}
	function frameColor(name) {
		let c = colorCache.get(name);
		if (!c) {
			const h = hash(name);
			const v1 = (h & 0xff) / 255;
			const v2 = ((h >>> 8) & 0xff) / 255;
			const v3 = ((h >>> 16) & 0xff) / 255;
			const r = 205 + Math.round(50 * v3);
			const g = 70 + Math.round(160 * v1);
			const b = Math.round(55 * v2);
			c = `rgb(${r},${g},${b})`;
			colorCache.set(name, c);
		}
		return c;
	}

	function matches(node) {
		return state.search && node.name.toLowerCase().includes(state.search.toLowerCase());
	}

	function layout(width) {
		const data = state.data;
		const focus = state.focus || data.root;
		const rects = [];
		const chain = [];
		for (let n = focus; n; n = n.parent) chain.push(n);
		chain.reverse();
		chain.forEach((n, i) => rects.push({ node: n, x: 0, y: i * ROW_H, w: width, h: ROW_H - 1, ancestor: n !== focus }));
		const scale = focus.total > 0 ? width / focus.total : 0;
		const stack = [[focus, 0]];
		let maxDepth = chain.length - 1;
		while (stack.length) {
			const [n, x] = stack.pop();
			let cx = x;
			for (const c of n.children) {
				const w = c.total * scale;
				if (w >= MIN_W) {
					const depth = c.depth;
					rects.push({ node: c, x: cx, y: depth * ROW_H, w, h: ROW_H - 1, ancestor: false });
					if (depth > maxDepth) maxDepth = depth;
					stack.push([c, cx]);
				}
				cx += w;
			}
		}
		return { rects, height: (maxDepth + 1) * ROW_H };
	}

	function render() {
		const data = state.data;
		if (!data) return;
		const width = Math.max(100, Math.floor(el.canvas.getBoundingClientRect().width || el.wrap.clientWidth - 28));
		const { rects, height } = layout(width);
		const dpr = window.devicePixelRatio || 1;
		el.canvas.width = Math.round(width * dpr);
		el.canvas.height = Math.round(height * dpr);
		el.canvas.style.height = `${height}px`;
		const ctx = el.canvas.getContext('2d');
		ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
		ctx.clearRect(0, 0, width, height);
		ctx.font = FONT;
		ctx.textBaseline = 'middle';
		const charW = ctx.measureText('MMMMMMMMMM').width / 10;
		const searching = !!state.search;

		for (const r of rects) {
			const n = r.node;
			const w = Math.max(r.w - (r.w > 2 ? 1 : 0), 0.5);
			let fill;
			if (n === data.root) fill = '#c8ccd3';
			else fill = frameColor(n.name);
			if (searching && !matches(n)) fill = '#e4e6ea';
			else if (searching) fill = '#d94fbf';
			ctx.globalAlpha = r.ancestor ? 0.5 : 1;
			ctx.fillStyle = fill;
			ctx.fillRect(r.x, r.y, w, r.h);
			if (r.w - TEXT_PAD * 2 >= charW * 2) {
				const maxChars = Math.floor((r.w - TEXT_PAD * 2) / charW);
				let label = n === data.root ? `total · ${fmtValue(n.total, data.unit)}` : n.name;
				if (label.length > maxChars) label = maxChars > 1 ? label.slice(0, maxChars - 1) + '…' : '';
				if (label) {
					ctx.fillStyle = searching && !matches(n) && n !== data.root ? '#8a929e' : '#1b1f27';
					ctx.fillText(label, r.x + TEXT_PAD, r.y + r.h / 2 + 0.5);
				}
			}
		}
		ctx.globalAlpha = 1;
		if (state.hover) {
			const r = rects.find((x) => x.node === state.hover);
			if (r) {
				ctx.strokeStyle = '#1b1f27';
				ctx.lineWidth = 1.5;
				ctx.strokeRect(r.x + 0.75, r.y + 0.75, Math.max(r.w - 2.5, 1), r.h - 1.5);
			}
		}
		state.rects = rects;
		flame.nodes = rects.map((r) => ({
			name: r.node.name,
			x: r.x,
			y: r.y,
			w: r.w,
			h: r.h,
			self: r.node.self,
			total: r.node.total,
			depth: r.node.depth,
		}));
		renderBreadcrumb();
		renderSummary();
		renderSearch();
	}

	function renderSummary() {
		const d = state.data;
		if (!d) {
			el.summary.textContent = '';
			return;
		}
		const t = parseType(state.type);
		const what = t.sampleType ? `${t.sampleType}` : 'total';
		el.summary.textContent = `${fmtValue(d.total, d.unit)} ${what} · ${fmtCount(d.nodeCount)} nodes · ${RANGES[state.range]}`;
	}

	function renderBreadcrumb() {
		const bc = el.breadcrumb;
		bc.innerHTML = '';
		const d = state.data;
		el.reset.disabled = !state.focus;
		if (!d || !d.total) return;
		const chain = [];
		for (let n = state.focus || d.root; n; n = n.parent) chain.push(n);
		chain.reverse();
		chain.forEach((n, i) => {
			if (i > 0) {
				const s = document.createElement('span');
				s.className = 'sep';
				s.textContent = '›';
				bc.appendChild(s);
			}
			const label = n === d.root ? 'total' : n.name;
			if (i === chain.length - 1) {
				const c = document.createElement('span');
				c.className = 'current';
				c.textContent = label;
				c.title = `${label} — ${fmtValue(n.total, d.unit)} (${fmtPct(n.total, d.total)})`;
				bc.appendChild(c);
			} else {
				const b = document.createElement('button');
				b.type = 'button';
				b.textContent = label;
				b.title = `Zoom out to ${label}`;
				b.addEventListener('click', () => zoom(n === d.root ? null : n));
				bc.appendChild(b);
			}
		});
	}

	function renderSearch() {
		const d = state.data;
		if (!state.search || !d) {
			el.searchResult.textContent = '';
			return;
		}
		/* Share of samples passing through a match (nested matches counted once). */
		let n = 0;
		let sum = 0;
		const stack = [[d.root, false]];
		while (stack.length) {
			const [node, under] = stack.pop();
			const m = node !== d.root && matches(node);
			if (m) n++;
			if (m && !under) sum += node.total;
			for (const c of node.children) stack.push([c, under || m]);
		}
		el.searchResult.textContent = n ? `${fmtCount(n)} matches · ${fmtPct(sum, d.total)} of total` : 'no matches';
	}

	/* ---------- top functions ---------- */

	/*
	 * Per function name: self summed over all its frames; total summed over
	 * frames with no ancestor of the same name, so recursion is not counted
	 * twice (pprof's "cum").
	 */
	function aggregateTop(root) {
		const by = new Map();
		const onPath = new Map();
		const stack = [[root, false]];
		while (stack.length) {
			const [n, leaving] = stack.pop();
			if (n === root) {
				if (!leaving)
					for (const c of n.children) stack.push([c, false]);
				continue;
			}
			if (leaving) {
				const k = onPath.get(n.name) - 1;
				if (k) onPath.set(n.name, k);
				else onPath.delete(n.name);
				continue;
			}
			let e = by.get(n.name);
			if (!e) {
				e = { name: n.name, self: 0, total: 0 };
				by.set(n.name, e);
			}
			e.self += n.self;
			if (!onPath.has(n.name)) e.total += n.total;
			onPath.set(n.name, (onPath.get(n.name) || 0) + 1);
			stack.push([n, true]);
			for (const c of n.children) stack.push([c, false]);
		}
		return [...by.values()];
	}

	function barCell(v, whole) {
		const pct = whole ? Math.max(0, Math.min(100, (100 * v) / whole)) : 0;
		return `<td class="col-bar"><div class="bar"><span class="bar-pct">${fmtPct(v, whole)}</span><span class="bar-track"><span class="bar-fill" style="display:block;width:${pct.toFixed(2)}%"></span></span></div></td>`;
	}

	const TOP_ROWS = 200;
	function renderTop() {
		const d = state.data;
		if (!d || !d.total || !state.top) {
			el.topPanel.hidden = true;
			return;
		}
		el.topPanel.hidden = false;
		const key = state.topSort;
		const rows = state.top.slice().sort((a, b) => b[key] - a[key] || (a.name < b.name ? -1 : 1));
		const shown = rows.slice(0, TOP_ROWS);
		el.topSummary.textContent = rows.length > TOP_ROWS ? `top ${TOP_ROWS} of ${fmtCount(rows.length)} functions by ${key}` : `${fmtCount(rows.length)} functions, by ${key}`;
		for (const th of el.topTable.querySelectorAll('th.sortable'))
			th.setAttribute('aria-sort', th.dataset.sort === key ? 'descending' : 'none');
		const sel = state.search.toLowerCase();
		el.topTable.tBodies[0].innerHTML = shown
			.map((r) => `<tr data-name="${escapeHtml(r.name)}"${sel && r.name.toLowerCase() === sel ? ' class="selected"' : ''}>` +
				`<td class="col-fn" title="${escapeHtml(r.name)}">${escapeHtml(r.name)}</td>` +
				`<td class="col-num">${escapeHtml(fmtValue(r.self, d.unit))}</td>${barCell(r.self, d.total)}` +
				`<td class="col-num">${escapeHtml(fmtValue(r.total, d.unit))}</td>${barCell(r.total, d.total)}</tr>`)
			.join('');
	}

	function zoom(node) {
		state.focus = node && node.parent ? node : null;
		state.focusPath = state.focus ? pathOf(state.focus) : [];
		state.hover = null;
		hideTooltip();
		writeUrl();
		render();
	}

	/* ---------- pointer: hover and click ---------- */

	function rectAt(ev) {
		const b = el.canvas.getBoundingClientRect();
		const x = ev.clientX - b.left;
		const y = ev.clientY - b.top;
		const row = Math.floor(y / ROW_H);
		for (let i = state.rects.length - 1; i >= 0; i--) {
			const r = state.rects[i];
			if (Math.floor(r.y / ROW_H) === row && x >= r.x && x < r.x + Math.max(r.w, 1)) return r;
		}
		return null;
	}

	function showTooltip(r, ev) {
		const d = state.data;
		const n = r.node;
		const unit = d.unit;
		const name = n === d.root ? 'total (all samples)' : n.name;
		let rows = `<tr><td class="k">Self</td><td class="v">${escapeHtml(fmtValue(n.self, unit))}</td><td class="p">${fmtPct(n.self, d.total)}</td></tr>`;
		rows += `<tr><td class="k">Total</td><td class="v">${escapeHtml(fmtValue(n.total, unit))}</td><td class="p">${fmtPct(n.total, d.total)}</td></tr>`;
		if (state.focus && n !== state.focus && state.focus.total && !r.ancestor)
			rows += `<tr><td class="k">Of zoomed</td><td class="v"></td><td class="p">${fmtPct(n.total, state.focus.total)}</td></tr>`;
		el.tooltip.innerHTML = `<div class="tt-name">${escapeHtml(name)}</div><table>${rows}</table>`;
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

	el.canvas.addEventListener('mousemove', (ev) => {
		if (!state.data) return;
		const r = rectAt(ev);
		const node = r ? r.node : null;
		if (node !== state.hover) {
			state.hover = node;
			render();
		}
		if (r) showTooltip(r, ev);
		else hideTooltip();
	});
	el.canvas.addEventListener('mouseleave', () => {
		hideTooltip();
		if (state.hover) {
			state.hover = null;
			render();
		}
	});
	el.canvas.addEventListener('click', (ev) => {
		const r = rectAt(ev);
		if (r) zoom(r.node);
	});

	/* ---------- controls ---------- */

	el.form.addEventListener('submit', (ev) => {
		ev.preventDefault();
		run();
	});
	el.refresh.addEventListener('click', () => run());
	el.type.addEventListener('change', () => {
		state.focusPath = [];
		run();
	});
	el.range.addEventListener('change', () => run());
	el.reset.addEventListener('click', () => zoom(null));
	el.topTable.tHead.addEventListener('click', (ev) => {
		const th = ev.target.closest('th.sortable');
		if (!th) return;
		state.topSort = th.dataset.sort;
		renderTop();
	});
	el.topTable.tBodies[0].addEventListener('click', (ev) => {
		const tr = ev.target.closest('tr');
		if (!tr) return;
		/* Highlight that function in the flame graph (click again to clear). */
		const name = tr.dataset.name;
		el.search.value = state.search === name ? '' : name;
		el.search.dispatchEvent(new Event('input'));
	});
	el.search.addEventListener('input', () => {
		state.search = el.search.value.trim();
		writeUrl();
		if (state.data && state.data.total) {
			render();
			renderTop();
		}
	});
	document.addEventListener('keydown', (ev) => {
		const typing = ev.target instanceof HTMLInputElement || ev.target instanceof HTMLSelectElement;
		if (ev.key === 'Escape') {
			if (typing && ev.target === el.search && el.search.value) {
				el.search.value = '';
				el.search.dispatchEvent(new Event('input'));
			} else if (state.focus) {
				zoom(null);
			}
		} else if (ev.key === '/' && !typing) {
			ev.preventDefault();
			el.search.focus();
		}
	});
	let resizePending = false;
	window.addEventListener('resize', () => {
		if (resizePending) return;
		resizePending = true;
		requestAnimationFrame(() => {
			resizePending = false;
			if (state.data && state.data.total) render();
		});
	});

	/* ---------- start ---------- */

	async function start() {
		readUrl();
		el.query.value = state.query;
		el.range.value = state.range;
		el.search.value = state.search;
		if (await loadTypes()) await run();
	}

	start();
})();
