// Opens aiflame's HTML report in Debian's headless Chromium (playwright-core) and uses it as a user
// would: the page loads with no console errors; clicking a frame zooms to it; search highlights and
// reports the matched percentage (checked against the folded output); dragging over the heatmap
// changes the flame graph's total; the inverted toggle puts the leaves at the root. A screenshot of
// each state goes to SHOTS_DIR.
// With --ranks (a report of several ranks): the selector lists both ranks and both GPUs, the
// per-process table has a row per rank and the imbalance line; un-checking rank 1 (or GPU 1) makes the
// flame graph's and the tables' totals those of the folded output filtered to rank 0 (GPU 0) and
// leaves one heatmap lane.
// With SITE_REGEX, every row of the launch-site table must match it (the user's own frames, not the
// framework's).
// With SITE_SHARE too, the launch-site table's rows hold at least SITE_SHARE% of the samples and every
// row of the top-kernels table names a launch site matching SITE_REGEX.
// Usage: node check_html.js REPORT.html SAME.folded SHOTS_DIR FRAME_TO_CLICK SEARCH_TERM [SITE_REGEX [SITE_SHARE]]
//        node check_html.js --hostile REPORT.html SHOTS_DIR
//        node check_html.js --timed REPORT.html SHOTS_DIR MAX_MS
//        node check_html.js --ranks REPORT.html SHOTS_DIR RANK0.folded GPU0.folded
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

const args = process.argv.slice(2);
const mode = args[0].startsWith('--') ? args.shift() : '--full';
const file = path.resolve(args[0]);
const fail = (msg) => { console.error(`check_html: FAIL ${path.basename(file)}: ${msg}`); process.exit(1); };

function foldedTotal(folded) {
  let all = 0;
  for (const line of fs.readFileSync(folded, 'utf8').split('\n')) if (line) all += Number(line.slice(line.lastIndexOf(' ') + 1));
  return all;
}

function foldedShare(folded, term) {
  let all = 0, hit = 0;
  const re = new RegExp(term, 'i');
  for (const line of fs.readFileSync(folded, 'utf8').split('\n')) {
    if (!line) continue;
    const blank = line.lastIndexOf(' ');
    const n = Number(line.slice(blank + 1));
    all += n;
    if (line.slice(0, blank).split(';').some((f) => re.test(f))) hit += n;
  }
  return all ? (100 * hit) / all : 0;
}

// Drags over the heatmap's first lane, from its hottest cell one row down.
async function dragHottestCell(page) {
  const box = await page.evaluate(() => window.aiflame.heatmapBox());
  const hot = await page.evaluate(() => window.aiflame.hottestCell());
  const x = box.x + (hot.col + 0.5) * box.cw, y = box.y + (hot.row + 0.5) * box.ch;
  await page.mouse.move(x, y);
  await page.mouse.down();
  await page.mouse.move(x, y + box.ch, { steps: 2 });
  await page.mouse.up();
}

// The heatmap's axes and colour scale, as the SVG heatmap has them (issue #67: a 170x316-px canvas
// without either): read back from the canvas's pixels. A frame (#999) left of the first lane's cells,
// y-axis labels (dark text) in the margin left of it, and the scale's hottest swatch (rgb(135,35,0),
// the colour of the hottest cell) in the strip below the lanes.
async function checkHeatmapAxes(page) {
  const got = await page.evaluate(() => {
    const b = window.aiflame.heatmapBox(), c = document.getElementById('heatmap'), ctx = c.getContext('2d');
    const laneH = b.rows * b.ch, px = (x, y) => Array.from(ctx.getImageData(x, y, 1, 1).data);
    const frame = px(b.left - 1, 14 + Math.floor(laneH / 2));
    const margin = ctx.getImageData(0, 14, b.left - 6, laneH).data;
    let labelPixels = 0;
    for (let i = 0; i < margin.length; i += 4) if (margin[i + 3] > 128 && margin[i] < 140) labelPixels++;
    const strip = ctx.getImageData(0, c.height - 40, c.width, 40).data;
    let hottest = 0;
    for (let i = 0; i < strip.length; i += 4)
      if (Math.abs(strip[i] - 135) <= 2 && Math.abs(strip[i + 1] - 35) <= 2 && strip[i + 2] <= 2 && strip[i + 3] === 255) hottest++;
    return { width: c.width, height: c.height, frame, labelPixels, hottest };
  });
  if (got.width < 700) fail(`heatmap canvas ${got.width} px wide, want >= 700 (room for the axes and the scale)`);
  if (!(got.frame[0] === 153 && got.frame[1] === 153 && got.frame[2] === 153)) fail(`no axis frame left of the heatmap's cells: ${got.frame}`);
  if (got.labelPixels < 50) fail(`no y-axis labels left of the heatmap (${got.labelPixels} dark pixels)`);
  if (got.hottest < 100) fail(`no colour scale under the heatmap (${got.hottest} pixels of its hottest colour)`);
  console.log(`check_html: heatmap ${got.width}x${got.height} px with axes and a colour scale: ok`);
}

