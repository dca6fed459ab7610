// SPDX-License-Identifier: Apache-2.0
/*
 * flamechart.js - the flame chart: samples along time, one lane per
 * group (/api/v1/flamechart group_by), for a fleet as for one process.
 *
 * Lanes are sorted by total, heaviest first; the top N are drawn in full
 * and the rest share one "other" lane (a strip of their sample density).
 * Every lane shows its full stack depth. Drawing is virtual: the scroll
 * box holds a spacer as tall as all lanes and one canvas the size of the
 * visible part, redrawn on scroll, so only what is on screen is drawn,
 * however many lanes and frames there are. The time axis stays on top
 * (a sticky canvas). The wheel scrolls; Ctrl+wheel or a drag zooms in
 * time, Esc resets.
 *
 * Per lane, spans are in time order and lcp[i] is the number of leading
 * frames span i shares with span i-1; at depth d neighbouring spans
 * merge into one run when both reach deeper than d and lcp > d.
 */
import { Slot } from '../api.js';
import { pub } from '../ctx.js';
import { busy, clearCanvas, cssVar, el, hideMsg, hideTooltip, innerWidth, showMsg, showTooltip, $ } from '../dom.js';
import { FONT, ROW_H, TEXT_PAD } from '../flamegraph.js';
import { escapeHtml, fmtCount, fmtDuration, fmtTick, fmtTime, fmtValue, labelWords } from '../format.js';
import { selection, state } from '../state.js';
import { colorOf, emptyWords, rangeWords } from './common.js';

export const FC_HEAD = 22; /* px: a lane's title row */
export const FC_AXIS = 24; /* px: the time axis */
const FC_GAP = 8;
const OTHER_H = 18;
export const FC_TOPS = [10, 20, 50, 100, 0]; /* lanes drawn in full; 0: all */
const NICE_NS = [1e6, 2e6, 5e6, 1e7, 2e7, 5e7, 1e8, 2e8, 5e8, 1e9, 2e9, 5e9, 1e10, 15e9, 3e10, 6e10, 12e10, 3e11, 6e11, 9e11, 18e11, 36e11, 72e11, 144e11, 216e11, 432e11, 864e11];

const slot = new Slot();
const viewNode = $('view-flamechart');
const axis = $('fc-axis');
const body = $('fc-body');

export const fc = { state: 'idle', data: null, lanes: [], view: null, rendered: 0, renderMs: 0, rects: [], layout: [], top: 20 };
pub.views.flamechart = fc;

/* Per lane: spans in time order, their common-prefix lengths, depth. */
function prepareLane(lane, stacks) {
	const spans = lane.spans.slice().sort((a, b) => a[0] - b[0]);
	const lcp = new Int32Array(spans.length);
	let depth = 0;
	let maxDur = 0;
	for (let i = 0; i < spans.length; i++) {
		const st = stacks[spans[i][2]];
		if (st.length > depth) depth = st.length;
		if (spans[i][1] > maxDur) maxDur = spans[i][1];
		if (i === 0) continue;
		const pv = stacks[spans[i - 1][2]];
		let k = 0;
		const n = Math.min(st.length, pv.length);
		if (st === pv) k = n;
		else while (k < n && st[k] === pv[k]) k++;
		lcp[i] = k;
	}
	return { lane, spans, lcp, depth, maxDur, labels: lane.labels, total: lane.total, samples: lane.samples };
}

/* The "other" lane: lanes past the top N, summed. */
function otherLane(rest) {
	const spans = [];
	let total = 0;
	let samples = 0;
	for (const l of rest) {
		total += l.total;
		samples += l.samples;
		for (const s of l.spans) spans.push(s);
	}
	spans.sort((a, b) => a[0] - b[0]);
	return { other: true, count: rest.length, spans, total, samples, depth: 0, labels: null };
}

function laneTitle(L, unit) {
	if (L.other) return `other: ${fmtCount(L.count)} more rows · ${fmtValue(L.total, unit)}`;
	return `${labelWords(L.labels)} · ${fmtValue(L.total, unit)}`;
}

/* Lays lanes out top to bottom: y of each and the total height. */
function layoutLanes() {
	let y = 0;
	fc.layout = [];
	for (const L of fc.drawn) {
		const h = FC_HEAD + (L.other ? OTHER_H : L.depth * ROW_H) + FC_GAP;
		fc.layout.push({ L, y, h });
		y += h;
	}
	fc.height = y;
}

