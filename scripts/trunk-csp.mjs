// Trunk post-build hook: moves the inline module script Trunk writes into
// index.html (the wasm loader) into a file of its own, named after a hash
// of its content, so the page runs under
//   Content-Security-Policy: default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' blob:
// without 'unsafe-inline'. Fails the build if any inline script or style
// is left. Trunk runs it with TRUNK_STAGING_DIR set (Trunk.toml [[hooks]]).
import { readFile, writeFile, unlink } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { join } from 'node:path';

const dir = process.env.TRUNK_STAGING_DIR ?? process.argv[2];
if (!dir) { console.error('trunk-csp: TRUNK_STAGING_DIR is not set'); process.exit(1); }
const file = join(dir, 'index.html');
let html = await readFile(file, 'utf8');
const inline = /<script type="module"\s*>([\s\S]*?)<\/script>/g;
let moved = 0;
// With a first frame in the page (crates/kubehops-firstframe), the wasm
// waits until that frame is painted: it is not fetched (no preload) before
// the page has shown the reader something, so the picture's paint never
// waits on it.
const firstFrame = html.includes('<!-- kubehops-firstframe -->');
if (firstFrame) html = html.replace(/\s*<link rel="preload" href="[^"]*\.wasm"[^>]*>/g, '');
// "Painted" is when the browser reports the page's largest paint (it does
// so once that frame is on screen, which can be a frame after the paint
// itself), or two frames after load where there is no such report.
const afterPaint = [
  "await new Promise((ok) => {",
  "  const next = () => requestAnimationFrame(() => setTimeout(ok, 0));",
  "  const painted = () => {",
  "    if (!(PerformanceObserver.supportedEntryTypes ?? []).includes('largest-contentful-paint')) { requestAnimationFrame(next); return; }",
  "    let done = false; const go = () => { if (!done) { done = true; o.disconnect(); next(); } };",
  "    const o = new PerformanceObserver(go); o.observe({ type: 'largest-contentful-paint', buffered: true }); setTimeout(go, 1000);",
  "  };",
  "  if (document.readyState === 'complete') painted(); else addEventListener('load', painted, { once: true });",
  "});",
  "",
].join('\n');
// A page left while its wasm loads ends that load (WebKit rejects init with
// "TypeError: Load failed"), and WebKit may still keep the page in its
// back-forward cache, its load event being long past: a step back then shows
// it again (pageshow, persisted) with its first frame and no app behind it,
// on "Loading…" for ever (found by tests/e2e/monkey.mjs). So a load that
// fails as the page is left (pagehide then, or within 2 s) is started again
// when the page comes back; one that fails while the page stays is thrown,
// as before, 2 s later.
const again = (call) => [
  "let hidden = false;",
  "addEventListener('pagehide', () => { hidden = true; });",
  "addEventListener('pageshow', (e) => { if (e.persisted) hidden = false; });",
  `const start = () => ${call}.catch((e) => new Promise((ok, no) => {`,
  "  const back = (ev) => { if (ev.persisted) { clearTimeout(t); removeEventListener('pageshow', back); ok(start()); } };",
  "  addEventListener('pageshow', back);",
  "  const t = setTimeout(() => { if (!hidden) { removeEventListener('pageshow', back); no(e); } }, 2000);",
  "}));",
  "const wasm = await start();",
].join('\n');
for (const m of [...html.matchAll(inline)]) {
  let body = m[1].trim() + '\n';
  const call = /^const wasm = await (init\(.*\));$/m;
  if (!call.test(body)) { console.error(`trunk-csp: no "const wasm = await init(…);" line in Trunk's loader:\n${body}`); process.exit(1); }
  body = body.replace(call, (_, c) => again(c));
  if (firstFrame) body = body.replace(/^(let hidden = false;)/m, afterPaint + '$1');
  const name = `boot-${createHash('sha256').update(body).digest('hex').slice(0, 16)}.js`;
  await writeFile(join(dir, name), body);
  const sri = `sha384-${createHash('sha384').update(body).digest('base64')}`;
  html = html.replace(m[0], `<script type="module" src="./${name}" integrity="${sri}"></script>`);
  moved++;
}
// The worker (crates/kubehops-worker, src/worker.rs): Trunk names its
// files after the binary, with no hash, since a worker is started by name.
// Here they get a hash of their content, as every other asset has (so a
// cached worker never answers a newer page, and all can be cached for a
// year), and a loader of their own; the page finds the loader through a
// <meta name="kubehops-worker">. Relative names resolve against the
// loader's own address, so the build still works under a sub-path.
const worker = 'kubehops-worker';
{
  const js = await readFile(join(dir, `${worker}.js`));
  const wasm = await readFile(join(dir, `${worker}_bg.wasm`));
  // A wasm that fails to arrive or compile rejects a promise, which the
  // page would never hear of (only uncaught errors reach it): say it. The
  // loader first says it runs, so the page can tell a script that never
  // ran (WebKit, after a step back in history) from a slow wasm.
  const loader = (b) => `postMessage("loading");importScripts("./${b}.js");wasm_bindgen("./${b}_bg.wasm").catch((e) => postMessage("failed: " + e));\n`;
  const h = createHash('sha256').update(js).update(wasm).update(loader('')).digest('hex').slice(0, 16);
  const base = `${worker}-${h}`;
  await writeFile(join(dir, `${base}.js`), js);
  await writeFile(join(dir, `${base}_bg.wasm`), wasm);
  await writeFile(join(dir, `${base}_loader.js`), loader(base));
  await Promise.all([`${worker}.js`, `${worker}_bg.wasm`].map((f) => unlink(join(dir, f))));
  html = html.replace('</head>', `  <meta name="kubehops-worker" content="./${base}_loader.js">\n  </head>`);
  console.log(`trunk-csp: worker named ${base}`);
}
// Whatever is left inline would be refused by the policy: say so now.
const left = [...html.matchAll(/<script(?![^>]*\bsrc=)[^>]*>[\s\S]*?<\/script>|<style[\s>]|\sstyle="|\son[a-z]+="/gi)].map((m) => m[0].slice(0, 60));
const serving = process.env.TRUNK_PROFILE !== 'release' && /autoreload|__trunk/i.test(left.join(' '));
if (left.length && !serving) { console.error(`trunk-csp: inline code left in index.html: ${left.join(' | ')}`); process.exit(1); }
await writeFile(file, html);
console.log(`trunk-csp: moved ${moved} inline script(s) out of index.html`);
