// SPDX-License-Identifier: Apache-2.0
// format.test.mjs - ui/js/format.js: units, rates, the one time format.
import test from 'node:test';
import assert from 'node:assert/strict';
import * as f from '../../../ui/js/format.js';

process.env.TZ = 'UTC';

test('values in their units', () => {
	assert.equal(f.fmtValue(4.2e9, 'nanoseconds'), '4.20 s');
	assert.equal(f.fmtValue(1500, 'nanoseconds'), '1.50 µs');
	assert.equal(f.fmtValue(90e9, 'nanoseconds'), '1.50 min');
	assert.equal(f.fmtValue(3, 'milliseconds'), '3.00 ms');
	assert.equal(f.fmtValue(4096, 'bytes'), '4.00 KiB');
	assert.equal(f.fmtValue(512, 'bytes'), '512 B');
	assert.equal(f.fmtValue(12345, 'count'), '12,345');
	assert.equal(f.fmtValue(7, 'widgets'), '7 widgets');
});

test('rates: time per second is cores, bytes per second, counts per second', () => {
	assert.equal(f.fmtRate(2.5e9, 'nanoseconds'), '2.50 cores');
	assert.equal(f.fmtRate(0.05e9, 'nanoseconds'), '0.05 cores');
	assert.equal(f.fmtRate(0.5, 'seconds'), '0.5 cores');
	assert.equal(f.fmtRate(2048, 'bytes'), '2.00 KiB/s');
	assert.equal(f.fmtRate(12, 'count'), '12.0/s');
	assert.equal(f.rateAxisName('nanoseconds'), 'cores');
	assert.equal(f.rateAxisName('bytes'), 'bytes/s');
	assert.equal(f.rateAxisName('count'), 'per second');
});

test('percentages', () => {
	assert.equal(f.fmtPct(1, 3), '33.3%');
	assert.equal(f.fmtPct(1, 300), '0.33%');
	assert.equal(f.fmtPct(1, 1e7), '<0.01%');
	assert.equal(f.fmtPct(1, 0), '–');
});

test('one time format, written and read back', () => {
	const t = Date.UTC(2023, 10, 14, 22, 13, 20);
	assert.equal(f.fmtTime(t), '2023-11-14 22:13:20');
	assert.equal(f.parseTime('2023-11-14 22:13:20'), t);
	assert.equal(f.parseTime('2023-11-14T22:13:20'), t, 'ISO 8601 "T" is read too');
	assert.equal(f.parseTime(' 2023-11-14 22:13 '), t - 20000, 'seconds may be left out');
	assert.equal(f.parseTime('2023-11-14'), Date.UTC(2023, 10, 14));
	assert.ok(Number.isNaN(f.parseTime('2023-02-30 10:00:00')), 'no 30 February');
	assert.ok(Number.isNaN(f.parseTime('yesterday')));
	assert.ok(Number.isNaN(f.parseTime('2023-11-14 25:00:00')));
	assert.equal(f.fmtClock(t + 5, true), '22:13:20.005');
	assert.equal(f.fmtTick(t, false), '22:13:20');
	assert.equal(f.fmtTick(Date.UTC(2023, 10, 15), false), '2023-11-15', 'a day boundary names the day');
	assert.equal(f.fmtTick(t, true), '2023-11-14 22:13:20');
	assert.equal(f.fmtRange(t, t + 3600e3), '2023-11-14 22:13:20 – 23:13:20');
	assert.equal(f.fmtRange(t, t + 86400e3), '2023-11-14 22:13:20 – 2023-11-15 22:13:20');
});

test('types, HTML, labels', () => {
	assert.deepEqual(f.parseType('process_cpu:cpu:nanoseconds:cpu:nanoseconds'), {
		id: 'process_cpu:cpu:nanoseconds:cpu:nanoseconds', name: 'process_cpu', sampleType: 'cpu', unit: 'nanoseconds', label: 'process_cpu · cpu (nanoseconds)',
	});
	assert.equal(f.parseType('odd').label, 'odd');
	assert.equal(f.escapeHtml('<a href="x">\'&'), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;');
	assert.equal(f.labelWords({ 'service.name': 'shop', 'thread.name': '' }), 'service.name=shop, (no thread.name)');
	assert.equal(f.labelWords({}), '(no label)');
});