export async function loadFlamechart() {
	const lanes = state.lanes || state.groupBy || 'process.executable.name';
	const t = slot.begin();
	fc.state = 'loading';
	busy(viewNode, true);
	if (!fc.data) showMsg(el.fcMsg, 'loading', 'Loading the flame chart…', '');
	let data;
	const t0 = performance.now();
	try {
		data = await t.get('api/v1/flamechart', selection({ group_by: lanes, max_spans: 200000 }));
	} catch (e) {
		if (e.aborted || !t.current) return;
		busy(viewNode, false);
		fc.state = 'error';
		fc.data = null;
		clearChart();
		showMsg(el.fcMsg, 'error', 'Could not load the flame chart', escapeHtml(e.message));
		return;
	}
	if (!t.current) return;
	busy(viewNode, false);
	const t1 = performance.now();
	fc.data = data;
	const all = (data.lanes || []).slice().sort((a, b) => b.total - a.total || labelWords(a.labels).localeCompare(labelWords(b.labels)));
	fc.lanes = all;
	if (!all.length) {
		fc.state = 'empty';
		fc.data = null;
		clearChart();
		showMsg(el.fcMsg, 'empty', `No samples in ${rangeWords()}`, emptyWords());
		return;
	}
	let end = 0;
	let start = Infinity;
	for (const l of all) {
		for (const s of l.spans) {
			if (s[0] + s[1] > end) end = s[0] + s[1];
			if (s[0] < start) start = s[0];
		}
	}
	fc.extent = [start, Math.max(end, start + 1)];
	fc.view = fc.extent.slice();
	arrangeLanes();
	const t2 = performance.now();
	hideMsg(el.fcMsg);
	const trunc = data.truncated_spans ? ` · ${fmtCount(data.truncated_spans)} spans left out (narrow the range)` : '';
	const shown = fc.drawn.filter((L) => !L.other).length;
	el.fcSummary.textContent = `${fmtCount(all.length)} rows by ${lanes}${shown < all.length ? ` (top ${shown} by total, the rest in "other")` : ''} · ${fmtCount(data.samples || 0)} samples · ${fmtCount(data.spans_total || 0)} spans · sampling every ${fmtDuration(data.interval_ns || 0)}${trunc}`;
	body.parentElement.scrollTop = 0;
	renderFlamechart();
	fc.timing = { fetchMs: t1 - t0, prepareMs: t2 - t1, renderMs: fc.renderMs, lanes: all.length, drawnLanes: fc.visibleLanes };
	fc.state = 'ready';
}

/* The top N lanes, and "other" for the rest (state.fcTop; 0: all). */
export function arrangeLanes() {
	const d = fc.data;
	if (!d) return;
	const top = state.fcTop || 0;
	const all = fc.lanes;
	const head = top && all.length > top + 1 ? all.slice(0, top) : all;
	fc.drawn = head.map((l) => prepareLane(l, d.stacks));
	if (head.length < all.length) fc.drawn.push(otherLane(all.slice(head.length)));
	layoutLanes();
}

function clearChart() {
	clearCanvas(el.fcCanvas);
	clearCanvas(axis);
	body.style.height = '0px';
	fc.rects = [];
	fc.drawn = [];
	fc.layout = [];
	el.fcSummary.textContent = '';
}

function setupCanvas(c, width, height) {
	const dpr = window.devicePixelRatio || 1;
	c.width = Math.round(width * dpr);
	c.height = Math.round(height * dpr);
	c.style.width = `${width}px`;
	c.style.height = `${height}px`;
	const ctx = c.getContext('2d');
	ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
	ctx.clearRect(0, 0, width, height);
	return ctx;
}

function tickStep(span, width) {
	return NICE_NS.find((s) => (span / s) * 130 <= width) || NICE_NS[NICE_NS.length - 1];
}

/* Ticks: wall-clock times (fmtTick), about one per 130 px; grid lines on @grid. */
function drawAxis(width, v0, v1, fromMs, grid, gridH) {
	const ctx = setupCanvas(axis, width, FC_AXIS);
	const span = v1 - v0;
	const step = tickStep(span, width);
	const abs0 = fromMs * 1e6 + v0;
	const first = Math.ceil(abs0 / step) * step;
	ctx.font = `11px ${cssVar('--font') || 'sans-serif'}`;
	ctx.textBaseline = 'middle';
	const muted = cssVar('--muted') || '#5f6b7a';
	const line = cssVar('--grid') || '#eceef1';
	fc.ticks = [];
	for (let t = first; t <= fromMs * 1e6 + v1; t += step) {
		const x = ((t - abs0) / span) * width;
		ctx.fillStyle = line;
		ctx.fillRect(Math.round(x), FC_AXIS - 5, 1, 5);
		grid.fillStyle = line;
		grid.fillRect(Math.round(x), 0, 1, gridH);
		const label = fmtTick(t / 1e6, false);
		fc.ticks.push(label);
		ctx.fillStyle = muted;
		const tw = ctx.measureText(label).width;
		if (x - tw / 2 > 0 && x + tw / 2 < width) ctx.fillText(label, x - tw / 2, FC_AXIS / 2 - 1);
	}
	ctx.fillStyle = cssVar('--border') || '#dcdfe4';
	ctx.fillRect(0, FC_AXIS - 1, width, 1);
}

