// SPDX-License-Identifier: Apache-2.0
/*
 * format.js - how the explorer writes numbers, units, times and HTML.
 *
 * Pure functions, no DOM: node --test runs them (tests/js/unit/). Values
 * come in the profile type's sample unit (docs/api.md "Units"); rates in
 * that unit per second. Every time on the page is written by fmtTime (or
 * its clock part, fmtClock, on axes), in the browser's time zone, and
 * typed back in the same form (parseTime): one time format everywhere.
 */

export function sig(x) {
	const a = Math.abs(x);
	if (a >= 100) return x.toFixed(0);
	if (a >= 10) return x.toFixed(1);
	return x.toFixed(2);
}

export function fmtDuration(ns) {
	const a = Math.abs(ns);
	if (a < 1e3) return `${Math.round(ns)} ns`;
	if (a < 1e6) return `${sig(ns / 1e3)} µs`;
	if (a < 1e9) return `${sig(ns / 1e6)} ms`;
	if (a < 60e9) return `${sig(ns / 1e9)} s`;
	if (a < 3600e9) return `${sig(ns / 60e9)} min`;
	if (a < 86400e9) return `${sig(ns / 3600e9)} h`;
	return `${sig(ns / 86400e9)} days`;
}

export function fmtBytes(b) {
	const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
	let i = 0;
	let v = b;
	while (Math.abs(v) >= 1024 && i < units.length - 1) {
		v /= 1024;
		i++;
	}
	return i === 0 ? `${Math.round(v)} B` : `${sig(v)} ${units[i]}`;
}

export function fmtCount(n) {
	return Math.round(n).toLocaleString('en-US');
}

/* Nanoseconds per unit of a time unit, 0 for a unit that is not a time. */
export function nsPerUnit(unit) {
	switch ((unit || '').toLowerCase()) {
	case 'nanoseconds':
	case 'nanosecond':
	case 'ns':
		return 1;
	case 'microseconds':
	case 'us':
		return 1e3;
	case 'milliseconds':
	case 'ms':
		return 1e6;
	case 'seconds':
	case 's':
		return 1e9;
	default:
		return 0;
	}
}

export function isBytes(unit) {
	return ['bytes', 'byte'].includes((unit || '').toLowerCase());
}

export function fmtValue(v, unit) {
	const k = nsPerUnit(unit);
	if (k) return fmtDuration(v * k);
	if (isBytes(unit)) return fmtBytes(v);
	switch ((unit || '').toLowerCase()) {
	case '':
	case 'count':
	case 'counts':
		return fmtCount(v);
	default:
		return `${fmtCount(v)} ${unit}`;
	}
}

/* A small number with up to three significant digits (0.0123, 1.25, 12.5, 125). */
export function fmtSmall(x) {
	const a = Math.abs(x);
	if (a === 0) return '0';
	if (a >= 100) return x.toFixed(0);
	if (a >= 10) return x.toFixed(1);
	if (a >= 1) return x.toFixed(2);
	return x.toPrecision(2).replace(/0+$/, '').replace(/\.$/, '');
}

/*
 * A rate: @v is the unit per second. A time per second is a number of
 * CPUs busy ("cores"), bytes per second "KiB/s", anything else "N/s".
 */
export function fmtRate(v, unit) {
	const k = nsPerUnit(unit);
	if (k) return `${fmtSmall((v * k) / 1e9)} cores`;
	if (isBytes(unit)) return `${fmtBytes(v)}/s`;
	const u = (unit || '').toLowerCase();
	return `${fmtSmall(v)}${u && u !== 'count' && u !== 'counts' ? ` ${unit}` : ''}/s`;
}

/* The words of the chart's y axis for a cumulative @unit ("cores", "bytes/s", "per second"). */
export function rateAxisName(unit) {
	if (nsPerUnit(unit)) return 'cores';
	if (isBytes(unit)) return 'bytes/s';
	return 'per second';
}

export function fmtPct(part, whole) {
	if (!whole) return '–';
	const p = (100 * part) / whole;
	if (p > 0 && p < 0.01) return '<0.01%';
	return `${Math.abs(p) >= 10 ? p.toFixed(1) : p.toFixed(2)}%`;
}

const p2 = (n) => String(n).padStart(2, '0');

/* The one time format: "2023-11-14 22:13:20", local time. */
export function fmtTime(ms) {
	const d = new Date(ms);
	return `${d.getFullYear()}-${p2(d.getMonth() + 1)}-${p2(d.getDate())} ${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())}`;
}

/* The clock part of fmtTime ("22:13:20"), with milliseconds when @withMs. */
export function fmtClock(ms, withMs) {
	const d = new Date(ms);
	const s = `${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())}`;
	return withMs ? `${s}.${String(d.getMilliseconds()).padStart(3, '0')}` : s;
}

/* An axis tick: the clock; the date alone at a day's start; both with @withDate. */
export function fmtTick(ms, withDate) {
	const d = new Date(ms);
	if (withDate) return fmtTime(ms);
	if (d.getHours() === 0 && d.getMinutes() === 0 && d.getSeconds() === 0 && d.getMilliseconds() === 0) return fmtTime(ms).slice(0, 10);
	return fmtClock(ms, d.getMilliseconds() !== 0);
}

/* A range of two times: "2023-11-14 22:13:20 – 22:33:20" when on one day. */
export function fmtRange(from, to) {
	const a = fmtTime(from);
	const b = fmtTime(to);
	return a.slice(0, 10) === b.slice(0, 10) ? `${a} – ${b.slice(11)}` : `${a} – ${b}`;
}

/*
 * Reads a time as fmtTime writes it ("2023-11-14 22:13:20"; the seconds,
 * or the whole clock, may be left out; "T" for the space as in ISO
 * 8601), in local time. Returns unix ms, or NaN.
 */
export function parseTime(s) {
	const m = /^\s*(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?)?\s*$/.exec(String(s || ''));
	if (!m) return NaN;
	const [y, mo, d, h, mi, se, ms] = m.slice(1).map((x) => (x === undefined ? 0 : +x));
	const t = new Date(y, mo - 1, d, h, mi, se, ms);
	if (t.getFullYear() !== y || t.getMonth() !== mo - 1 || t.getDate() !== d || h > 23 || mi > 59 || se > 59) return NaN;
	return t.getTime();
}

/* "process_cpu:cpu:nanoseconds:cpu:nanoseconds" -> parts and a label. */
export function parseType(id) {
	const p = String(id).split(':');
	if (p.length < 3) return { id, name: id, sampleType: '', unit: '', label: id };
	const [name, sampleType, unit] = p;
	return { id, name, sampleType, unit, label: `${name} · ${sampleType} (${unit})` };
}

export function escapeHtml(s) {
	return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

/* A lane's or series' labels in words: "service.name=shop, thread.name=io". */
export function labelWords(labels) {
	const e = Object.entries(labels || {});
	return e.length ? e.map(([k, v]) => (v === '' ? `(no ${k})` : `${k}=${v}`)).join(', ') : '(no label)';
}
