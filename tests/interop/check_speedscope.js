// Opens aiflame's speedscope file in the speedscope app (npm package `speedscope`, served from
// 127.0.0.1) in Debian's headless Chromium, and checks that the app loaded it: the profile's name in
// the toolbar, and each named frame found by the app's search in the Sandwich view's table (the
// flame chart itself is a canvas) with the total samples that aiflame's folded output gives it.
// Usage: node check_speedscope.js PROFILE.speedscope.json SAME.folded NAME...
'use strict';
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

const [file, folded, ...names] = process.argv.slice(2);
const fail = (msg) => { console.error(`check_speedscope: FAIL ${file}: ${msg}`); process.exit(1); };
const app = path.join(path.dirname(require.resolve('speedscope/package.json')), 'dist', 'release');
const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json',
                '.wasm': 'application/wasm', '.png': 'image/png', '.woff2': 'font/woff2', '.ico': 'image/x-icon' };

// Samples of the stacks that hold a frame of that name (annotations stripped), from the folded file.
function foldedTotal(name) {
  let n = 0;
  for (const line of fs.readFileSync(folded, 'utf8').split('\n')) {
    if (!line) continue;
    const blank = line.lastIndexOf(' ');
    const frames = line.slice(0, blank).split(';').map((f) => f.replace(/^py::/, '').replace(/_\[[Ggk]\]$/, ''));
    if (frames.includes(name)) n += Number(line.slice(blank + 1));
  }
  return n;
}

const server = http.createServer((req, res) => {
  const url = decodeURIComponent(req.url.split('?')[0].split('#')[0]);
  const p = url === '/profile.json' ? file : path.join(app, path.normalize(url === '/' ? '/index.html' : url));
  if (url !== '/profile.json' && !p.startsWith(app)) { res.writeHead(403); res.end(); return; }
  fs.readFile(p, (err, data) => {
    if (err) { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'Content-Type': types[path.extname(p)] || 'application/octet-stream' });
    res.end(data);
  });
});

(async () => {
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${server.address().port}`;
  const profileName = JSON.parse(fs.readFileSync(file, 'utf8')).profiles[0].name;
  const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'aiflame-chromium-'));
  // A fresh profile directory each run (playwright passes it as --user-data-dir).
  const browser = await chromium.launchPersistentContext(userDir, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
           '--disable-sync', '--no-first-run'],
  });
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${base}/index.html#profileURL=${encodeURIComponent(base + '/profile.json')}`);
    await page.getByText(profileName, { exact: false }).first().waitFor({ timeout: 30000 })
      .catch(() => fail(`the app never showed the profile name "${profileName}" (errors: ${errors.join('; ')})`));
    await page.getByText('Sandwich').first().click();
    // The table of the Sandwich view first: on a loaded machine (the ASan tests beside it, issue #20) the
    // search keys came before the view took them and the frame was never typed in.
    await page.locator('tr').first().waitFor({ timeout: 30000 })
      .catch(() => fail('the Sandwich view never showed its table'));
    for (const n of names) {
      const row = page.locator('tr', { has: page.getByText(n, { exact: true }) }).first();
      let found = false;
      for (let attempt = 0; attempt < 4 && !found; attempt++) {  // the search again if its keys were lost
        await page.keyboard.press('Control+f');
        await page.keyboard.press('Control+a');
        await page.keyboard.type(n);
        found = await row.waitFor({ timeout: 10000 }).then(() => true, () => false);
      }
      if (!found) fail(`frame "${n}" not in the Sandwich view`);
      const text = await row.innerText();
      const shown = Number(text.trim().split(/\s/)[0].replace(/,/g, ''));
      const want = foldedTotal(n);
      if (shown !== want) fail(`frame "${n}": the app shows ${shown} samples (${JSON.stringify(text)}), folded has ${want}`);
    }
    if (errors.length) fail(`page errors: ${errors.join('; ')}`);
    console.log(`check_speedscope: ok ${file}: "${profileName}" loaded, frames ${names.join(', ')} shown`);
  } finally {
    await browser.close();
    server.close();
    fs.rmSync(userDir, { recursive: true, force: true });
  }
})().catch((e) => fail(String(e)));