/* First span index that may end at or after @v0 (spans by start; none lasts more than maxDur). */
function firstSpan(spans, v0, maxDur) {
	let lo = 0;
	let hi = spans.length;
	const key = v0 - maxDur;
	while (lo < hi) {
		const mid = (lo + hi) >> 1;
		if (spans[mid][0] < key) lo = mid + 1;
		else hi = mid;
	}
	return lo;
}

function drawLane(ctx, L, top, viewH, v0, v1, scale, width, charW, rects, unit) {
	const d = fc.data;
	const headText = cssVar('--muted') || '#5f6b7a';
	if (top + FC_HEAD > 0) {
		ctx.fillStyle = headText;
		ctx.font = `600 12px ${cssVar('--font') || 'sans-serif'}`;
		ctx.fillText(laneTitle(L, unit), 4, top + FC_HEAD / 2);
		ctx.font = FONT;
		ctx.fillStyle = cssVar('--border') || '#dcdfe4';
		ctx.fillRect(0, top + FC_HEAD - 2, width, 1);
	}
	const rowsTop = top + FC_HEAD;
	const spans = L.spans;
	const i0 = firstSpan(spans, v0, L.maxDur || 0);
	if (L.other) {
		/* density: samples per pixel column, darker where more */
		const cols = new Float64Array(Math.ceil(width) + 1);
		let max = 0;
		for (let i = i0; i < spans.length && spans[i][0] <= v1; i++) {
			const s = spans[i];
			const a = Math.max(0, Math.floor((s[0] - v0) * scale));
			const b = Math.min(cols.length - 1, Math.floor((s[0] + s[1] - v0) * scale));
			const per = s[4] / (b - a + 1);
			for (let x = a; x <= b; x++) {
				cols[x] += per;
				if (cols[x] > max) max = cols[x];
			}
		}
		const base = cssVar('--muted') || '#5f6b7a';
		ctx.fillStyle = base;
		for (let x = 0; x < cols.length; x++) {
			if (!cols[x]) continue;
			ctx.globalAlpha = 0.15 + 0.85 * (cols[x] / max);
			ctx.fillRect(x, rowsTop, 1, OTHER_H - 1);
		}
		ctx.globalAlpha = 1;
		return;
	}
	const tol = 1 / scale; /* runs closer than a pixel touch */
	const text = cssVar('--frame-text') || '#1b1f27';
	const dStart = Math.max(0, Math.floor(-rowsTop / ROW_H));
	const dEnd = Math.min(L.depth, Math.ceil((viewH - rowsTop) / ROW_H));
	for (let depth = dStart; depth < dEnd; depth++) {
		const y = rowsTop + depth * ROW_H;
		let rs = -1;
		let re = 0;
		let rstack = null;
		let rval = 0;
		let rsmp = 0;
		const flush = () => {
			if (rs < 0) return;
			const x = (rs - v0) * scale;
			const w = Math.max((re - v0) * scale - x, 1);
			if (x + w >= 0 && x <= width) {
				const name = d.names[rstack[depth]];
				ctx.fillStyle = colorOf(name);
				ctx.fillRect(x, y, Math.max(w - (w > 2 ? 1 : 0), 1), ROW_H - 1);
				if (w - TEXT_PAD * 2 >= charW * 2) {
					const vx = Math.max(x, 0);
					const vw = Math.min(x + w, width) - vx;
					const maxChars = Math.floor((vw - TEXT_PAD * 2) / charW);
					if (maxChars >= 2) {
						const label = name.length > maxChars ? name.slice(0, maxChars - 1) + '…' : name;
						ctx.fillStyle = text;
						ctx.fillText(label, vx + TEXT_PAD, y + ROW_H / 2);
					}
				}
				rects.push({ x, y, w, name, lane: L.lane, depth, s: rs, e: re, value: rval, samples: rsmp });
			}
			rs = -1;
		};
		for (let i = i0; i < spans.length; i++) {
			const s = spans[i];
			if (s[0] > v1) break;
			const stack = d.stacks[s[2]];
			if (stack.length <= depth) {
				flush();
				continue;
			}
			if (rs >= 0 && L.lcp[i] > depth && s[0] <= re + tol) {
				if (s[0] + s[1] > re) re = s[0] + s[1];
				rval += s[3];
				rsmp += s[4];
			} else {
				flush();
				rs = s[0];
				re = s[0] + s[1];
				rstack = stack;
				rval = s[3];
				rsmp = s[4];
			}
		}
		flush();
	}
}

