// SPDX-License-Identifier: Apache-2.0
/*
 * state.js - the explorer's one selection and how it lives in the URL.
 *
 * `state` is the single mutable object every view reads (dataset, type,
 * selector, range, view filters, view options, compare sides). The URL
 * holds all of it, so a reload, a copied link or Back restores the
 * page: stateFromSearch / searchFromState convert both ways and are
 * pure (node --test runs them); the keys are listed in searchFromState.
 * The API parameters of the selection are built here too, so that every
 * view asks for the same samples; a trace / span ID narrows all of them
 * to that request's samples (trace_id / span_id, docs/api.md).
 */

export const PRESETS = {
	'5m': ['the last 5 minutes', 5 * 60e3],
	'15m': ['the last 15 minutes', 15 * 60e3],
	'1h': ['the last hour', 3600e3],
	'6h': ['the last 6 hours', 6 * 3600e3],
	'24h': ['the last 24 hours', 24 * 3600e3],
	'7d': ['the last 7 days', 7 * 24 * 3600e3],
};
export const VIEWS = ['overview', 'flame', 'table', 'sandwich', 'flamechart', 'compare', 'health'];
/* The hide presets the API knows (query/filter.h), as hide= takes them. */
export const HIDE_PRESETS = ['go', 'jvm', 'libc', 'kernel', 'python', 'ruby', 'php', 'node'];
/* What fold= collapses (query_stackset_fold); '' = none, the API's default. */
export const FOLDS = ['recursion', 'library', 'recursion,library'];
const COLORS = ['hot', 'package', 'frametype'];
const SORTS = ['self', 'total', 'name', 'samples', 'file', 'binary'];

export function blankState() {
	return {
		dataset: '',
		type: '',
		query: '',
		trace: '', /* 32 lowercase hex digits, or '' */
		span: '', /* 16 lowercase hex digits, or '' */
		range: '1h', /* a preset key or 'abs' */
		from: 0, /* ms, when range is 'abs' */
		to: 0,
		groupBy: '',
		view: 'flame',
		search: '',
		focusPath: [],
		fn: '', /* the selected function: sandwich, highlighted in the flame graph */
		sf: [], /* stack filter regexes (OR'ed: a stack with a frame matching any) */
		ff: [], /* frame filter regexes */
		hide: [],
		fold: '', /* one of FOLDS, or '' */
		invert: false,
		icicle: true,
		color: 'hot',
		sort: 'self',
		tableSearch: '',
		lanes: '',
		fcTop: 20, /* flame chart lanes drawn in full, the rest in "other"; 0: all */
		ovLabel: '', /* the overview's rows: one per value of this label */
		cmp: { aType: '', bType: '', aQuery: '', bQuery: '', aFrom: 0, aTo: 0, bFrom: 0, bTo: 0, mode: 'normalized' },
		types: [],
	};
}

export const state = blankState();

/* Fills @s from a URL query string @search ("?type=...&view=table"). */
export function stateFromSearch(search, s = state) {
	const p = new URLSearchParams(search);
	s.dataset = p.get('dataset') || '';
	s.type = p.get('type') || '';
	s.query = p.get('query') || '';
	const ids = parseTraceIds(p.get('trace') || '', p.get('span') || '');
	s.trace = ids.error ? '' : ids.trace;
	s.span = ids.error ? '' : ids.span;
	const from = +p.get('from');
	const to = +p.get('to');
	if (from > 0 && to > from) {
		s.range = 'abs';
		s.from = from;
		s.to = to;
	} else {
		s.range = PRESETS[p.get('range')] ? p.get('range') : '1h';
		s.from = s.to = 0;
	}
	s.groupBy = p.get('groupBy') || '';
	/* a bare visit lands on the overview; a link without a view (older
	 * links, the MCP server's) opens the flame graph as it always did */
	s.view = VIEWS.includes(p.get('view')) ? p.get('view') : [...p.keys()].length ? 'flame' : 'overview';
	s.search = p.get('search') || '';
	const f = p.get('focus');
	s.focusPath = f ? f.split(';').filter(Boolean) : [];
	s.fn = p.get('fn') || '';
	s.sf = p.getAll('sf').filter(Boolean);
	s.ff = p.getAll('ff').filter(Boolean);
	s.hide = (p.get('hide') || '').split(',').filter((x) => HIDE_PRESETS.includes(x));
	s.fold = FOLDS.includes(p.get('fold')) ? p.get('fold') : '';
	s.invert = p.get('invert') === '1';
	s.icicle = p.get('flame') !== '1';
	s.color = COLORS.includes(p.get('color')) ? p.get('color') : 'hot';
	s.sort = SORTS.includes(p.get('sort')) ? p.get('sort') : 'self';
	s.tableSearch = p.get('tsearch') || '';
	s.lanes = p.get('lanes') || '';
	s.fcTop = p.get('fctop') === 'all' ? 0 : [10, 20, 50, 100].includes(+p.get('fctop')) ? +p.get('fctop') : 20;
	s.ovLabel = p.get('ov') || '';
	const c = s.cmp;
	c.aType = p.get('a_type') || '';
	c.bType = p.get('b_type') || '';
	c.aQuery = p.get('a_query') || '';
	c.bQuery = p.get('b_query') || '';
	c.aFrom = +p.get('a_from') || 0;
	c.aTo = +p.get('a_to') || 0;
	c.bFrom = +p.get('b_from') || 0;
	c.bTo = +p.get('b_to') || 0;
	c.mode = p.get('mode') === 'absolute' ? 'absolute' : 'normalized';
	return s;
}

