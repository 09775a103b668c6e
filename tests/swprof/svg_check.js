// svg_check.js - runs the script of a flame graph swprof wrote, in node,
// over a small stand-in for the browser's DOM built from the SVG's own
// boxes, and checks what a user sees: a click zooms the box to the full
// width with its callees scaled under it, its callers spanning it and the
// rest hidden; Reset zoom puts every box back; a search highlights the
// matching boxes and reports their share without counting a match inside
// a match twice.  Usage: node svg_check.js flame.svg zoom-regex search-regex
'use strict';
const fs = require('fs');
const [file, zoomText, searchText] = process.argv.slice(2);
const svg = fs.readFileSync(file, 'utf8');
const unescape = s => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"')
	.replace(/&amp;/g, '&');

function element(attrs, text) {
	const listeners = {};
	return {
		attrs, textContent: text || '', style: {}, listeners,
		getAttribute(a) { return this.attrs[a] === undefined ? null : this.attrs[a]; },
		setAttribute(a, v) { this.attrs[a] = String(v); },
		hasAttribute(a) { return this.attrs[a] !== undefined; },
		addEventListener(type, fn) { listeners[type] = fn; },
	};
}
function attributes(s) {
	const out = {};
	for (const m of s.matchAll(/([\w-]+)="([^"]*)"/g)) out[m[1]] = m[2];
	return out;
}

const boxes = [];
for (const m of svg.matchAll(/<g class="f" ([^>]*)><title>([^<]*)<\/title><rect ([^>]*)\/><text ([^>]*)>([^<]*)<\/text><\/g>/g)) {
	const g = element(attributes(m[1]));
	const parts = { title: element({}, unescape(m[2])), rect: element(attributes(m[3])),
		text: element(attributes(m[4]), unescape(m[5])) };
	g.querySelector = sel => parts[sel];
	boxes.push(g);
}
const ids = {};
for (const id of ['reset', 'search', 'detail']) ids[id] = element({ id });
const docListeners = {};
global.document = {
	querySelectorAll: sel => { if (sel !== 'g.f') throw new Error(sel); return boxes; },
	getElementById: id => ids[id],
	addEventListener: (type, fn) => { docListeners[type] = fn; },
};
global.window = { prompt: () => searchText };
const script = svg.match(/<!\[CDATA\[([\s\S]*)\]\]>/);
if (!script) { console.log('FAIL: no script'); process.exit(1); }
new Function(script[1])();

let failed = 0;
const fail = msg => { console.log('FAIL: ' + msg); failed++; };
const num = (g, a) => parseFloat(g.getAttribute('data-' + a));
const near = (a, b) => Math.abs(a - b) < 0.05;
const W = parseFloat(svg.match(/<svg [^>]*width="(\d+)"/)[1]);
const name = g => g.querySelector('title').textContent.replace(/ \([^()]*\)$/, '');

if (boxes.length < 3) fail('only ' + boxes.length + ' boxes');
// Zoom: the first box whose name matches that does not already fill the width.
const zoomRe = new RegExp(zoomText);
const target = boxes.find(g => zoomRe.test(name(g)) && num(g, 'w') < W - 0.1);
if (!target) { fail('no box ' + zoomText + ' narrower than the graph'); process.exit(1); }
target.listeners.click();
const x0 = num(target, 'x'), w0 = num(target, 'w'), d0 = num(target, 'd'), k = W / w0;
let shown = 0, hidden = 0;
for (const g of boxes) {
	const x = num(g, 'x'), w = num(g, 'w'), d = num(g, 'd');
	const rx = parseFloat(g.querySelector('rect').getAttribute('x'));
	const rw = parseFloat(g.querySelector('rect').getAttribute('width'));
	const inside = d >= d0 && x >= x0 - 1e-3 && x + w <= x0 + w0 + 1e-3;
	const caller = d < d0 && x <= x0 + 1e-3 && x + w >= x0 + w0 - 1e-3;
	if (inside || caller) {
		shown++;
		if (g.style.display === 'none') fail(name(g) + ' hidden after the zoom');
		const wantX = inside ? (x - x0) * k : 0, wantW = inside ? w * k : W;
		if (!near(rx, wantX) || !near(rw, wantW))
			fail(name(g) + ' at ' + rx + '+' + rw + ', not ' + wantX + '+' + wantW);
		const label = g.querySelector('text').textContent;
		if (label && !(name(g) === label || (label.endsWith('..') && name(g).startsWith(label.slice(0, -2)))))
			fail(name(g) + ' labelled ' + label);
	} else {
		hidden++;
		if (g.style.display !== 'none') fail(name(g) + ' shown beside the zoomed box');
	}
}
if (!near(parseFloat(target.querySelector('rect').getAttribute('width')), W))
	fail('the zoomed box does not fill the width');
ids.reset.listeners.click();
for (const g of boxes)
	if (g.style.display === 'none' ||
	    !near(parseFloat(g.querySelector('rect').getAttribute('width')), num(g, 'w')))
		fail(name(g) + ' not restored by Reset zoom');

// Search: the share of the width the matching boxes cover, each sample once.
ids.search.listeners.click();
const re = new RegExp(searchText);
const spans = boxes.filter(g => re.test(name(g))).map(g => [num(g, 'x'), num(g, 'x') + num(g, 'w')])
	.sort((a, b) => a[0] - b[0]);
let covered = 0, end = -1;
for (const [a, b] of spans) if (b > end) { covered += b - Math.max(a, end); end = b; }
const magenta = boxes.filter(g => g.querySelector('rect').getAttribute('fill') === 'rgb(230,0,230)');
if (spans.length === 0) fail('nothing matches ' + searchText);
if (magenta.length !== spans.length) fail(magenta.length + ' boxes highlighted, ' + spans.length + ' match');
const said = ids.detail.textContent.match(/: ([0-9.]+)% of the samples/);
if (!said || !near(parseFloat(said[1]), 100 * covered / W))
	fail('the search reports "' + ids.detail.textContent + '", ' + (100 * covered / W).toFixed(2) + '% expected');
const report = ids.detail.textContent;
docListeners.keydown({ key: 'Escape', preventDefault() {} });
if (boxes.some(g => g.querySelector('rect').getAttribute('fill') === 'rgb(230,0,230)'))
	fail('Escape left boxes highlighted');

console.log((failed ? 'FAIL' : 'PASS') + ': ' + boxes.length + ' boxes; zoom to ' + name(target) +
	': ' + shown + ' shown, ' + hidden + ' hidden; search ' + searchText + ': ' + spans.length +
	' boxes, ' + report.replace(/^.*: /, ''));
process.exit(failed ? 1 : 0);
