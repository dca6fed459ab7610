// SPDX-License-Identifier: Apache-2.0
/*
 * chart.js - the time series over the views (/api/v1/series "sum by" a
 * label) and the uPlot drawing the compare sides share.
 *
 * Cumulative types are drawn as rates (the API's `rates`, unit per
 * second): CPU time as cores busy, allocations as bytes/s, counts per
 * second, so a zoom does not change the height of the line. Gauges
 * (in-use memory, goroutines) are drawn as the API's mean per step and
 * the legend gives their mean over the range, the figure the flame
 * graph gives for them. Hovering shows each series' value at the cursor
 * in the legend.
 */
import { Slot } from '../api.js';
import { actions, pub } from '../ctx.js';
import { busy, cssVar, el, hideMsg, showMsg } from '../dom.js';
import { escapeHtml, fmtCount, fmtDuration, fmtRate, fmtTick, fmtTime, fmtValue, rateAxisName } from '../format.js';
import { addMatchers } from '../query.js';
import { seriesGroups } from '../series.js';
import { selection, state } from '../state.js';
import { emptyWords, rangeWords } from './common.js';

/* How a y value of this answer reads: a rate for cumulative types, the value (a mean) for gauges. */
function yFormat(data) {
	return data.cumulative ? (v) => fmtRate(v, data.unit) : (v) => fmtValue(v, data.unit);
}

/*
 * A uPlot chart of a series answer in @node; onSelect(fromMs, toMs) when
 * the user drags across it; onHover(idx) as the cursor moves (null when
 * it leaves). @band: {from, to, fill, edge}, a shaded range. Returns
 * the uPlot instance or null.
 */
export function drawChart(node, data, height, onSelect, old, band, onHover) {
	if (old) old.destroy();
	node.replaceChildren();
	if (!window.uPlot) {
		node.innerHTML = '<div class="message visible error"><strong>The chart library is missing</strong><span>vendor/uPlot.iife.min.js was not found next to the page: run <code>make deps</code> (it copies uPlot from npm).</span></div>';
		return null;
	}
	const text = cssVar('--muted') || '#5f6b7a';
	const grid = cssVar('--grid') || '#eceef1';
	const xs = data.timestamps.map((t) => t / 1000);
	const series = [{}];
	const cols = [xs];
	for (const g of seriesGroups(data)) {
		series.push({ label: g.label, stroke: g.color, width: 1.5, fill: `${g.color}22`, points: { show: false } });
		cols.push(g.values);
	}
	const yf = yFormat(data);
	const span = xs.length > 1 ? xs[xs.length - 1] - xs[0] : 0;
	const u = new window.uPlot({
		width: Math.max(200, node.clientWidth),
		height,
		legend: { show: false },
		cursor: { drag: { x: true, y: false, setScale: false }, points: { show: false } },
		select: { show: true },
		scales: { x: { time: true } },
		series,
		axes: [
			{ stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, values: (_, vals) => vals.map((v) => fmtTick(v * 1000, span > 86400 * 2)) },
			{
				stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid }, size: 78,
				label: data.cumulative ? rateAxisName(data.unit) : `mean ${data.unit || ''}`.trim(), labelSize: 16,
				values: (_, vals) => vals.map(yf),
			},
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
			setCursor: [(uu) => {
				if (onHover) onHover(uu.cursor.idx == null || uu.cursor.left < 0 ? null : uu.cursor.idx);
			}],
		},
	}, cols, node);
	return u;
}

const slot = new Slot();
export const chart = { state: 'idle', groups: [], u: null, data: null, hover: null };
pub.views.chart = chart;
const panel = document.getElementById('chart-panel');

function clearChart() {
	if (chart.u) chart.u.destroy();
	chart.u = null;
	el.chart.replaceChildren();
	el.legend.replaceChildren();
	el.chartSummary.textContent = '';
}

export async function loadChart() {
	const t = slot.begin();
	chart.state = 'loading';
	busy(panel, true);
	if (!chart.data) showMsg(el.chartMsg, 'loading', 'Loading…', '');
	let data;
	try {
		data = await t.get('api/v1/series', selection({ group_by: state.groupBy, limit: 10 }));
	} catch (e) {
		if (e.aborted || !t.current) return;
		busy(panel, false);
		chart.state = 'error';
		chart.data = null;
		clearChart();
		showMsg(el.chartMsg, 'error', 'Could not load the time series', escapeHtml(e.message));
		return;
	}
	if (!t.current) return;
	busy(panel, false);
	chart.data = data;
	chart.groups = seriesGroups(data);
	if (!data.samples) {
		chart.state = 'empty';
		clearChart();
		showMsg(el.chartMsg, 'empty', `No samples in ${rangeWords()}`, emptyWords());
		return;
	}
	hideMsg(el.chartMsg);
	renderChart();
	chart.state = 'ready';
}

/* Cursor at step @idx: each series' value there, in the legend (and the model). */
function showHover(idx) {
	const data = chart.data;
	if (!data) return;
	const yf = yFormat(data);
	if (idx == null) {
		chart.hover = null;
		for (const li of el.legend.querySelectorAll('li')) {
			const v = li.querySelector('.lg-val');
			v.textContent = '';
			delete li.dataset.value;
		}
		el.legend.dataset.at = '';
		return;
	}
	const at = data.timestamps[idx];
	chart.hover = { idx, time: at, values: chart.groups.map((g) => ({ label: g.label, value: g.values[idx] })) };
	el.legend.dataset.at = fmtTime(at);
	el.legend.querySelectorAll('li').forEach((li, i) => {
		const g = chart.groups[i];
		const v = g ? g.values[idx] : null;
		li.dataset.value = v == null ? '' : String(v);
		li.querySelector('.lg-val').textContent = v == null ? '' : `${yf(v)} at ${fmtTime(at)}`;
	});
}

export function renderChart() {
	const data = chart.data;
	if (!data || !data.samples) return;
	chart.u = drawChart(el.chart, data, 170, (a, b) => actions.setAbsRange(a, b), chart.u, null, showHover);
	chart.axis = data.cumulative ? rateAxisName(data.unit) : `mean ${data.unit}`;
	const agg = data.cumulative ? `${rateAxisName(data.unit)} (rate per second)` : 'mean per step';
	el.chartSummary.textContent = `${fmtCount(data.samples)} samples · ${agg}, step ${fmtDuration(data.step_ms * 1e6)}${state.groupBy ? ` · sum by ${state.groupBy}` : ''}`;
	el.legend.innerHTML = chart.groups
		.map((g, i) => `<li data-i="${i}"${g.other || !state.groupBy ? ' class="static"' : ''} title="${g.other || !state.groupBy ? '' : 'Filter to this group'}" data-label="${escapeHtml(g.label)}" data-total="${g.total}">` +
			`<span class="sw" style="background:${g.color}"></span><span class="lg-name">${escapeHtml(g.label)}</span>` +
			`<span class="lg-total">${escapeHtml(fmtValue(g.total, data.unit))}${g.mean ? ' mean' : ' in all'}</span><span class="lg-val"></span></li>`)
		.join('');
}

el.legend.addEventListener('click', (ev) => {
	const li = ev.target.closest('li');
	if (!li || li.classList.contains('static')) return;
	const g = chart.groups[+li.dataset.i];
	if (!g || !g.labels) return;
	el.query.value = addMatchers(state.query, g.labels);
	actions.run();
});