// The rank/GPU selector and the per-process table of a two-rank report.
async function checkRanks(page, rank0, gpu0, shot) {
  const labels = await page.evaluate(() => window.aiflame.selectorLabels());
  for (const want of ['rank 0', 'rank 1', 'GPU 0', 'GPU 1'])
    if (!labels.some((l) => l.startsWith(want))) fail(`selector lacks ${want}: ${JSON.stringify(labels)}`);
  const table = await page.evaluate(() => Array.from(document.querySelectorAll('#t-procs tr'), (tr) => Array.from(tr.cells, (c) => c.textContent)));
  const row0 = table.find((r) => r[0] === '0'), row1 = table.find((r) => r[0] === '1');
  if (!row0 || !row1) fail(`per-process table lacks rank 0 or 1: ${JSON.stringify(table)}`);
  const samplesCol = table[0].indexOf('GPU samples');
  if (Number(row0[samplesCol]) !== rank0) fail(`table says rank 0 has ${row0[samplesCol]} samples, folded --pids 'rank 0' ${rank0}`);
  const line = await page.textContent('#imbalance');
  if (!/GPU busy from [\d.]+% \(rank \d\) to [\d.]+% \(rank \d\)/.test(line)) fail(`no imbalance line: "${line}"`);
  const lanes = await page.evaluate(() => window.aiflame.heatmapLanes());
  if (lanes.length !== 2 || !lanes[0].startsWith('rank 0') || !lanes[1].startsWith('rank 1')) fail(`heatmap lanes: ${lanes}`);
  const total0 = await page.evaluate(() => window.aiflame.total());
  // The stall table sums every sample in view once (each stack ends in one stall reason).
  const stallSum = () => page.evaluate(() => Array.from(document.querySelectorAll('#t-stalls tr'))
    .slice(1).reduce((s, tr) => s + Number(tr.cells[1].textContent), 0));
  const expect = async (what, want) => {
    const total = await page.evaluate(() => window.aiflame.total());
    if (total !== want) fail(`${what}: flame graph total ${total}, expected ${want}`);
    await page.waitForFunction((w) => Array.from(document.querySelectorAll('#t-stalls tr')).slice(1)
      .reduce((s, tr) => s + Number(tr.cells[1].textContent), 0) === w, want, { timeout: 5000 })
      .catch(async () => fail(`${what}: stall table sums to ${await stallSum()}, expected ${want}`));
  };
  const rank1 = page.locator('#selector label', { hasText: 'rank 1' }).locator('input');
  await rank1.uncheck();
  await expect('rank 1 un-checked', rank0);
  const lanes0 = await page.evaluate(() => window.aiflame.heatmapLanes());
  if (lanes0.length !== 1 || !lanes0[0].startsWith('rank 0')) fail(`heatmap lanes with rank 1 un-checked: ${lanes0}`);
  const showing = await page.evaluate(() => window.aiflame.showing());
  if (!showing.includes('rank 0') || showing.includes('rank 1')) fail(`summary does not say what is shown: "${showing}"`);
  const off = await page.evaluate(() => Array.from(document.querySelectorAll('#t-procs tr.off'), (tr) => tr.cells[0].textContent));
  if (JSON.stringify(off) !== '["1"]') fail(`rank 1's row not greyed out: ${off}`);
  await shot('rank0');
  // A time range on rank 0's lane: the selection still holds inside it.
  await dragHottestCell(page);
  const ranged = await page.evaluate(() => window.aiflame.total());
  if (!(ranged > 0 && ranged < rank0)) fail(`range on rank 0 alone: total ${ranged} not within (0, ${rank0})`);
  await page.click('#allrange');
  await expect('rank 0, whole run again', rank0);
  await rank1.check();
  await expect('rank 1 checked again', total0);
  const gpu1 = page.locator('#selector label', { hasText: 'GPU 1' }).locator('input');
  await gpu1.uncheck();
  await expect('GPU 1 un-checked', gpu0);
  await shot('gpu0');
  await gpu1.check();
  await expect('all shown again', total0);
  console.log(`check_html: ranks: selector ${JSON.stringify(labels)}; ` +
              `rank 0 alone ${rank0} of ${total0} samples (${ranged} in a range), GPU 0 alone ${gpu0}; ${line}: ok`);
}

