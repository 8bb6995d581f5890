// A differential flame graph (`aiflame diff A B -o x.svg`) in Debian's headless Chromium: it is the
// report's SVG, so its script runs without errors, a click zooms a frame to the full width and back,
// and the search (its prompt answered) colours the matching frames and says what share they hold;
// frames are diff-coloured, and in a self-diff every frame is an outlined grey box.
// Usage: node check_svg_diff.js DIFF.svg FRAME SEARCH [--self]
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

const [file, frame, term, self] = process.argv.slice(2);
const fail = (msg) => { console.error(`check_svg_diff: FAIL ${file}: ${msg}`); process.exit(1); };

(async () => {
  const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'aiflame-chromium-'));
  process.on('exit', () => fs.rmSync(userDir, { recursive: true, force: true }));
  const browser = await chromium.launchPersistentContext(userDir, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1300, height: 1000 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
  });
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('dialog', (d) => d.accept(term));
    await page.goto('file://' + path.resolve(file));
    const rects = await page.evaluate(() => Array.from(document.querySelectorAll('#frames g.f:not(.f-all) rect'),
      (r) => [r.getAttribute('fill'), r.getAttribute('stroke')]));
    if (rects.length < 10) fail(`${rects.length} frames drawn`);
    const unoutlined = rects.filter(([, s]) => s !== '#888').length;
    if (unoutlined) fail(`${unoutlined} frames without an outline`);
    if (self !== undefined) {
      const notGrey = rects.filter(([f]) => f !== 'rgb(224,224,224)');
      if (notGrey.length) fail(`self-diff: ${notGrey.length} frames not the unchanged grey, e.g. ${notGrey[0][0]}`);
    } else if (!rects.some(([f]) => /^rgb\(255,/.test(f)) || !rects.some(([f]) => /,255\)$/.test(f))) {
      fail('no red (grew) or no blue (shrank) frame');
    }
    // Zoom: the frame's box widens to the whole graph (1200 px less two 10-px margins), then back.
    const widthOf = () => page.evaluate((name) => {
      for (const g of document.querySelectorAll('#frames g.f')) {
        const t = g.querySelector('title').textContent;
        if (t.slice(0, t.lastIndexOf(' (')) === name) return Number(g.querySelector('rect').getAttribute('width'));
      }
      return null;
    }, frame);
    const before = await widthOf();
    if (before === null) fail(`no frame ${frame}`);
    const box = await page.evaluate((name) => {
      for (const g of document.querySelectorAll('#frames g.f')) {
        const t = g.querySelector('title').textContent;
        if (t.slice(0, t.lastIndexOf(' (')) === name) { const b = g.querySelector('rect').getBoundingClientRect(); return [b.x, b.y, b.width, b.height]; }
      }
      return null;
    }, frame);
    await page.mouse.click(box[0] + Math.min(5, box[2] / 2), box[1] + box[3] / 2);
    const zoomed = await widthOf();
    if (!(Math.abs(zoomed - 1180) < 1)) fail(`clicking ${frame} (${before} px) left it ${zoomed} px wide, not 1180`);
    await page.click('#unzoom');
    if (Math.abs((await widthOf()) - before) > 0.01) fail('Reset Zoom did not restore the frame');
    // Search: the prompt is answered with TERM; matches turn the match colour and the share is shown.
    await page.click('#search');
    const matched = await page.textContent('#matched');
    const hits = await page.evaluate(() => Array.from(document.querySelectorAll('#frames rect'))
      .filter((r) => r.getAttribute('fill') === 'rgb(230,0,230)').length);
    if (!hits || !/Matched/i.test(matched)) fail(`search for ${term}: ${hits} frames coloured, matched line "${matched}"`);
    if (errors.length) fail(`script errors: ${errors.join('; ')}`);
    console.log(`check_svg_diff: ok ${path.basename(file)}: ${rects.length} frames, zoom ${before.toFixed(1)} -> ${zoomed} px, ` +
                `search ${term}: ${hits} frames, "${matched}"`);
  } finally {
    await browser.close();
  }
})().catch((e) => fail(String(e)));
