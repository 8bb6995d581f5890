// Decodes aiflame's pprof output with an independent decoder (the pprof-format npm package) and
// checks it against aiflame's folded output of the same input: equal sample totals, equal totals per
// stall reason, every sample's leaf frame its kernel (not its stall reason, which is a label: so that
// `pprof -top` ranks kernels), only the labels docs/formats.md names, and the named functions present.
// Usage: node check_pprof.js PROFILE.pb.gz SAME.folded NAME...
'use strict';
const fs = require('fs');
const zlib = require('zlib');
const { Profile } = require('pprof-format');

const [file, folded, ...names] = process.argv.slice(2);
const fail = (msg) => { console.error(`check_pprof: FAIL ${file}: ${msg}`); process.exit(1); };

const p = Profile.decode(zlib.gunzipSync(fs.readFileSync(file)));
const str = (i) => p.stringTable.strings[Number(i)];
const types = p.sampleType.map((t) => `${str(t.type)}/${str(t.unit)}`);
if (types[0] !== 'gpu_samples/count') fail(`first sample type is ${types[0]}`);

// Expected totals from the folded file: the count after the last blank; the stall reason is the
// last frame that is not a PC offset (aiflame writes ...;0x1a0_[g];stall_[g], iaprof ...;stall_[g];0x1a0_[g]).
const want = new Map();
const kernels = new Set();  // the frame after "-" (aiflame's kernel) or the one after it (iaprof's FILE;SYMBOL)
let wantTotal = 0n;
for (const line of fs.readFileSync(folded, 'utf8').split('\n')) {
  if (!line) continue;
  const blank = line.lastIndexOf(' ');
  const n = BigInt(line.slice(blank + 1));
  const frames = line.slice(0, blank).split(';');
  const gpu = frames.map((f) => f.replace(/_\[g\]$/, '')).filter((f) => !/^0x[0-9a-f]+$/.test(f));
  const stall = gpu[gpu.length - 1];
  const sep = frames.indexOf('-');
  if (sep >= 0) for (const k of frames.slice(sep + 1, sep + 3)) kernels.add(k.replace(/_\[G\]$/, ''));
  want.set(stall, (want.get(stall) || 0n) + n);
  wantTotal += n;
}

const locs = new Map(p.location.map((l) => [String(l.id), l]));
const fns = new Map(p.function.map((f) => [String(f.id), f]));
const got = new Map();
let total = 0n;
for (const s of p.sample) {
  const n = BigInt(s.value[0]);
  total += n;
  const labels = new Map(s.label.map((l) => [str(l.key), str(l.str)]));
  const stall = labels.get('stall_reason');
  got.set(stall, (got.get(stall) || 0n) + n);
  for (const id of s.locationId) if (!locs.has(String(id))) fail(`sample refers to missing location ${id}`);
  const leaf = locs.get(String(s.locationId[0]));
  const leafName = str(fns.get(String(leaf.line[0].functionId)).name);
  if (leafName === stall || !kernels.has(leafName)) fail(`leaf frame ${leafName} is not a kernel (stall reason label ${stall})`);
  for (const key of labels.keys())
    if (!['process', 'pid', 'rank', 'proc', 'stall_reason', 'device', 'gpu', 'instruction', 'inlined'].includes(key)) fail(`unexpected label ${key}`);
}
if (total !== wantTotal) fail(`total samples ${total}, folded output has ${wantTotal}`);
for (const [stall, n] of want) if (got.get(stall) !== n) fail(`stall ${stall}: ${got.get(stall)} samples, folded has ${n}`);
if (got.size !== want.size) fail(`${got.size} stall reasons, folded has ${want.size}`);
const fnNames = new Set(p.function.map((f) => str(f.name)));
for (const n of names) if (!fnNames.has(n)) fail(`no function named ${n}`);
console.log(`check_pprof: ok ${file}: ${p.sample.length} samples, ${total} GPU samples, ` +
            `${p.location.length} locations, types ${types.join(', ')}`);
