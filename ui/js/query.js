// SPDX-License-Identifier: Apache-2.0
/*
 * query.js - what the query bar holds: a selector ({service.name="x"}),
 * nothing, or a bare word to search for (a service, a function). Pure.
 */

/* 'empty', 'selector' (starts with "{"), or 'word' (anything else: searched, never sent as a selector). */
export function queryKind(text) {
	const t = String(text || '').trim();
	if (!t || t === '{}') return 'empty';
	return t.startsWith('{') ? 'selector' : 'word';
}

/* A label value quoted for an "=" matcher. */
export function quoteValue(v) {
	return `"${String(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/* @selector with the matchers of @labels ({name: value}) added: `{a="1"}` + {b: 2} -> `{a="1", b="2"}`. */
export function addMatchers(selector, labels) {
	const add = Object.entries(labels).map(([k, v]) => `${k}=${quoteValue(v)}`).join(', ');
	const q = String(selector || '').trim();
	if (!q || q === '{}' || !q.startsWith('{') || !q.endsWith('}')) return `{${add}}`;
	return `${q.slice(0, -1).replace(/\s*,?\s*$/, '')}, ${add}}`;
}

/* Items of @list containing @word (case-insensitive), those starting with it first, at most @max. */
export function matchWord(list, word, max = 8) {
	const w = String(word).toLowerCase();
	const hits = list.filter((x) => String(x).toLowerCase().includes(w));
	hits.sort((a, b) => String(b).toLowerCase().startsWith(w) - String(a).toLowerCase().startsWith(w));
	return hits.slice(0, max);
}
