// aiflame's HTML report, the selection (loaded before heatmap.js and report.js): which recorded
// processes (ranks; pids where no launcher set a rank) and which GPUs are shown. With several of
// either, a checkbox for each; what is unchecked leaves the flame graph, the heatmap and the tables.
// Also the per-process totals table and its imbalance line (computed by the writer). Names reach the
// page only through textContent.
'use strict';
function aiflameSelection(D, unpack, $, changed) {
  const P = D.processes ? D.processes.rows : [];
  const nStacks = D.stack_count.length, T = D.timeline;
  // Stack index -> process index; P.length stands for "no recorded process" (always shown).
  const stackProc = D.stack_process ? unpack(D.stack_process) : null;
  const devSet = new Set(D.summary.devices);
  for (let i = 1; i < T.length; i += 4) devSet.add(T[i]);
  const devices = Array.from(devSet).sort((a, b) => a - b);
  const procOn = P.map(() => true), devOn = new Map(devices.map((d) => [d, true]));
  const label = (p) => (p.rank >= 0 ? `rank ${p.rank}` : `pid ${p.pid}`);
  const procOf = (s) => (stackProc ? stackProc[s] : P.length);
  const shown = (p) => p >= P.length || procOn[p];
  const allDevices = () => devices.every((d) => devOn.get(d));
  const entryOn = (i) => devOn.get(T[i + 1]) !== false && shown(procOf(T[i]));
  const order = P.map((_, i) => i).sort((a, b) => (P[a].rank - P[b].rank) || (P[a].pid - P[b].pid));
  // Processes with nothing to show (a launcher that ran no kernel) are in the table, not the selector.
  const pick = order.filter((i) => P[i].samples > 0 || P[i].kernels > 0);

  // Samples per stack: the recorded counts of the processes shown, or, for a time range or a subset of
  // the GPUs, the timeline entries that fall inside.
  function weights(range) {
    if (!range && allDevices()) {
      if (procOn.every(Boolean)) return D.stack_count;
      return D.stack_count.map((c, s) => (shown(procOf(s)) ? c : 0));
    }
    const w = new Float64Array(nStacks);
    for (let i = 0; i < T.length; i += 4) {
      if (range && (T[i + 2] < range[0] || T[i + 2] >= range[1])) continue;
      if (entryOn(i)) w[T[i]] += T[i + 3];
    }
    return Array.from(w, Math.round);
  }
  // [GPU ms, launches] of a kernel name over the processes and GPUs shown.
  function kernel(name) {
    const k = D.kernel_table[name] || [], out = [0, 0];
    for (let i = 0; i < k.length; i += 4)
      if (shown(k[i]) && devOn.get(k[i + 1]) !== false) { out[0] += k[i + 2]; out[1] += k[i + 3]; }
    return out;
  }
  function describe() {
    const procs = pick.filter((i) => procOn[i]).map((i) => label(P[i]));
    const gpus = devices.filter((d) => devOn.get(d)).map((d) => 'GPU ' + d);
    const part = (on, n, what) => (on.length === n ? `all ${n} ${what}` : on.length ? on.join(', ') : `no ${what}`);
    const what = P.some((p) => p.rank >= 0) ? 'ranks' : 'processes';
    return [pick.length > 1 ? part(procs, pick.length, what) : null, devices.length > 1 ? part(gpus, devices.length, 'GPUs') : null]
      .filter(Boolean).join('; ');
  }

  // ---- the checkboxes ----
  const box = $('selector');
  const add = (parent, tag, text) => { const e = document.createElement(tag); if (text !== undefined) e.textContent = text; parent.appendChild(e); return e; };
  function checkbox(id, text, title, set) {
    const l = add(box, 'label'), c = add(l, 'input');
    c.type = 'checkbox'; c.id = id; c.checked = true;
    add(l, 'span', text).title = title;
    c.addEventListener('change', () => { set(c.checked); update(); changed(); });
  }
  if (pick.length > 1) {
    add(box, 'b', P.some((p) => p.rank >= 0) ? 'Ranks:' : 'Processes:');
    for (const i of pick) {
      const p = P[i];
      checkbox('sel-p' + i, `${label(p)}${p.rank >= 0 ? ` (pid ${p.pid})` : ''}: ${p.samples} samples`,
        `${p.name} on ${p.host || '?'}, GPU ${p.devices.join(',') || '-'}`, (on) => { procOn[i] = on; });
    }
  }
  if (devices.length > 1) {
    add(box, 'b', 'GPUs:');
    for (const d of devices) checkbox('sel-d' + d, 'GPU ' + d, '', (on) => { devOn.set(d, on); });
  }
  if (!box.childNodes.length) box.style.display = 'none';

  // ---- the per-process table: totals of the whole run, rows not shown greyed out ----
  const rows = [];
  if (P.length > 1) {
    $('procs').style.display = '';
    const t = $('t-procs'), head = add(t, 'tr');
    for (const h of ['rank', 'pid', 'process', 'host', 'GPUs', 'GPU samples', 'kernels', 'launches', 'GPU busy'])
      add(head, 'th', h);
    const [least, most] = D.processes.imbalance || [-1, -1];
    for (const i of order) {
      const p = P[i], tr = add(t, 'tr');
      for (const v of [p.rank >= 0 ? p.rank : '-', p.pid, p.name, p.host || '-', p.devices.join(', ') || '-', p.samples,
        p.kernels, p.launches, `${(100 * p.busy).toFixed(1)}% of ${p.seconds.toFixed(2)} s`]) add(tr, 'td', String(v));
      if (i === least || i === most) { tr.lastChild.className = 'busy'; tr.lastChild.title = i === least ? 'least busy GPU' : 'busiest GPU'; }
      rows.push([i, tr]);
    }
    $('imbalance').textContent = D.processes.line;
  }
  function update() {
    for (const [i, tr] of rows) tr.className = procOn[i] ? '' : 'off';
  }

  return {
    weights, kernel, describe, entryOn, procOf,
    active: box.childNodes.length > 0,
    processes: P, label, procOn, devOn,
    // For tests and automation: the checkboxes' labels.
    labels: () => Array.from(box.querySelectorAll('label'), (l) => l.textContent),
  };
}
