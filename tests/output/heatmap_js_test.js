// The HTML report's heatmap script (src/output/html/heatmap.js) in Node, with a stand-in canvas: its
// size comes from the profile's duration_ms, bounded as the SVG heatmap's (600 columns), and every
// timeline entry lands in a cell. Usage: node heatmap_js_test.js path/to/heatmap.js
'use strict';
const fs = require('fs');
const aiflameHeatmap = new Function(`${fs.readFileSync(process.argv[2], 'utf8')}\nreturn aiflameHeatmap;`)();

let failed = 0, passed = 0;
const check = (name, ok, detail) => { if (ok) passed++; else { failed++; console.log(`FAIL ${name}${detail ? `: ${detail}` : ''}`); } };

const listeners = {};
global.window = { addEventListener: (type, f) => { listeners[type] = f; } };
function page() {
  const noop = () => {};
  const ctx = { clearRect: noop, fillRect: noop, fillText: noop, strokeRect: noop, set font(v) {}, set fillStyle(v) {},
                set strokeStyle(v) {}, set lineWidth(v) {}, set textAlign(v) {}, set textBaseline(v) {} };
  const canvas = { width: 0, height: 0, style: {}, getContext: () => ctx, getBoundingClientRect: () => ({ left: 0, top: 0 }),
                   addEventListener: (type, f) => { listeners[type] = f; } };
  const els = { heatmap: canvas, heatinfo: {}, range: {}, allrange: { addEventListener: noop } };
  return (id) => els[id];
}
const sel = { processes: [], procOf: () => 0, devOn: new Map(), procOn: [], label: () => '', entryOn: () => true };
// A heatmap of timeline entries [stack, device, time_ms, weight] over duration_ms, drawn; the page's
// handles and the canvas's width.
function heatmap(duration_ms, timeline, interval_ms = 10) {
  const $ = page();
  let range;
  const h = aiflameHeatmap({ timeline, duration_ms, summary: { interval_ms } }, $, sel, (r) => { range = r; });
  h.update();
  return { h, width: $('heatmap').width, range: () => range };
}
function drag(h, [c0, r0], [c1, r1]) {
  const b = h.box(), at = (c, r) => ({ clientX: b.x + (c + 0.5) * b.cw, clientY: b.y + (r + 0.5) * b.ch, preventDefault() {} });
  listeners.mousedown(at(c0, r0));
  listeners.mouseup(at(c1, r1));
}

// A 2.5-s run: a column a second, as before.
let m = heatmap(2500, [0, 0, 1230, 2, 0, 0, 2000, 1]);
check('2.5 s: 3 columns of 100 rows', m.h.box().cols === 3 && m.h.box().rows === 100, JSON.stringify(m.h.box()));
check('2.5 s: the hottest cell is 1.23 s', JSON.stringify(m.h.hottestCell()) === JSON.stringify({ col: 1, row: 23, v: 2 }), JSON.stringify(m.h.hottestCell()));
drag(m.h, [1, 23], [1, 24]);
check('2.5 s: a drag over two rows is their 20 ms', JSON.stringify(m.range()) === '[1230,1250]', JSON.stringify(m.range()));

// A sample at exactly the last whole second (duration_ms is the last cell's start): was left out.
m = heatmap(3000, [0, 0, 3000, 5]);
check('sample at the last whole second is drawn', m.h.hottestCell().v === 5 && m.h.hottestCell().col === 3, JSON.stringify(m.h.hottestCell()));

// Two hours: was 7200 columns, a 43,202-px canvas (Chromium draws nothing past 32,767).
m = heatmap(7200 * 1000, [0, 0, 0, 1, 0, 0, 7199 * 1000 + 500, 3]);
check('2 h: at most 600 columns', m.h.box().cols <= 600 && m.h.box().colS === 12, JSON.stringify(m.h.box()));
check('2 h: canvas within 32,767 px', m.width <= 32767, `${m.width} px`);
check('2 h: the last sample in the last column', JSON.stringify(m.h.hottestCell()) === JSON.stringify({ col: 599, row: 50, v: 3 }), JSON.stringify(m.h.hottestCell()));
drag(m.h, [2, 10], [3, 0]);
check('2 h: a drag is whole 12-s columns', JSON.stringify(m.range()) === '[24000,48000]', JSON.stringify(m.range()));

// A crafted profile's kernel at 10^19 ns: 10^13 ms, 10^12 cells (RangeError) before.
let threw = null;
try {
  m = heatmap(1e13, [0, 0, 0, 1, 0, 0, 1e13, 7]);
} catch (e) {
  threw = e;
}
check('10^13 ms: no exception', threw === null, String(threw));
if (!threw) {
  check('10^13 ms: at most 600 columns', m.h.box().cols <= 600, JSON.stringify(m.h.box()));
  check('10^13 ms: the far sample drawn', m.h.hottestCell().v === 7, JSON.stringify(m.h.hottestCell()));
}

console.log(`heatmap_js: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