/* The URL query string (without "?") that stateFromSearch reads back into @s. */
export function searchFromState(s = state) {
	const p = new URLSearchParams();
	if (s.dataset) p.set('dataset', s.dataset);
	if (s.type) p.set('type', s.type);
	if (s.query) p.set('query', s.query);
	if (s.trace) p.set('trace', s.trace);
	if (s.span) p.set('span', s.span);
	if (s.range === 'abs') {
		p.set('from', String(s.from));
		p.set('to', String(s.to));
	} else {
		p.set('range', s.range);
	}
	if (s.groupBy) p.set('groupBy', s.groupBy);
	p.set('view', s.view);
	if (s.search) p.set('search', s.search);
	if (s.focusPath.length) p.set('focus', s.focusPath.join(';'));
	if (s.fn) p.set('fn', s.fn);
	for (const x of s.sf) p.append('sf', x);
	for (const x of s.ff) p.append('ff', x);
	if (s.hide.length) p.set('hide', s.hide.join(','));
	if (s.fold) p.set('fold', s.fold);
	if (s.invert) p.set('invert', '1');
	if (!s.icicle) p.set('flame', '1');
	if (s.color !== 'hot') p.set('color', s.color);
	if (s.sort !== 'self') p.set('sort', s.sort);
	if (s.tableSearch) p.set('tsearch', s.tableSearch);
	if (s.lanes) p.set('lanes', s.lanes);
	if (s.fcTop !== 20) p.set('fctop', s.fcTop ? String(s.fcTop) : 'all');
	if (s.ovLabel) p.set('ov', s.ovLabel);
	const c = s.cmp;
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
	return p.toString();
}

/* The range as the API takes it: absolute ms, or now-relative. */
export function timeParams(s = state) {
	if (s.range === 'abs') return { from: String(s.from), to: String(s.to) };
	return { from: `now-${s.range}`, to: 'now' };
}

/* The range in ms, "now" read from @now. */
export function rangeMs(s = state, now = Date.now()) {
	if (s.range === 'abs') return [s.from, s.to];
	return [now - PRESETS[s.range][1], now];
}

/*
 * The view filters as API parameters. The chips go as repeated
 * stack_filter / frame_filter parameters, which the server joins so
 * that each means what it means alone (docs/api.md); joining them here
 * would let one chip's \Q or group numbers reach into the next.
 */
export function filterParams(s = state) {
	return { stack_filter: s.sf.slice(), frame_filter: s.ff.slice(), hide: s.hide.join(','), fold: s.fold };
}

/*
 * The trace and span fields of the query bar: a trace ID (32 hex
 * digits), or a W3C traceparent ("00-<trace>-<span>-01", which gives the
 * span too), and a span ID (16 hex digits); either may be empty. Returns
 * { trace, span } in lower case, or { error } saying which is wrong.
 */
export function parseTraceIds(trace, span) {
	let t = trace.trim().toLowerCase();
	let sp = span.trim().toLowerCase();
	const tp = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/.exec(t);
	if (tp) {
		t = tp[1];
		sp = sp || tp[2];
	}
	if (t && !/^[0-9a-f]{32}$/.test(t)) return { error: 'A trace ID is 32 hex digits (or a traceparent)' };
	if (sp && !/^[0-9a-f]{16}$/.test(sp)) return { error: 'A span ID is 16 hex digits' };
	return { trace: t, span: sp };
}

/* The trace / span of the selection as API parameters ({} when none). */
export function traceParams(s = state) {
	const p = {};
	if (s.trace) p.trace_id = s.trace;
	if (s.span) p.span_id = s.span;
	return p;
}

/*
 * The time window of a flame chart answer's samples (/api/v1/flamechart:
 * spans [start ns from from_ms, duration ns, ...] per lane) as
 * [from, to] ms, widened by @padMs on each side and to at least 1 s, or
 * null when it has no span. With the trace / span selected, that is the
 * span's (or trace's) window.
 */
export function traceWindow(data, padMs = 100) {
	let lo = Infinity;
	let hi = -Infinity;
	for (const lane of (data && data.lanes) || [])
		for (const sp of lane.spans || []) {
			lo = Math.min(lo, sp[0]);
			hi = Math.max(hi, sp[0] + sp[1]);
		}
	if (!(hi >= lo)) return null;
	let a = data.from_ms + Math.floor(lo / 1e6) - padMs;
	let b = data.from_ms + Math.ceil(hi / 1e6) + padMs;
	if (b - a < 1000) {
		const mid = Math.round((a + b) / 2);
		a = mid - 500;
		b = mid + 500;
	}
	return [a, b];
}

/* The selection and the view filters, as API parameters, with @extra. */
export function selection(extra, s = state) {
	return {
		dataset: s.dataset,
		type: s.type,
		query: s.query,
		...traceParams(s),
		...timeParams(s),
		...filterParams(s),
		...(extra || {}),
	};
}
