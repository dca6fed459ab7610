// SPDX-License-Identifier: Apache-2.0
// state.test.mjs - ui/js/state.js: the URL round trip and the API parameters.
import test from 'node:test';
import assert from 'node:assert/strict';
import { blankState, filterParams, parseTraceIds, rangeMs, searchFromState, selection, stateFromSearch, timeParams, traceWindow } from '../../../ui/js/state.js';

test('a state survives the URL both ways', () => {
	const s = blankState();
	Object.assign(s, {
		dataset: 'prod', type: 'process_cpu:cpu:nanoseconds:cpu:nanoseconds', query: '{service.name="shop"}', range: 'abs', from: 1000, to: 5000,
		trace: '4bf92f3577b34da6a3ce929d0e0e4736', span: '00f067aa0ba902b7',
		groupBy: 'service.name', view: 'table', search: 'json', focusPath: ['main', 'serve'], fn: 'computePrice', sf: ['a', 'b'], ff: ['^c$'],
		hide: ['go', 'libc'], fold: 'recursion,library', invert: true, icicle: false, color: 'package', sort: 'total', tableSearch: 'x', lanes: 'thread.name', fcTop: 0,
	});
	Object.assign(s.cmp, { aType: 't', bType: 't', aQuery: '{a="1"}', bQuery: '', aFrom: 1, aTo: 2, bFrom: 3, bTo: 4, mode: 'absolute' });
	const back = stateFromSearch(searchFromState(s), blankState());
	for (const k of Object.keys(s)) if (k !== 'types') assert.deepEqual(back[k], s[k], k);
});

test('defaults and bad values fall back', () => {
	const s = stateFromSearch('?view=nope&hide=go,bogus&fold=everything&color=pink&sort=x&from=5&to=2&fctop=7', blankState());
	assert.equal(s.view, 'flame');
	assert.deepEqual(s.hide, ['go']);
	assert.equal(s.fold, '', 'an unknown fold is no fold');
	assert.equal(s.color, 'hot');
	assert.equal(s.sort, 'self');
	assert.equal(s.range, '1h', 'to before from is no absolute range');
	assert.equal(s.fcTop, 20);
	assert.equal(searchFromState(blankState()), 'range=1h&view=flame');
	assert.equal(stateFromSearch('', blankState()).view, 'overview', 'a bare visit lands on the overview');
	assert.equal(stateFromSearch('?type=T&search=x', blankState()).view, 'flame', 'a link without a view opens the flame graph');
});

test('the selection as API parameters', () => {
	const s = blankState();
	s.type = 'T';
	s.sf = ['x', 'y'];
	s.hide = ['go'];
	assert.deepEqual(timeParams(s), { from: 'now-1h', to: 'now' });
	assert.deepEqual(filterParams(s), { stack_filter: ['x', 'y'], frame_filter: [], hide: 'go', fold: '' });
	s.fold = 'recursion';
	assert.deepEqual(selection({ limit: 3 }, s), { dataset: '', type: 'T', query: '', from: 'now-1h', to: 'now', stack_filter: ['x', 'y'], frame_filter: [], hide: 'go', fold: 'recursion', limit: 3 });
	s.range = 'abs';
	s.from = 10;
	s.to = 20;
	assert.deepEqual(timeParams(s), { from: '10', to: '20' });
	assert.deepEqual(rangeMs(s), [10, 20]);
	s.range = '5m';
	assert.deepEqual(rangeMs(s, 1e6), [1e6 - 300e3, 1e6]);
});

test('trace and span IDs: parsed, in the URL, sent to every view', () => {
	assert.deepEqual(parseTraceIds(' 4BF92F3577B34DA6A3CE929D0E0E4736 ', ''), { trace: '4bf92f3577b34da6a3ce929d0e0e4736', span: '' });
	assert.deepEqual(parseTraceIds('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', ''),
		{ trace: '4bf92f3577b34da6a3ce929d0e0e4736', span: '00f067aa0ba902b7' }, 'a traceparent gives both');
	assert.deepEqual(parseTraceIds('', '00f067aa0ba902b7'), { trace: '', span: '00f067aa0ba902b7' });
	assert.ok(parseTraceIds('4bf92f', '').error, 'too short');
	assert.ok(parseTraceIds('', '00f067aa0ba902bz').error, 'not hex');
	const s = stateFromSearch('?type=T&trace=4bf92f3577b34da6a3ce929d0e0e4736&span=nothex', blankState());
	assert.equal(s.trace, '', 'a bad span drops both from a link');
	const t = stateFromSearch('?type=T&trace=4bf92f3577b34da6a3ce929d0e0e4736&span=00f067aa0ba902b7', blankState());
	const p = selection({}, t);
	assert.equal(p.trace_id, '4bf92f3577b34da6a3ce929d0e0e4736');
	assert.equal(p.span_id, '00f067aa0ba902b7');
	assert.equal('trace_id' in selection({}, blankState()), false, 'no trace: no parameter');
});

test('traceWindow: the samples\' window from a flame chart answer', () => {
	const data = { from_ms: 1000000, lanes: [{ spans: [[2e9, 5e8, 0, 1, 1]] }, { spans: [[1e9, 1e7, 0, 1, 1], [4e9, 1e9, 1, 1, 1]] }] };
	assert.deepEqual(traceWindow(data), [1000000 + 1000 - 100, 1000000 + 5000 + 100]);
	assert.deepEqual(traceWindow({ from_ms: 0, lanes: [{ spans: [[1e9, 2e6, 0, 1, 1]] }] }, 0), [501, 1501], 'at least a second');
	assert.equal(traceWindow({ from_ms: 0, lanes: [] }), null);
	assert.equal(traceWindow(null), null);
});
