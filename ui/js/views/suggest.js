// SPDX-License-Identifier: Apache-2.0
/*
 * suggest.js - the query bar's list: label names and values while a
 * selector is typed (from the labels API, so nothing offered selects
 * nothing), and for a bare word ("checkout") the services and the
 * functions whose names contain it: a service sets the selector to it,
 * a function opens it in the sandwich. A bare word is never sent to the
 * API as a selector.
 */
import { api } from '../api.js';
import { actions, pub } from '../ctx.js';
import { el } from '../dom.js';
import { escapeHtml, fmtValue } from '../format.js';
import { matchWord, queryKind, quoteValue } from '../query.js';
import { state, timeParams } from '../state.js';

const labelCache = { key: '', names: null, values: new Map() };
const suggest = { items: [], active: -1, ctx: null };
pub.views.suggest = suggest;
/* the labels a bare word is looked for in, first the one found */
const WORD_LABELS = ['service.name', 'process.executable.name', 'k8s.deployment.name'];

export function resetLabelCache() {
	labelCache.key = '';
}

function labelScope() {
	return { dataset: state.dataset, type: el.type.value, ...timeParams() };
}

export async function labelNames() {
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

export async function labelValues(name) {
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

/* What is being typed at the cursor: a label name, a label's value, or a bare word. */
function suggestContext() {
	const v = el.query.value;
	const pos = el.query.selectionStart == null ? v.length : el.query.selectionStart;
	const before = v.slice(0, pos);
	if (queryKind(v) === 'word') return { kind: 'word', word: v.trim(), start: 0, end: v.length };
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

/* Services (and the like) and functions matching @word: [{kind, label, value, text, note}]. */
export async function searchWord(word) {
	const names = await labelNames();
	const items = [];
	for (const label of WORD_LABELS) {
		if (!names.includes(label)) continue;
		for (const v of matchWord(await labelValues(label), word, 6)) items.push({ kind: 'label', label, value: String(v), text: String(v), note: label });
	}
	try {
		const t = await api('api/v1/table', { dataset: state.dataset, type: el.type.value, ...timeParams(), search: word, sort: 'total', limit: 8 });
		for (const r of t.rows || []) items.push({ kind: 'function', value: r.name, text: r.name, note: `function · ${fmtValue(r.total, t.unit)}` });
	} catch (e) {
		/* no functions to offer */
	}
	return items;
}

export async function updateSuggest(force) {
	const ctx = suggestContext();
	if (!ctx || (!force && document.activeElement !== el.query)) return closeSuggest();
	let items;
	if (ctx.kind === 'word') {
		items = await searchWord(ctx.word);
		if (!items.length) items = [{ kind: 'none', text: `Nothing is named like "${ctx.word}"`, note: 'no service, no function' }];
	} else if (ctx.kind === 'name') {
		items = (await labelNames()).filter((n) => n.toLowerCase().startsWith(ctx.prefix.toLowerCase())).map((n) => ({ kind: 'name', value: n, text: n, note: 'label' }));
	} else {
		items = (await labelValues(ctx.label)).filter((n) => String(n).toLowerCase().includes(ctx.prefix.toLowerCase())).map((n) => ({ kind: 'value', value: String(n), text: String(n), note: ctx.label }));
	}
	if (JSON.stringify(ctx) !== JSON.stringify(suggestContext())) return; /* typed on meanwhile */
	suggest.items = items.slice(0, 50);
	suggest.ctx = ctx;
	suggest.active = suggest.items.length && suggest.items[0].kind !== 'none' ? 0 : -1;
	if (!suggest.items.length) return closeSuggest();
	el.suggest.innerHTML = (ctx.kind === 'word' ? `<li class="sg-head" role="presentation">Search for “${escapeHtml(ctx.word)}”</li>` : '') + suggest.items
		.map((s, i) => `<li role="option" data-i="${i}" data-kind="${s.kind}"${i === suggest.active ? ' class="active" aria-selected="true"' : ''}><span class="sg-kind">${escapeHtml(s.note)}</span>${escapeHtml(s.text)}</li>`)
		.join('');
	el.suggest.hidden = false;
}

export function closeSuggest() {
	el.suggest.hidden = true;
	suggest.items = [];
	suggest.active = -1;
}

function pickSuggest(i) {
	const ctx = suggest.ctx;
	const item = suggest.items[i];
	if (!ctx || item === undefined || item.kind === 'none') return;
	if (ctx.kind === 'word') {
		closeSuggest();
		if (item.kind === 'label') {
			el.query.value = `{${item.label}=${quoteValue(item.value)}}`;
			actions.run();
		} else {
			el.query.value = state.query;
			actions.selectFunction(item.value, true);
		}
		return;
	}
	const v = el.query.value;
	let ins;
	let caret;
	if (ctx.kind === 'name') {
		ins = `${ctx.needBrace ? '{' : ''}${item.value}="`;
		caret = ctx.start + ins.length;
		ins += `"${ctx.needBrace || !v.includes('}') ? '}' : ''}`;
	} else {
		const esc = ctx.op === '=' || ctx.op === '!=' ? item.value.replace(/\\/g, '\\\\').replace(/"/g, '\\"') : item.value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
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

let typing = 0;
el.query.addEventListener('input', () => {
	/* a bare word asks the API: wait for a pause in typing */
	clearTimeout(typing);
	if (queryKind(el.query.value) === 'word') typing = setTimeout(updateSuggest, 200);
	else updateSuggest();
});
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
		el.suggest.querySelectorAll('li[data-i]').forEach((li, i) => li.classList.toggle('active', i === suggest.active));
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
	const li = ev.target.closest('li[data-i]');
	if (!li) return;
	ev.preventDefault();
	pickSuggest(+li.dataset.i);
});
