// SPDX-License-Identifier: Apache-2.0
/*
 * overview.js - the landing view: one row per service (or per value of
 * any label picked), a sparkline of the selected type over the range and
 * its total, heaviest first; a click opens the flame graph of that row.
 * One request: /api/v1/series grouped by the label, every group (limit=0).
 */
import { Slot } from '../api.js';
import { actions, pub } from '../ctx.js';
import { busy, cssVar, el, hideMsg, showMsg, $ } from '../dom.js';
import { escapeHtml, fmtCount, fmtPct, fmtRate, fmtValue } from '../format.js';
import { quoteValue } from '../query.js';
import { rangeMs, selection, state } from '../state.js';
import { seriesGroups } from '../series.js';
import { emptyWords, rangeWords } from './common.js';

const slot = new Slot();
const viewNode = $('view-overview');
const tbody = $('ov-table').tBodies[0];
const labelSel = $('ov-label');
export const overview = { state: 'idle', rows: [], label: '' };
pub.views.overview = overview;
const SPARK_POINTS = 60;

/* The label of the rows: the one picked, else service.name, else the first label there is. */
export function overviewLabel(names) {
	if (state.ovLabel) return state.ovLabel;
	for (const n of ['service.name', 'process.executable.name', 'k8s.deployment.name']) if (names.includes(n)) return n;
	return names[0] || 'service.name';
}

export function fillLabels(names) {
	const cur = overviewLabel(names);
	const opts = [...new Set([...names, cur])];
	labelSel.innerHTML = opts.map((n) => `<option value="${escapeHtml(n)}">${escapeHtml(n)}</option>`).join('');
	labelSel.value = cur;
}

export async function loadOverview() {
	const label = overviewLabel([...labelSel.options].map((o) => o.value));
	const t = slot.begin();
	overview.state = 'loading';
	busy(viewNode, true);
	if (!overview.rows.length) showMsg($('ov-message'), 'loading', 'Loading the services…', '');
	const [from, to] = rangeMs();
	const step = Math.max(1, Math.round((to - from) / SPARK_POINTS / 1000));
	let data;
	try {
		data = await t.get('api/v1/series', selection({ group_by: label, limit: 0, step: `${step}s` }));
	} catch (e) {
		if (e.aborted || !t.current) return;
		busy(viewNode, false);
		overview.state = 'error';
		overview.rows = [];
		tbody.replaceChildren();
		showMsg($('ov-message'), 'error', 'Could not load the overview', escapeHtml(e.message));
		return;
	}
	if (!t.current) return;
	busy(viewNode, false);
	overview.label = label;
	overview.data = data;
	const groups = seriesGroups(data).filter((g) => !g.other);
	groups.sort((a, b) => b.total - a.total || a.label.localeCompare(b.label));
	const all = groups.reduce((s, g) => s + g.total, 0);
	overview.rows = groups.map((g) => ({ value: g.labels ? g.labels[label] : '', total: g.total, values: g.values }));
	if (!overview.rows.length || !data.samples) {
		overview.state = 'empty';
		tbody.replaceChildren();
		$('ov-summary').textContent = '';
		showMsg($('ov-message'), 'empty', `No samples in ${rangeWords()}`, emptyWords());
		return;
	}
	hideMsg($('ov-message'));
	const unit = data.unit;
	const fmt = data.cumulative ? (v) => fmtRate(v, unit) : (v) => fmtValue(v, unit);
	tbody.innerHTML = overview.rows
		.map((r, i) => `<tr data-value="${escapeHtml(r.value)}" data-total="${r.total}" data-i="${i}" title="Open the flame graph of ${escapeHtml(label)}=${escapeHtml(r.value)}">` +
			`<td class="col-fn">${r.value === '' ? `<em>(no ${escapeHtml(label)})</em>` : escapeHtml(r.value)}</td>` +
			`<td class="col-spark"><canvas></canvas></td>` +
			`<td class="col-num">${escapeHtml(fmtValue(r.total, unit))}${data.cumulative ? '' : ' mean'}</td>` +
			`<td class="col-num">${fmtPct(r.total, all)}</td>` +
			`<td class="col-num sub">peak ${escapeHtml(fmt(Math.max(0, ...r.values)))}</td></tr>`)
		.join('');
	drawSparks();
	$('ov-summary').textContent = `${fmtCount(overview.rows.length)} ${label} values · ${fmtCount(data.samples)} samples in ${rangeWords()} · heaviest first`;
	overview.state = 'ready';
}

/* One sparkline per row: the row's values, scaled to the row's own peak. */
export function drawSparks() {
	const color = cssVar('--accent') || '#e0582b';
	const dpr = window.devicePixelRatio || 1;
	tbody.querySelectorAll('tr').forEach((tr, i) => {
		const r = overview.rows[i];
		const c = tr.querySelector('canvas');
		if (!r || !c) return;
		const w = Math.max(60, c.clientWidth);
		const h = 28;
		c.width = Math.round(w * dpr);
		c.height = Math.round(h * dpr);
		const ctx = c.getContext('2d');
		ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
		ctx.clearRect(0, 0, w, h);
		const max = Math.max(...r.values, 0);
		if (!max) return;
		const n = r.values.length;
		ctx.beginPath();
		r.values.forEach((v, k) => {
			const x = n > 1 ? (k / (n - 1)) * (w - 2) + 1 : w / 2;
			const y = h - 2 - (v / max) * (h - 4);
			if (k) ctx.lineTo(x, y);
			else ctx.moveTo(x, y);
		});
		ctx.strokeStyle = color;
		ctx.lineWidth = 1.25;
		ctx.stroke();
		ctx.lineTo(w - 1, h - 1);
		ctx.lineTo(1, h - 1);
		ctx.closePath();
		ctx.globalAlpha = 0.15;
		ctx.fillStyle = color;
		ctx.fill();
		ctx.globalAlpha = 1;
	});
}

tbody.addEventListener('click', (ev) => {
	const tr = ev.target.closest('tr[data-i]');
	if (!tr) return;
	const r = overview.rows[+tr.dataset.i];
	el.query.value = `{${overview.label}=${quoteValue(r.value)}}`;
	state.view = 'flame';
	actions.run(); /* reads the selector at once, loads the flame graph */
	actions.setView('flame');
});
labelSel.addEventListener('change', () => {
	state.ovLabel = labelSel.value;
	actions.rerunView();
});