(async () => {
  const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'aiflame-chromium-'));
  // Removed however the check ends: fail() exits the process from inside the try.
  process.on('exit', () => fs.rmSync(userDir, { recursive: true, force: true }));
  const browser = await chromium.launchPersistentContext(userDir, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1400, height: 1000 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
  });
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('dialog', (d) => { errors.push('dialog opened: ' + d.message()); d.dismiss(); });
    const requests = [];
    page.on('request', (r) => { if (!r.url().startsWith('file:')) requests.push(r.url()); });
    const t0 = Date.now();
    await page.goto('file://' + file);
    await page.waitForFunction(() => window.aiflame && window.aiflame.readyMs, null, { timeout: 30000 })
      .catch(() => fail(`the report never became ready (errors: ${errors.join('; ')})`));
    const loadMs = Date.now() - t0;
    const shots = args[mode === '--full' ? 2 : 1];
    const shot = (name) => page.screenshot({ path: path.join(shots, `${path.basename(file, '.html')}_${name}.png`), fullPage: true });
    if (errors.length) fail(`console errors on load: ${errors.join('; ')}`);
    if (requests.length) fail(`network requests: ${requests.join(', ')}`);
    await shot('loaded');

    if (mode === '--timed') {
      const max = Number(args[2]);
      const ready = await page.evaluate(() => window.aiflame.readyMs);
      const tm = await page.evaluate(() => window.aiflame.timings);
      console.log(`check_html: ${path.basename(file)} usable after ${ready.toFixed(0)} ms in the page (${loadMs} ms with navigation; ` +
                  `script: parse ${tm.parse.toFixed(0)}, tree ${tm.tree.toFixed(0)}, heatmap ${tm.heatmap.toFixed(0)}, drawn ${tm.draw.toFixed(0)} ms)`);
      if (loadMs > max) fail(`took ${loadMs} ms to be usable (budget ${max} ms)`);
      // Still interactive: a search over every frame answers.
      await page.fill('#search', 'kernel_1');
      await page.waitForFunction(() => window.aiflame.matchPercent !== null);
      return;
    }
    if (mode === '--ranks') {
      await checkRanks(page, foldedTotal(args[2]), foldedTotal(args[3]), shot);
      if (errors.length) fail(`console errors: ${errors.join('; ')}`);
      return;
    }
    if (mode === '--hostile') {
      const scripts = await page.evaluate(() => document.querySelectorAll('script').length);
      if (scripts !== 2) fail(`expected the report's 2 script elements, found ${scripts}`);
      const title = await page.evaluate(() => document.title);
      if (!title.includes('<script>')) fail(`hostile title not shown as text: ${title}`);
      await page.fill('#search', 'script');
      const pct = await page.evaluate(() => window.aiflame.matchPercent);
      if (!(pct > 0)) fail('search for a hostile name found nothing');
      const roots = await page.evaluate(() => window.aiflame.rootNames());
      if (!roots.some((r) => r.includes('<script>alert(1)</script>'))) fail(`hostile frame not kept verbatim: ${roots}`);
      if (errors.length) fail(`errors: ${errors.join('; ')}`);
      await shot('hostile');
      console.log('check_html: hostile names escaped, kept verbatim as text');
      return;
    }

    const [, folded, , frame, term, siteRe, siteShare] = args;
    await checkHeatmapAxes(page);
    const total0 = await page.evaluate(() => window.aiflame.total());
    if (siteRe) {
      const sites = await page.evaluate(() => Array.from(document.querySelectorAll('#t-sites tr'), (tr) => Array.from(tr.cells, (c) => c.textContent)));
      const rows = sites.slice(1);
      if (!rows.length || rows[0][0] === 'none') fail('the launch-site table is empty');
      for (const row of rows) if (!new RegExp(siteRe).test(row[0])) fail(`launch site "${row[0]}" is not the user's code (${siteRe})`);
      console.log(`check_html: ${rows.length} launch sites, top: ${rows.slice(0, 3).map((r) => `${r[0]} ${r[2]}`).join(', ')}`);
      // The top-kernels table names each kernel's heaviest launch site ("NAME" or "NAME (NN%)").
      const kernels = (await page.evaluate(() => Array.from(document.querySelectorAll('#t-kernels tr'), (tr) => Array.from(tr.cells, (c) => c.textContent)))).slice(1);
      const siteOf = (cell) => cell.replace(/ \([0-9]+%\)$/, '');
      for (const row of kernels) {
        const site = siteOf(row[row.length - 1]);
        if (siteShare !== undefined && !new RegExp(siteRe).test(site)) fail(`kernel "${row[0]}": top launch site "${site}" is not the user's code (${siteRe})`);
      }
      // With SITE_SHARE, the launch sites account for at least that share of all samples (the
      // backward pass's kernels too, issue #23).
      if (siteShare !== undefined) {
        const share = rows.reduce((a, r) => a + parseFloat(r[2]), 0);
        if (!(share >= Number(siteShare))) fail(`launch sites hold ${share.toFixed(2)}% of the samples, want >= ${siteShare}%`);
        console.log(`check_html: launch sites hold ${share.toFixed(2)}%; every top kernel's site is the user's code, e.g. ${kernels.slice(0, 2).map((r) => `${r[0].slice(0, 40)} -> ${r[r.length - 1]}`).join('; ')}`);
      }
    }
    // Click-zoom.
    let r = await page.evaluate((n) => window.aiflame.rectOf(n), frame);
    if (!r) fail(`frame ${frame} not drawn`);
    // Deep graphs are taller than the window: scroll the frame into view first.
    await page.evaluate((y) => window.scrollBy(0, y - 400), r.y);
    r = await page.evaluate((n) => window.aiflame.rectOf(n), frame);
    await page.mouse.click(r.x, r.y);
    const focus = await page.evaluate(() => window.aiflame.focusName());
    if (focus !== frame) fail(`click did not zoom to ${frame} (focus: ${focus})`);
    const crumbs = await page.textContent('#breadcrumbs');
    if (!crumbs.includes(frame)) fail(`breadcrumbs lack ${frame}: ${crumbs}`);
    const zoomed = await page.evaluate(() => window.aiflame.total());
    if (!(zoomed > 0 && zoomed < total0)) fail(`zoomed total ${zoomed} not within (0, ${total0})`);
    await shot('zoomed');
    await page.click('#reset');
    await page.evaluate(() => window.scrollTo(0, 0));
    // Search.
    await page.fill('#search', term);
    const pct = await page.evaluate(() => window.aiflame.matchPercent);
    const want = foldedShare(folded, term);
    if (pct === null || Math.abs(pct - want) > 0.01) fail(`search "${term}": ${pct}% matched, folded output says ${want.toFixed(2)}%`);
    const text = await page.textContent('#match');
    if (!text.includes(pct.toFixed(2) + '%')) fail(`match text "${text}" does not show ${pct.toFixed(2)}%`);
    await shot('search');
    await page.fill('#search', '');
    // Heatmap range: drag over the hottest column's first rows.
    await dragHottestCell(page);
    const ranged = await page.evaluate(() => window.aiflame.total());
    if (!(ranged > 0 && ranged < total0)) fail(`heatmap range total ${ranged} not within (0, ${total0})`);
    const rangeText = await page.textContent('#range');
    if (!rangeText.startsWith('Showing')) fail(`no range shown: "${rangeText}"`);
    await shot('range');
    await page.click('#allrange');
    const back = await page.evaluate(() => window.aiflame.total());
    if (back !== total0) fail(`whole run total ${back} != ${total0}`);
    // Inverted.
    const rootsBefore = await page.evaluate(() => window.aiflame.rootNames());
    await page.check('#inverted');
    const rootsAfter = await page.evaluate(() => window.aiflame.rootNames());
    const kinds = await page.evaluate(() => window.aiflame.rootKinds());
    if (JSON.stringify(rootsBefore) === JSON.stringify(rootsAfter) || !kinds.every((k) => k === 'stall'))
      fail(`inverted roots should be stall reasons: ${rootsAfter} (${kinds})`);
    await shot('inverted');
    if (errors.length) fail(`console errors: ${errors.join('; ')}`);
    console.log(`check_html: ${path.basename(file)}: loaded in ${loadMs} ms, zoom, search (${pct.toFixed(2)}%), range (${ranged} of ${total0}), inverted: ok`);
  } finally {
    await browser.close();
  }
})().catch((e) => fail(String(e && e.stack || e)));
