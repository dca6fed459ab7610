// SPDX-License-Identifier: Apache-2.0
/*
 * flamegraph.js - one call tree (tree.js prepare()d) drawn on a canvas,
 * hover drawn on an overlay canvas laid over it; used by the flame
 * graph, both halves of the sandwich and the diff.
 *
 * The canvas sits in a scroll box (.flame-wrap, at most about one
 * screen high): a deep stack scrolls inside it instead of making the
 * page thousands of pixels tall. Frames narrower than MIN_W are not
 * laid out; hit tests binary-search the frames of one row.
 *
 * opts:
 *   flipped()       true: root at the bottom
 *   fill(node)      {fill, text, outline, dim} of a frame
 *   tooltip(node)   HTML of the tooltip
 *   onZoom(node)    called after a click zoomed (node or null)
 *   onMenu(node, ev) right click on a frame (the frame menu)
 *   rootLabel(root) text of the root frame
 *   rootFill()      {fill, text} of the root frame
 *   extra(node)     fields added to the model's node records
 * model: {state, unit, total, nodes, request, renderMs} is what tests read.
 */
import { cssVar, hideTooltip, showTooltip } from './dom.js';
import { timings } from './ctx.js';

export const ROW_H = 18; /* px per stack level */
export const MIN_W = 0.35; /* frames narrower than this (px) are not drawn */
export const TEXT_PAD = 4;
export const FONT = '12px ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", Menlo, Consolas, monospace';

export class FlameGraph {
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
		canvas.addEventListener('contextmenu', (ev) => {
			const r = this.rectAt(ev);
			if (!r || !this.opts.onMenu) return;
			ev.preventDefault();
			hideTooltip();
			this.opts.onMenu(r.node, ev, this);
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
		this.rows = [];
		this.model.nodes = [];
		for (const c of [this.canvas, this.overlay]) {
			c.style.height = '0px';
			c.height = 0;
		}
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
		for (const n of chain) rects.push({ node: n, x: 0, depth: n.depth, w: width, ancestor: n !== focus });
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
		/* the scroll bar a deep graph brings is inside clientWidth already */
		const width = Math.max(100, Math.floor(wrap.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight)));
		const { rects, height, flipped } = this.layout(width);
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
		this.model.height = height;
		/* a flame (root at the bottom) opens scrolled to its root */
		if (flipped && wrap.scrollHeight > wrap.clientHeight) wrap.scrollTop = wrap.scrollHeight;
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
