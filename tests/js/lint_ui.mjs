// SPDX-License-Identifier: Apache-2.0
/*
 * lint_ui.mjs - the explorer's JavaScript check (make check-js): every
 * module under ui/js parses (node --check), starts with the SPDX line
 * and a head comment, indents with tabs, has no trailing blanks, no
 * `var`, no console.log and no loose (in)equality but `== null`; every
 * import names a file that exists and names it exports, and every
 * imported name is used. Small on purpose: no npm package needed.
 * Prints "FAIL file:line: what" lines; exits 1 when any.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = path.join(root, 'ui', 'js');
let failures = 0;
const fail = (file, line, what) => {
	failures++;
	console.log(`FAIL ${path.relative(root, file)}${line ? `:${line}` : ''}: ${what}`);
};

function files(d) {
	const out = [];
	for (const e of fs.readdirSync(d, { withFileTypes: true })) {
		const p = path.join(d, e.name);
		if (e.isDirectory()) out.push(...files(p));
		else if (e.name.endsWith('.js')) out.push(p);
	}
	return out.sort();
}

/* Names a module exports: export function/class/const/let NAME, export { a, b as c }. */
function exportsOf(src) {
	const names = new Set();
	for (const m of src.matchAll(/^export\s+(?:async\s+)?(?:function\*?|class|const|let)\s+([A-Za-z_$][\w$]*)/gm)) names.add(m[1]);
	for (const m of src.matchAll(/^export\s*\{([^}]*)\}/gm))
		for (const part of m[1].split(',')) {
			const n = part.trim().split(/\s+as\s+/).pop();
			if (n) names.add(n);
		}
	return names;
}

/*
 * @src with the text of comments, strings, regex literals and the literal
 * parts of templates blanked (newlines kept), the code of ${...} kept:
 * what the token checks look at.
 */
function code(src) {
	const out = src.split('');
	const blank = (a, b) => {
		for (let k = a; k < b; k++) if (out[k] !== '\n') out[k] = ' ';
	};
	const stack = []; /* open template literals: brace depth at each ${ */
	let depth = 0;
	let i = 0;
	let prev = ''; /* last significant character, to tell a regex from a division */
	while (i < src.length) {
		const c = src[i];
		const n = src[i + 1];
		if (c === '/' && n === '*') {
			const e = src.indexOf('*/', i + 2);
			const end = e < 0 ? src.length : e + 2;
			blank(i, end);
			i = end;
		} else if (c === '/' && n === '/') {
			let e = src.indexOf('\n', i);
			if (e < 0) e = src.length;
			blank(i, e);
			i = e;
		} else if (c === "'" || c === '"') {
			let j = i + 1;
			while (j < src.length && src[j] !== c && src[j] !== '\n') j += src[j] === '\\' ? 2 : 1;
			blank(i + 1, j);
			i = j + 1;
			prev = 'a';
		} else if (c === '`' || (c === '}' && stack.length && stack[stack.length - 1] === depth)) {
			if (c === '}') stack.pop();
			let j = i + 1;
			while (j < src.length && src[j] !== '`' && !(src[j] === '$' && src[j + 1] === '{')) j += src[j] === '\\' ? 2 : 1;
			blank(i + 1, j);
			if (src[j] === '$') {
				stack.push(depth);
				i = j + 2;
				prev = '(';
			} else {
				i = j + 1;
				prev = 'a';
			}
		} else if (c === '/' && (prev === '' || '(,=:[!&|?{};+-*%<>~^'.includes(prev))) {
			let j = i + 1;
			let cls = false;
			while (j < src.length && src[j] !== '\n' && (cls || src[j] !== '/')) {
				if (src[j] === '\\') j++;
				else if (src[j] === '[') cls = true;
				else if (src[j] === ']') cls = false;
				j++;
			}
			blank(i + 1, j);
			i = j + 1;
			prev = 'a';
		} else {
			if (c === '{') depth++;
			else if (c === '}') depth--;
			if (!/\s/.test(c)) prev = /[\w$)\]]/.test(c) ? 'a' : c;
			i++;
		}
	}
	return out.join('');
}

const all = files(dir);
const exported = new Map(all.map((f) => [f, exportsOf(fs.readFileSync(f, 'utf8'))]));
for (const file of all) {
	const src = fs.readFileSync(file, 'utf8');
	const lines = src.split('\n');
	try {
		execFileSync(process.execPath, ['--check', file], { stdio: 'pipe' });
	} catch (e) {
		fail(file, 0, `does not parse: ${String(e.stderr).split('\n').slice(0, 5).join(' ')}`);
		continue;
	}
	if (lines[0] !== '// SPDX-License-Identifier: Apache-2.0') fail(file, 1, 'first line is not the SPDX line');
	if (!/^\/\*\n \* [\w./-]+\.js - /.test(lines.slice(1).join('\n'))) fail(file, 2, 'no head comment "/*\\n * NAME.js - what it is"');
	const bare = code(src).split('\n');
	lines.forEach((l, i) => {
		if (/[ \t]+$/.test(l)) fail(file, i + 1, 'trailing blank');
		if (/^ +(?! ?\*)/.test(l)) fail(file, i + 1, 'indented with spaces (tabs, as the C code)');
		const c = bare[i];
		if (/(^|[^\w$.])var\s/.test(c)) fail(file, i + 1, '`var` (use const or let)');
		if (/console\.log/.test(c)) fail(file, i + 1, 'console.log left in');
		if (/[^=!<>]==[^=]/.test(c.replace(/==\s*null\b/g, '')) || /!=[^=]/.test(c.replace(/!=\s*null\b/g, ''))) fail(file, i + 1, 'loose equality (=== / !==, or == null)');
	});
	const body = code(src.replace(/^import[\s\S]*?from\s*'[^']*';$/gm, (m) => m.replace(/[^\n]/g, ' ')));
	for (const m of src.matchAll(/^import\s*\{([^}]*)\}\s*from\s*'([^']+)';$/gm)) {
		const line = src.slice(0, m.index).split('\n').length;
		const target = path.resolve(path.dirname(file), m[2]);
		if (!exported.has(target)) {
			fail(file, line, `imports ${m[2]}, which is not a module under ui/js`);
			continue;
		}
		for (const part of m[1].split(',')) {
			const [name, local] = part.trim().split(/\s+as\s+/).concat([]);
			if (!name) continue;
			if (!exported.get(target).has(name)) fail(file, line, `${m[2]} does not export ${name}`);
			const use = local || name;
			if (!new RegExp(`(^|[^\\w$.]|\\.\\.\\.)${use.replace(/\$/g, '\\$')}(?![\\w$])`).test(body)) fail(file, line, `${use} is imported and never used`);
		}
	}
}
console.log(failures ? `FAIL - ${failures} problem(s) in ui/js` : `ok - ${all.length} modules of ui/js checked`);
process.exitCode = failures ? 1 : 0;
