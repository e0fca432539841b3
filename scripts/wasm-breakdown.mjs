#!/usr/bin/env node
// Where the bytes of a wasm file go: the size of every function body, named
// from the file's `name` section, summed by crate, plus the data section.
//
//   node scripts/wasm-breakdown.mjs FILE.wasm [--top N]
//
// The release build strips names, so give it a copy that kept them (see
// README, "Size budget": wasm-bindgen output run through `wasm-opt -Oz -g`).
// The gzip column compresses each crate's function bodies together, so it
// is an estimate of that crate's share of the compressed file, not exact.
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const args = process.argv.slice(2);
const file = args.find((a) => !a.startsWith('--'));
const topIdx = args.indexOf('--top');
const TOP = topIdx >= 0 ? Number(args[topIdx + 1]) : 40;
if (!file) { console.error('usage: wasm-breakdown.mjs FILE.wasm [--top N]'); process.exit(2); }
const buf = readFileSync(file);

let pos = 8;
function uleb() {
  let result = 0, shift = 0, b;
  do { b = buf[pos++]; result += (b & 0x7f) * 2 ** shift; shift += 7; } while (b & 0x80);
  return result;
}
function name() { const n = uleb(); const s = buf.toString('utf8', pos, pos + n); pos += n; return s; }
function limits() { const flag = buf[pos++]; uleb(); if (flag & 1) uleb(); }

let importedFuncs = 0;
const bodies = []; // { start, end }
const names = new Map();
const sections = [];
while (pos < buf.length) {
  const id = buf[pos++];
  const size = uleb();
  const start = pos, end = pos + size;
  let label = `section ${id}`;
  if (id === 0) {
    const nm = name();
    label = `custom "${nm}"`;
    if (nm === 'name') {
      while (pos < end) {
        const sub = buf[pos++];
        const subSize = uleb();
        const subEnd = pos + subSize;
        if (sub === 1) {
          const n = uleb();
          for (let i = 0; i < n; i++) { const idx = uleb(); names.set(idx, name()); }
        }
        pos = subEnd;
      }
    }
  } else if (id === 2) {
    label = 'import';
    const n = uleb();
    for (let i = 0; i < n; i++) {
      name(); name();
      const kind = buf[pos++];
      if (kind === 0) { uleb(); importedFuncs++; }
      else if (kind === 1) { pos++; limits(); }
      else if (kind === 2) limits();
      else if (kind === 3) pos += 2;
      else if (kind === 4) { pos++; uleb(); }
    }
  } else if (id === 10) {
    label = 'code';
    const n = uleb();
    for (let i = 0; i < n; i++) { const s = uleb(); bodies.push({ start: pos, end: pos + s }); pos += s; }
  } else if (id === 11) label = 'data';
  sections.push({ label, size });
  pos = end;
}

// Rust's legacy mangling (`_ZN13kubehops_core3sim...17h<hash>E`) back to a
// path; v0 names (`_R...`) are left as they are, only their crate is read.
function demangle(n) {
  const m = n.match(/^_?_ZN(.*)E$/);
  if (!m) return n;
  const parts = [];
  let s = m[1];
  while (s.length) {
    const d = s.match(/^(\d+)/);
    if (!d) break;
    const len = Number(d[1]);
    parts.push(s.slice(d[1].length, d[1].length + len));
    s = s.slice(d[1].length + len);
  }
  if (parts.length && /^h[0-9a-f]{16}$/.test(parts[parts.length - 1])) parts.pop();
  const esc = { LT: '<', GT: '>', RF: '&', BP: '*', LP: '(', RP: ')', C: ',', SP: '@' };
  return parts.map((p) => p.replace(/^_\$/, '$').replace(/\$([A-Za-z0-9]+)\$/g, (all, e) => esc[e] ?? (e.startsWith('u') ? String.fromCharCode(parseInt(e.slice(1), 16)) : all))
    .replace(/\.\./g, '::')).join('::');
}

// The crate a (demangled) Rust function belongs to: the first path segment,
// looking inside `<T as Trait>` to the type's crate.
function crateOf(n) {
  const v0 = n.match(/^_R.*?C(?:s[0-9A-Za-z]*_)?(\d+)([A-Za-z_][A-Za-z0-9_]*)/);
  if (v0) return v0[2].slice(0, Number(v0[1]));
  let s = n.replace(/^_*/, '');
  s = s.replace(/^<impl /, '');
  // `<T as tachys::view::Render>::build`: a generic type, so the trait's crate.
  const generic = s.match(/^<[A-Za-z_][A-Za-z0-9_]* as ([A-Za-z_][A-Za-z0-9_]*)::/);
  if (generic) return generic[1];
  while (s.startsWith('<') || s.startsWith('&') || s.startsWith('(') || s.startsWith('[') || s.startsWith('dyn ')) {
    s = s.replace(/^(<|&mut |&|\(|\[|dyn )/, '');
  }
  const m = s.match(/^([A-Za-z_][A-Za-z0-9_]*)::/);
  if (m) return m[1];
  if (/^(memcpy|memset|memmove|memcmp|rust|rdl|rg_|dlmalloc)/.test(s)) return 'core/alloc (runtime)';
  if (/^(wasm_bindgen|wbg|wbindgen|externref)/.test(s)) return 'wasm_bindgen';
  return '(unnamed or other)';
}

const funcs = bodies.map((b, i) => {
  // wasm-bindgen demangles names itself, with `core[5c93…]` and a `::h<hash>` tail.
  const n = demangle(names.get(importedFuncs + i) ?? `func[${importedFuncs + i}]`).replace(/\[[0-9a-f]{16}\]/g, '').replace(/::h[0-9a-f]{16}$/, '');
  return { name: n, size: b.end - b.start, bytes: buf.subarray(b.start, b.end), crate: crateOf(n) };
});
const byCrate = new Map();
for (const f of funcs) {
  const c = byCrate.get(f.crate) ?? { size: 0, parts: [], count: 0 };
  c.size += f.size; c.parts.push(f.bytes); c.count++;
  byCrate.set(f.crate, c);
}

const total = buf.length;
console.log(`${file}: ${total} bytes raw, ${gzipSync(buf, { level: 9 }).length} gzip -9; ${funcs.length} functions (${names.size ? 'named' : 'NO name section'})`);
console.log('\nsections:');
for (const s of sections) console.log(`  ${s.label.padEnd(24)} ${String(s.size).padStart(9)}`);
console.log('\ncode by crate:            bytes  ~gzip  functions');
for (const [c, v] of [...byCrate].sort((a, b) => b[1].size - a[1].size)) {
  const gz = gzipSync(Buffer.concat(v.parts), { level: 9 }).length;
  console.log(`  ${c.slice(0, 22).padEnd(22)} ${String(v.size).padStart(8)} ${String(gz).padStart(6)} ${String(v.count).padStart(6)}`);
}
console.log(`\nlargest ${TOP} functions:`);
for (const f of [...funcs].sort((a, b) => b.size - a.size).slice(0, TOP)) {
  console.log(`  ${String(f.size).padStart(7)}  ${f.name.length > 150 ? f.name.slice(0, 147) + '...' : f.name}`);
}
if (process.env.KH_SHOW_OTHER) {
  console.log('\nlargest unattributed:');
  for (const f of funcs.filter((f) => f.crate === '(unnamed or other)').sort((a, b) => b.size - a.size).slice(0, 30)) console.log(`  ${String(f.size).padStart(7)}  ${f.name.slice(0, 160)}`);
}