/* Draws what is visible of the lanes at the scroll position (virtual drawing). */
export function renderFlamechart() {
	const d = fc.data;
	if (!d || !fc.drawn) return;
	const t0 = performance.now();
	const scroller = body.parentElement;
	const width = innerWidth(scroller, 200);
	body.style.height = `${fc.height}px`;
	const viewH = Math.max(60, Math.min(fc.height, scroller.clientHeight - FC_AXIS));
	const ctx = setupCanvas(el.fcCanvas, width, viewH);
	ctx.font = FONT;
	ctx.textBaseline = 'middle';
	const charW = ctx.measureText('MMMMMMMMMM').width / 10;
	const [v0, v1] = fc.view;
	const scale = width / (v1 - v0);
	drawAxis(width, v0, v1, d.from_ms, ctx, viewH);
	ctx.font = FONT;
	const scrollTop = Math.max(0, Math.min(scroller.scrollTop, fc.height - viewH));
	const rects = [];
	let visible = 0;
	for (const { L, y, h } of fc.layout) {
		const top = y - scrollTop;
		if (top + h < 0 || top > viewH) continue;
		visible++;
		drawLane(ctx, L, top, viewH, v0, v1, scale, width, charW, rects, d.unit);
	}
	for (const r of rects) r.y += scrollTop; /* content coordinates */
	fc.scrollTop = scrollTop;
	fc.rects = rects;
	fc.rendered = rects.length;
	fc.visibleLanes = visible;
	fc.renderMs = performance.now() - t0;
	el.fcReset.disabled = v0 === fc.extent[0] && v1 === fc.extent[1];
}

function fcTimeAt(clientX) {
	const b = el.fcCanvas.getBoundingClientRect();
	const [v0, v1] = fc.view;
	return v0 + ((clientX - b.left) / b.width) * (v1 - v0);
}

export function fcSetView(a, b) {
	if (!fc.extent) return;
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

export function fcReset() {
	if (fc.extent) fcSetView(fc.extent[0], fc.extent[1]);
}

let fcDrag = null;
el.fcCanvas.addEventListener('mousedown', (ev) => {
	if (!fc.data || ev.button !== 0) return;
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
		let sel = body.querySelector('.fc-sel');
		if (!sel) {
			sel = document.createElement('div');
			sel.className = 'fc-sel';
			body.appendChild(sel);
		}
		const x0 = Math.min(fcDrag.x, ev.clientX) - b.left;
		sel.style.left = `${x0}px`;
		sel.style.width = `${Math.abs(ev.clientX - fcDrag.x)}px`;
		sel.style.top = `${fc.scrollTop || 0}px`;
		sel.style.height = `${b.height}px`;
		return;
	}
	const x = ev.clientX - b.left;
	const y = ev.clientY - b.top + (fc.scrollTop || 0);
	const r = fc.rects.find((q) => x >= q.x && x < q.x + q.w && y >= q.y && y < q.y + ROW_H);
	if (!r) return hideTooltip();
	const start = fc.data.from_ms + r.s / 1e6;
	showTooltip(`<div class="tt-name">${escapeHtml(r.name)}</div><table>` +
		`<tr><td class="k">When</td><td class="v" colspan="2">${escapeHtml(fmtTime(start))}</td></tr>` +
		`<tr><td class="k">Span</td><td class="v" colspan="2">${escapeHtml(fmtDuration(r.e - r.s))}</td></tr>` +
		`<tr><td class="k">Value</td><td class="v">${escapeHtml(fmtValue(r.value, fc.data.unit))}</td><td class="p">${fmtCount(r.samples)} samples</td></tr>` +
		`<tr><td class="k">Row</td><td class="v" colspan="2">${escapeHtml(labelWords(r.lane.labels))}</td></tr></table>`, ev);
});
el.fcCanvas.addEventListener('mouseleave', hideTooltip);
el.fcCanvas.addEventListener('wheel', (ev) => {
	/* a plain wheel scrolls the lanes; Ctrl (or pinch) zooms in time */
	if (!fc.data || !(ev.ctrlKey || ev.metaKey)) return;
	ev.preventDefault();
	const t = fcTimeAt(ev.clientX);
	const [v0, v1] = fc.view;
	const k = ev.deltaY > 0 ? 1.25 : 0.8;
	fcSetView(t - (t - v0) * k, t + (v1 - t) * k);
}, { passive: false });
let scrollPending = false;
body.parentElement.addEventListener('scroll', () => {
	if (scrollPending || !fc.data) return;
	scrollPending = true;
	requestAnimationFrame(() => {
		scrollPending = false;
		renderFlamechart();
	});
});
el.fcReset.addEventListener('click', fcReset);
fc.draw = renderFlamechart; /* tests time a draw */
