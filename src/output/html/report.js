// aiflame's HTML report: a flame graph (canvas), a sub-second heatmap whose selected time range
// re-draws the flame graph (heatmap.js), and tables, all from the JSON in #aiflame-data, for the
// processes and GPUs the selection shows (select.js). Names only ever reach the page through
// textContent and canvas text, never through HTML parsing.
'use strict';
(function () {
  const T0 = performance.now();
  const D = JSON.parse(document.getElementById('aiflame-data').textContent);
  // Arrays packed by the writer (pack_numbers in html_writer.cpp).
  const DIGIT = new Int8Array(128);
  'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.split('').forEach((c, i) => { DIGIT[c.charCodeAt(0)] = i; });
  const unpack = (str) => {
    let count = 0;
    for (let i = 0; i < str.length; i++) if (DIGIT[str.charCodeAt(i)] < 32) count++;
    const out = new Int32Array(count);
    let v = 0, shift = 0, k = 0;
    for (let i = 0; i < str.length; i++) {
      const d = DIGIT[str.charCodeAt(i)];
      v |= (d & 31) << shift;
      if (d & 32) shift += 5;
      else { out[k++] = v; v = 0; shift = 0; }
    }
    return out;
  };
  for (const k of ['stack_order', 'stack_pre', 'stack_len', 'stack_frames']) D[k] = unpack(D[k]);
  const timings = { parse: performance.now() - T0 };
  const KINDS = D.kinds;  // kind index -> name
  const COLORS = {
    process: [120, 140, 185], python: [235, 130, 185], native: [225, 200, 60], runtime: [215, 80, 60],
    separator: [170, 170, 170], gpu_kernel: [80, 215, 210], gpu_source: [60, 200, 205],
    gpu_instruction: [110, 215, 100], stall: [60, 160, 60], unattributed: [215, 215, 215],
  };
  const $ = (id) => document.getElementById(id);
  const frameName = (f) => D.names[D.frames[2 * f]];
  const frameKind = (f) => KINDS[D.frames[2 * f + 1]];
  // The user's own frames (not the standard library, site-packages, frameworks or system libraries):
  // a kernel's launch site is the deepest of them; inputs that do not tell fall back to the deepest
  // Python or native frame.
  const userFrames = D.user_frames ? new Set(D.user_frames) : null;
  const isSite = (f, k) => (userFrames ? userFrames.has(f)
    : (k === 'python' || k === 'native')) && !frameName(f).startsWith('__device_stub');
  const nameHash = (s) => { let h = 2166136261; for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619); return (h >>> 0) / 4294967295; };
  const colorCache = new Map();
  const colorOf = (f) => {
    let c = colorCache.get(f);
    if (c) return c;
    const b = COLORS[frameKind(f)] || [200, 200, 200], v = nameHash(frameName(f));
    c = `rgb(${Math.min(255, b[0] + 30 * v) | 0},${Math.min(255, b[1] + 25 * v) | 0},${Math.min(255, b[2] + 20 * v) | 0})`;
    colorCache.set(f, c);
    return c;
  };
  const nStacks = D.stack_count.length;

  // A tree in flat arrays: node 0 is the root (frame -1); parents come before their children;
  // kids[off[n] .. off[n+1]) are n's children in drawing order.
  function finish(parent, frame, n) {
    const off = new Int32Array(n + 1), kids = new Int32Array(Math.max(n - 1, 0));
    for (let i = 1; i < n; i++) off[parent[i] + 1]++;
    for (let i = 0; i < n; i++) off[i + 1] += off[i];
    const fill = off.slice(0, n);
    for (let i = 1; i < n; i++) kids[fill[parent[i]]++] = i;
    return { parent, frame, n, off, kids, val: new Float64Array(n), est: new Float64Array(n) };
  }

  // The stacks' prefix tree, rebuilt from the sorted, prefix-shared encoding in one pass.
  function buildNormal() {
    let total = 1;
    for (let i = 0; i < D.stack_len.length; i++) total += D.stack_len[i];
    const parent = new Int32Array(total), frame = new Int32Array(total), leaf = new Int32Array(nStacks);
    parent[0] = -1; frame[0] = -1;
    const path = [0];
    let n = 1, p = 0;
    for (let i = 0; i < D.stack_order.length; i++) {
      path.length = D.stack_pre[i] + 1;
      for (let k = 0; k < D.stack_len[i]; k++) {
        parent[n] = path[path.length - 1]; frame[n] = D.stack_frames[p++]; path.push(n); n++;
      }
      leaf[D.stack_order[i]] = path[path.length - 1];
    }
    const t = finish(parent, frame, n);
    t.leaf = leaf;
    return t;
  }
  const normal = buildNormal();
  timings.tree = performance.now() - T0;
  // Of each stack's samples, the share the attribution's model split between launch stacks.
  const estShare = D.stack_estimated || null;
  function setWeights(t, w) {
    t.val.fill(0);
    t.est.fill(0);
    for (let s = 0; s < nStacks; s++) if (w[s]) { t.val[t.leaf[s]] += w[s]; if (estShare) t.est[t.leaf[s]] += w[s] * estShare[s]; }
    for (let i = t.n - 1; i > 0; i--) { t.val[t.parent[i]] += t.val[i]; t.est[t.parent[i]] += t.est[i]; }
  }
  // The inverted tree (leaves at the root), built for the weights in view.
  function buildInverted(w) {
    const parent = [-1], frame = [-1], child = new Map();
    const val = [0], est = [0];
    for (let s = 0; s < nStacks; s++) {
      if (!w[s]) continue;
      let node = 0;
      const e = estShare ? w[s] * estShare[s] : 0;
      val[0] += w[s];
      est[0] += e;
      for (let x = normal.leaf[s]; x > 0; x = normal.parent[x]) {
        const f = normal.frame[x], key = node * 4194304 + f;
        let c = child.get(key);
        if (c === undefined) { c = parent.length; parent.push(node); frame.push(f); val.push(0); est.push(0); child.set(key, c); }
        val[c] += w[s];
        est[c] += e;
        node = c;
      }
    }
    const t = finish(Int32Array.from(parent), Int32Array.from(frame), parent.length);
    t.val = Float64Array.from(val);
    t.est = Float64Array.from(est);
    for (let i = 0; i < t.n; i++) t.kids.subarray(t.off[i], t.off[i + 1]).sort((a, b) => t.frame[a] - t.frame[b]);
    return t;
  }

  // ---- which stacks count: the processes and GPUs selected, inside the time range selected ----
  let range = null;  // [t0_ms, t1_ms)
  const sel = aiflameSelection(D, unpack, $, () => { heat.update(); showSelection(); rebuild(); });

  // ---- flame graph on a canvas ----
  const canvas = $('flame'), ctx = canvas.getContext('2d');
  const ROW = 17;
  let tree = normal, focus = 0, rects = [], searchRe = null, inverted = false, matchCache = null;
  const label = (n) => (n === 0 ? `all (${Math.round(tree.val[0])} samples)` : frameName(tree.frame[n]));
  function matches(n) {
    if (!searchRe || n === 0) return false;
    const f = tree.frame[n];
    let m = matchCache.get(f);
    if (m === undefined) { m = searchRe.test(frameName(f)); matchCache.set(f, m); }
    return m;
  }
  function maxDepth(n) {
    let best = 0;
    const st = [n, 0];
    while (st.length) {
      const d = st.pop(), x = st.pop();
      if (d > best) best = d;
      for (let k = tree.off[x]; k < tree.off[x + 1]; k++) if (tree.val[tree.kids[k]] > 0) st.push(tree.kids[k], d + 1);
    }
    return best;
  }

  function draw() {
    const width = canvas.clientWidth || 1200;
    const ancestors = [];
    for (let x = focus; x > 0; x = tree.parent[x]) ancestors.unshift(x);
    const depth = ancestors.length + maxDepth(focus) + 1;
    const dpr = window.devicePixelRatio || 1;
    canvas.width = width * dpr;
    canvas.height = depth * ROW * dpr;
    canvas.style.height = depth * ROW + 'px';
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.font = '11px Verdana, sans-serif';
    ctx.textBaseline = 'middle';
    rects = [];
    const yOf = (level) => (inverted ? level * ROW : (depth - 1 - level) * ROW);
    const box = (n, x, w, level, faded) => {
      const y = yOf(level);
      ctx.fillStyle = matches(n) ? 'rgb(230,0,230)' : (n === 0 ? 'rgb(200,200,205)' : colorOf(tree.frame[n]));
      ctx.globalAlpha = faded ? 0.55 : 1;
      ctx.fillRect(x, y, Math.max(w - 0.5, 0.5), ROW - 1);
      ctx.globalAlpha = 1;
      rects.push({ n, x, y, w });
      if (w > 28) {
        const text = label(n), fit = Math.floor((w - 6) / 6.6);
        ctx.fillStyle = '#000';
        ctx.fillText(text.length > fit ? text.slice(0, Math.max(0, fit - 2)) + '..' : text, x + 3, y + ROW / 2);
      }
    };
    // The focus's ancestors span the whole width, faded; the focus's subtree fills it.
    box(0, 0, width, 0, focus !== 0);
    ancestors.forEach((a, i) => { if (a !== focus) box(a, 0, width, i + 1, true); });
    const level0 = ancestors.length;
    if (focus !== 0) box(focus, 0, width, level0, false);
    const scale = width / Math.max(tree.val[focus], 1);
    const st = [focus, 0, level0];
    while (st.length) {
      const level = st.pop(), x = st.pop(), n = st.pop();
      let cx = x;
      for (let k = tree.off[n]; k < tree.off[n + 1]; k++) {
        const c = tree.kids[k], w = tree.val[c] * scale;
        if (w >= 0.3) { box(c, cx, w, level + 1, false); st.push(c, cx, level + 1); }
        cx += w;
      }
    }
    $('total').textContent = String(Math.round(tree.val[focus]));
    updateBreadcrumbs(ancestors);
    updateMatch();
  }

  function updateBreadcrumbs(ancestors) {
    const bc = $('breadcrumbs');
    bc.textContent = '';
    [0].concat(ancestors).forEach((n, i) => {
      if (i) bc.appendChild(document.createTextNode(' › '));
      const s = document.createElement('span');
      s.textContent = n === 0 ? 'all' : frameName(tree.frame[n]);
      s.onclick = () => { focus = n; draw(); };
      bc.appendChild(s);
    });
  }

  // Share of all samples in view under a matching frame (nested matches counted once).
  function updateMatch() {
    if (!searchRe) { $('match').textContent = ''; window.aiflame.matchPercent = null; return; }
    let matched = 0;
    const st = [0];
    while (st.length) {
      const n = st.pop();
      if (matches(n)) { matched += tree.val[n]; continue; }
      for (let k = tree.off[n]; k < tree.off[n + 1]; k++) if (tree.val[tree.kids[k]] > 0) st.push(tree.kids[k]);
    }
    const all = tree.val[0], pct = all ? (100 * matched) / all : 0;
    window.aiflame.matchPercent = pct;
    $('match').textContent = `Matched: ${pct.toFixed(2)}% (${Math.round(matched)} of ${Math.round(all)} samples)`;
  }

  function hit(ev) {
    const r = canvas.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
    for (let i = rects.length - 1; i >= 0; i--) { const b = rects[i]; if (x >= b.x && x < b.x + b.w && y >= b.y && y < b.y + ROW) return b.n; }
    return null;
  }
  canvas.addEventListener('click', (ev) => { const n = hit(ev); if (n !== null) { focus = n; draw(); } });
  canvas.addEventListener('mousemove', (ev) => {
    const n = hit(ev);
    const all = Math.max(tree.val[0], 1);
    $('details').textContent = n === null ? '' : `${label(n)} (${n === 0 ? 'root' : frameKind(tree.frame[n]).replace('_', ' ')}): ` +
      `${Math.round(tree.val[n])} samples, ${(100 * tree.val[n] / all).toFixed(2)}%` +
      // "~": part of these samples was split between launch stacks by the attribution's model.
      (tree.est[n] > 0.5 ? `, ~${(100 * tree.est[n] / Math.max(tree.val[n], 1)).toFixed(1)}% split between launch stacks by the model` : '');
  });

  function rebuild() {
    const weights = sel.weights(range);
    if (inverted) tree = buildInverted(weights);
    else { setWeights(normal, weights); tree = normal; }
    focus = 0;
    draw();
    // The tables walk every stack: filled right after the flame graph is on the screen.
    setTimeout(() => fillTables(weights), 0);
  }

  $('search').addEventListener('input', (ev) => {
    const q = ev.target.value;
    matchCache = new Map();
    if (!q) searchRe = null;
    else { try { searchRe = new RegExp(q, 'i'); } catch (e) { searchRe = new RegExp(q.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'i'); } }
    draw();
  });
  $('inverted').addEventListener('change', (ev) => { inverted = ev.target.checked; rebuild(); });
  $('reset').addEventListener('click', () => { focus = 0; draw(); });
  window.addEventListener('resize', () => draw());

  const heat = aiflameHeatmap(D, $, sel, (r) => { range = r; rebuild(); });

  // ---- tables, from the weights in view ----
  function table(id, head, rowsData) {
    const t = $(id);
    t.textContent = '';
    const tr = document.createElement('tr');
    for (const h of head) { const th = document.createElement('th'); th.textContent = h; tr.appendChild(th); }
    t.appendChild(tr);
    if (!rowsData.length) { const r = document.createElement('tr'), td = document.createElement('td'); td.textContent = 'none'; r.appendChild(td); t.appendChild(r); }
    for (const row of rowsData) {
      const r = document.createElement('tr');
      row.forEach((v, i) => { const td = document.createElement('td'); td.textContent = String(v); if (!i) td.title = String(v); r.appendChild(td); });
      t.appendChild(r);
    }
  }
  function fillTables(weights) {
    const by = { gpu_kernel: new Map(), gpu_source: new Map(), stall: new Map(), site: new Map() };
    const kernelSites = new Map();  // kernel -> (launch site -> weight): the top-kernels table's site column
    let total = 0;
    for (let s = 0; s < weights.length; s++) {
      const w = weights[s];
      if (!w) continue;
      total += w;
      let site = null, kernel = null, afterSep = false;
      const seen = new Set();
      for (let n = normal.leaf[s]; n > 0; n = normal.parent[n]) {
        const f = normal.frame[n], k = frameKind(f);
        if (k === 'separator') { afterSep = true; continue; }
        if (by[k] && !seen.has(k)) { seen.add(k); by[k].set(frameName(f), (by[k].get(frameName(f)) || 0) + w); }
        if (k === 'gpu_kernel' && kernel === null) kernel = frameName(f);
        // nvcc's generated launch stubs are not what a user calls a launch site.
        if (afterSep && site === null && isSite(f, k)) site = frameName(f);
      }
      if (site !== null) by.site.set(site, (by.site.get(site) || 0) + w);
      if (site !== null && kernel !== null) {
        let m = kernelSites.get(kernel);
        if (!m) kernelSites.set(kernel, (m = new Map()));
        m.set(site, (m.get(site) || 0) + w);
      }
    }
    const top = (m, n) => Array.from(m.entries()).sort((a, b) => b[1] - a[1]).slice(0, n);
    const pct = (v) => (total ? ((100 * v) / total).toFixed(2) + '%' : '-');
    // Each kernel's heaviest launch site, forward or backward (autograd's kernels sit under the forward
    // Python that created their node, issue #23), with the share of the kernel's samples it holds.
    const topSite = (k, v) => {
      const m = kernelSites.get(k);
      if (!m) return '-';
      const [name, sw] = top(m, 1)[0];
      return sw < v ? `${name} (${((100 * sw) / v).toFixed(0)}%)` : name;
    };
    table('t-kernels', ['kernel', 'samples', '%', 'GPU time ms', 'launches', userFrames ? 'top launch site (your code)' : 'top launch site'],
      top(by.gpu_kernel, 25).map(([k, v]) => {
        const info = sel.kernel(k);
        return [k, v, pct(v), info[0].toFixed(3), info[1], topSite(k, v)];
      }));
    table('t-lines', ['GPU source line', 'samples', '%'], top(by.gpu_source, 25).map(([k, v]) => [k, v, pct(v)]));
    table('t-stalls', ['stall reason', 'samples', '%'], top(by.stall, 40).map(([k, v]) => [k, v, pct(v)]));
    table('t-sites', [userFrames ? 'launch site (deepest frame of your own code)' : 'launch site (deepest Python or native frame)', 'samples', '%'], top(by.site, 25).map(([k, v]) => [k, v, pct(v)]));
  }

  // ---- header and legend ----
  const S = D.summary;
  const srows = [['command', S.command], ['duration', (D.duration_ms / 1000).toFixed(2) + ' s'],
    ['processes', S.processes], ['devices', S.devices.length ? S.devices.map((d) => 'GPU ' + d).join(', ') : '-'],
    ['GPU samples', S.samples], ['dropped samples', S.dropped],
    ['attributed to a launch stack', S.samples ? ((100 * S.attributed) / S.samples).toFixed(2) + '%' : '-']];
  if (sel.active) srows.push(['showing', sel.describe()]);
  let shownCell = null;
  for (const [k, v] of srows) {
    const tr = document.createElement('tr'), a = document.createElement('td'), b = document.createElement('td');
    a.textContent = k; b.textContent = String(v); tr.appendChild(a); tr.appendChild(b); $('summary').appendChild(tr);
    shownCell = b;
  }
  function showSelection() { if (sel.active) shownCell.textContent = sel.describe(); }
  for (const k of Object.keys(COLORS)) {
    const s = document.createElement('span'), i = document.createElement('i');
    i.style.background = `rgb(${COLORS[k].join(',')})`;
    s.appendChild(i); s.appendChild(document.createTextNode(k.replace('_', ' '))); $('legend').appendChild(s);
  }

  window.aiflame = {
    matchPercent: null,
    total: () => Math.round(tree.val[focus]),
    // Centre of the widest drawn box of a frame name, for tests and automation.
    rectOf: (name) => {
      let best = null;
      for (const b of rects) if (b.n > 0 && frameName(tree.frame[b.n]) === name && (!best || b.w > best.w)) best = b;
      if (!best) return null;
      const r = canvas.getBoundingClientRect();
      return { x: r.left + best.x + best.w / 2, y: r.top + best.y + ROW / 2 };
    },
    rootNames: () => Array.from(tree.kids.subarray(tree.off[0], tree.off[1])).filter((c) => tree.val[c] > 0).map((c) => frameName(tree.frame[c])),
    rootKinds: () => Array.from(tree.kids.subarray(tree.off[0], tree.off[1])).filter((c) => tree.val[c] > 0).map((c) => frameKind(tree.frame[c])),
    hottestCell: heat.hottestCell,
    focusName: () => (focus === 0 ? 'all' : frameName(tree.frame[focus])),
    heatmapBox: heat.box,
    heatmapLanes: heat.lanes,
    selectorLabels: sel.labels,
    showing: sel.describe,
  };
  heat.draw();
  timings.heatmap = performance.now() - T0;
  rebuild();
  timings.draw = performance.now() - T0;
  window.aiflame.timings = timings;
  window.aiflame.readyMs = performance.now();
})();
