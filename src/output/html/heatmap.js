// aiflame's HTML report, the heatmap (loaded after select.js, before report.js): columns are seconds,
// rows the collection interval; one lane per recorded process (rank) when several have timed samples,
// else one per GPU. Only what the selection shows is drawn. Dragging selects a time range, handed to
// onRange ([t0_ms, t1_ms) or null for the whole run).
// At most 600 columns, as the SVG heatmap (heatmap_writer.cpp): past 600 s a column holds several
// seconds (each row the same offset within them) and a dragged range is whole columns. A column a
// second made a 2-hour run's canvas 43,202 px wide (past Chromium's 32,767), and a crafted profile's
// 10^13 ms allocated 10^12 cells (RangeError: no page).
'use strict';
function aiflameHeatmap(D, $, sel, onRange) {
  const hm = $('heatmap'), hctx = hm.getContext('2d'), T = D.timeline;
  const rowMs = D.summary.interval_ms || 10, rows = Math.ceil(1000 / rowMs);
  const MAX_COLS = 600;
  // The run's seconds, the last entry's included: an entry's time is its cell's start, so one at
  // exactly a whole second (duration_ms itself) needs that second's column too.
  let endMs = D.duration_ms;
  for (let i = 2; i < T.length; i += 4) endMs = Math.max(endMs, T[i] + 1);
  const seconds = Math.max(1, Math.ceil(endMs / 1000));
  const colS = Math.ceil(seconds / MAX_COLS), colMs = colS * 1000, cols = Math.ceil(seconds / colS);
  // A cell's time span [start, end): one row of one second, or past 600 s its whole column.
  const cellStart = (c, r) => c * colMs + (colS === 1 ? r * rowMs : 0);
  const cellEnd = (c, r) => (colS === 1 ? cellStart(c, r) + rowMs : (c + 1) * colMs);
  // Lanes: by process when the timeline holds more than one, else by device.
  const procs = new Set();
  for (let i = 0; i < T.length; i += 4) procs.add(sel.procOf(T[i]));
  const byProc = procs.size > 1;
  const keyOf = (i) => (byProc ? sel.procOf(T[i]) : T[i + 1]);
  const keys = new Set();
  for (let i = 0; i < T.length; i += 4) keys.add(keyOf(i));
  const P = sel.processes;
  const lanes = Array.from(keys).map((k) => {
    if (!byProc) return { key: k, name: `GPU ${k}`, on: () => sel.devOn.get(k) !== false, grid: null };
    const p = P[k];
    return { key: k, name: p ? `${sel.label(p)} (GPU ${p.devices.join(',') || '-'})` : 'other inputs', on: () => !p || sel.procOn[k], grid: null, p };
  });
  const rankOf = (l) => (l.p ? [l.p.rank, l.p.pid] : [Infinity, 0]);
  lanes.sort(byProc ? (a, b) => (rankOf(a)[0] - rankOf(b)[0]) || (rankOf(a)[1] - rankOf(b)[1]) : (a, b) => a.key - b.key);
  const laneOf = new Map(lanes.map((l) => [l.key, l]));
  // Lanes 300 px high for one or two, lower for more (down to one pixel a row).
  const laneHeight = lanes.length > 2 ? Math.max(100, 600 / lanes.length) : 300;
  const CW = Math.max(6, Math.min(48, Math.floor(1100 / cols)));
  // Axes as the SVG heatmap draws them: ms within the second on the left (LEFT px), seconds below each
  // lane (AXIS px); the colour scale under the last lane (SCALE px). At least MIN_W wide, so that a
  // short run's one column still has room for its axes and scale.
  const LEFT = 62, AXIS = 18, SCALE = 46, MIN_W = 700;
  const CH = Math.max(lanes.length > 2 ? 1 : 2, Math.floor(laneHeight / rows)), LANE = 14 + rows * CH + AXIS;
  // White through orange to dark red (heatmap_writer.cpp's cell_colour); square root, so that small
  // counts stay visible beside a hot second.
  const colour = (v) => {
    if (!(v > 0) || !(hmax > 0)) return '#ffffff';
    const x = Math.sqrt(Math.min(1, v / hmax));
    const r = x > 0.75 ? 255 - 120 * (x - 0.75) * 4 : 255;
    return `rgb(${r | 0},${(235 - 200 * x) | 0},${(200 - 200 * x) | 0})`;
  };
  let shown = [], hmax = 0, range = null, drag = null;

  // Re-bins the selected timeline entries into the lanes shown.
  function bin() {
    for (const l of lanes) l.grid = l.on() ? new Float64Array(cols * rows) : null;
    shown = lanes.filter((l) => l.grid);
    hmax = 0;
    for (let i = 0; i < T.length; i += 4) {
      const l = laneOf.get(keyOf(i));
      if (!l.grid || !sel.entryOn(i)) continue;
      const t = T[i + 2], c = Math.floor(t / colMs), r = Math.floor((t % 1000) / rowMs);
      if (c < cols && r < rows) { const k = c * rows + r; l.grid[k] += T[i + 3]; hmax = Math.max(hmax, l.grid[k]); }
    }
  }
  function draw() {
    if (!lanes.length) { $('heatinfo').textContent = 'No timed samples in this input (folded and iaprof inputs have no time series).'; hm.style.display = 'none'; return; }
    const plotW = cols * CW;
    hm.width = Math.max(MIN_W, LEFT + plotW + 20); hm.height = Math.max(1, shown.length) * LANE + SCALE;
    hctx.clearRect(0, 0, hm.width, hm.height);
    hctx.font = '11px Verdana';
    hctx.textBaseline = 'alphabetic';
    if (!shown.length) { hctx.fillStyle = '#333'; hctx.fillText('Nothing selected', 2, 12); }
    // Column labels: about 20 along the axis, as the SVG heatmap's.
    const step = Math.max(1, Math.floor(cols / 20));
    shown.forEach((lane, l) => {
      const y0 = l * LANE + 14, laneH = rows * CH;
      hctx.fillStyle = '#333'; hctx.textAlign = 'left'; hctx.fillText(lane.name, LEFT, y0 - 3);
      for (let c = 0; c < cols; c++) for (let r = 0; r < rows; r++) {
        const v = lane.grid[c * rows + r];
        hctx.fillStyle = v > 0 ? colour(v) : '#f4f4f4';
        hctx.fillRect(LEFT + c * CW, y0 + r * CH, CW - 1, CH);
      }
      if (range) {
        hctx.fillStyle = 'rgba(0,0,255,0.25)';
        for (let c = 0; c < cols; c++) for (let r = 0; r < rows; r++) {
          if (cellEnd(c, r) > range[0] && cellStart(c, r) < range[1]) hctx.fillRect(LEFT + c * CW, y0 + r * CH, CW - 1, CH);
        }
      }
      // The axes: a frame, ms within the second (top to bottom), seconds since the start.
      hctx.strokeStyle = '#999'; hctx.lineWidth = 1;
      hctx.strokeRect(LEFT - 0.5, y0 - 0.5, plotW + 1, laneH + 1);
      hctx.fillStyle = '#555'; hctx.textAlign = 'right';
      for (let ms = 0; ms <= 1000; ms += 250) hctx.fillText(`${ms} ms`, LEFT - 4, y0 + Math.round(laneH * ms / 1000) + 4);
      hctx.textAlign = 'center';
      for (let c = 0; c <= cols; c += step) hctx.fillText(String(c * colS), LEFT + c * CW, y0 + laneH + 13);
    });
    // The colour scale, from 0 to the hottest cell shown, and what the axes are.
    const sy = Math.max(1, shown.length) * LANE + 6;
    hctx.textAlign = 'left'; hctx.fillStyle = '#555';
    hctx.fillText(`x: seconds since the start${colS > 1 ? ` (${colS} s a column)` : ''}; y: offset within the second, ${rowMs} ms rows`, LEFT, sy + 8);
    for (let i = 0; i <= 10; i++) {
      hctx.fillStyle = colour(hmax * i / 10); hctx.fillRect(LEFT + i * 20, sy + 16, 20, 12);
      hctx.strokeStyle = '#ccc'; hctx.strokeRect(LEFT + i * 20 + 0.5, sy + 16.5, 19, 11);
    }
    hctx.fillStyle = '#333';
    hctx.fillText(`0 .. ${Math.round(hmax)} samples per cell`, LEFT + 11 * 20 + 6, sy + 26);
  }
  function cellAt(ev) {
    const b = hm.getBoundingClientRect(), x = ev.clientX - b.left, y = ev.clientY - b.top;
    const c = Math.min(cols - 1, Math.max(0, Math.floor((x - LEFT) / CW)));
    const r = Math.min(rows - 1, Math.max(0, Math.floor((((y - 14) % LANE) + LANE) % LANE / CH)));
    return [c, r];
  }
  hm.addEventListener('mousedown', (ev) => { drag = cellAt(ev); ev.preventDefault(); });
  window.addEventListener('mouseup', (ev) => {
    if (drag === null) return;
    const [c, r] = cellAt(ev);
    const a = Math.min(cellStart(...drag), cellStart(c, r)), b = Math.max(cellEnd(...drag), cellEnd(c, r));
    drag = null;
    range = [a, b];
    $('range').textContent = `Showing ${(a / 1000).toFixed(2)} s to ${(b / 1000).toFixed(2)} s`;
    draw();
    onRange(range);
  });
  $('allrange').addEventListener('click', () => { range = null; $('range').textContent = ''; draw(); onRange(null); });
  bin();

  return {
    update: () => { bin(); draw(); },
    draw,
    lanes: () => shown.map((l) => l.name),
    hottestCell: () => {
      let best = { col: 0, row: 0, v: -1 };
      const g = shown.length ? shown[0].grid : null;
      if (g) for (let k = 0; k < cols * rows; k++) if (g[k] > best.v) best = { col: Math.floor(k / rows), row: k % rows, v: g[k] };
      return best;
    },
    // Where the first lane's cells start on the page, their size, and the axes' and scale's extent.
    box: () => { const r = hm.getBoundingClientRect(); return { x: r.left + LEFT, y: r.top + 14, cw: CW, ch: CH, cols, rows, colS, left: LEFT, width: hm.width, height: hm.height }; },
  };
}
