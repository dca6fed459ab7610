// SPDX-License-Identifier: Apache-2.0
/*
 * health.js - the stack health view (/api/v1/health/symbols): how much
 * of the selection is named and fully unwound, per binary, with what
 * would fix the rest, each hint its own line.
 */
import { Slot } from '../api.js';
import { pub } from '../ctx.js';
import { busy, el, hideMsg, showMsg, $ } from '../dom.js';
import { escapeHtml, fmtCount, fmtPct } from '../format.js';
import { state, timeParams } from '../state.js';
import { emptyWords, rangeWords } from './common.js';

const slot = new Slot();
const viewNode = $('view-health');
export const health = { state: 'idle', data: null };
pub.views.health = health;

const TRUNCATED_HINT = 'Some stacks through it are cut short ([truncated] root): deeper than the agent walks (its 16 KiB stack copy, or 127 frame-pointer frames).';

function clear() {
	el.healthCards.replaceChildren();
	el.healthTable.tBodies[0].replaceChildren();
	el.healthSummary.textContent = '';
}

function card(title, part, whole, what) {
	const p = whole ? part / whole : 1;
	const cls = p >= 0.99 ? 'good' : p >= 0.9 ? 'fair' : 'poor';
	return `<div class="card ${cls}"><div class="card-title">${escapeHtml(title)}</div><div class="card-value">${fmtPct(part, whole || 1)}</div>` +
		`<div class="card-sub">${fmtCount(part)} of ${fmtCount(whole)} ${escapeHtml(what)}</div><div class="meter"><span style="width:${(100 * p).toFixed(1)}%"></span></div></div>`;
}

/* The hints of binary @b, one item each. */
export function hintsOf(b) {
	return [b.hint, b.samples_truncated ? TRUNCATED_HINT : ''].filter(Boolean);
}

export async function loadHealth() {
	const t = slot.begin();
	health.state = 'loading';
	busy(viewNode, true);
	if (!health.data) showMsg(el.healthMsg, 'loading', 'Checking symbols…', '');
	let data;
	try {
		data = await t.get('api/v1/health/symbols', { dataset: state.dataset, type: state.type, query: state.query, ...timeParams() });
	} catch (e) {
		if (e.aborted || !t.current) return;
		busy(viewNode, false);
		health.state = 'error';
		health.data = null;
		clear();
		showMsg(el.healthMsg, 'error', 'Could not load the stack health', escapeHtml(e.message));
		return;
	}
	if (!t.current) return;
	busy(viewNode, false);
	health.data = data;
	if (!data.samples) {
		health.state = 'empty';
		clear();
		showMsg(el.healthMsg, 'empty', `No samples in ${rangeWords()}`, emptyWords());
		return;
	}
	hideMsg(el.healthMsg);
	const full = data.samples - data.samples_with_unsymbolized;
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
			`<td class="col-fix"><ul class="hints">${hintsOf(b).map((h) => `<li class="hint-item">${escapeHtml(h)}</li>`).join('')}</ul></td></tr>`).join('')
		: '<tr class="static"><td colspan="6" class="all-good">Every frame in this selection is named: no binary needs debug info.</td></tr>';
	const missing = bins.filter((b) => b.frames_symbolized < b.frames).length;
	el.healthSummary.textContent = `${fmtCount(data.samples)} samples · ${fmtCount(data.frames)} frames · ` +
		(missing ? `${missing} of ${bins.length} binar${bins.length === 1 ? 'y' : 'ies'} not fully symbolized` : bins.length ? `every binary symbolized (${bins.length} through the symbolizer)` : 'every frame named by its producer');
	health.state = 'ready';
}
