// Lighthouse's speed figures for the release build (dist/), served as a
// good static host serves it, in Debian's Chromium. Figures, not timed
// tests: it fails only when Lighthouse does not run, gives no figures, or
// the server does not send what the README's recipe says.
//
//   node tests/e2e/lighthouse.mjs [DIST]
//
// The server (README, "Serving it compressed"): the .br or .gz copy that
// scripts/precompress.mjs wrote beside a file, with `content-encoding`, to
// a client that accepts it (brotli first), else the file itself; the
// content type with its charset; `cache-control: public, max-age=31536000,
// immutable` for hashed names (`kubehops-web-6499bfbf3c83d812_bg.wasm`),
// `no-cache` for index.html (and anything else), with an ETag to revalidate.
//
// Each link runs twice, in a new Chromium each time: mobile (Lighthouse's
// default: a Moto G Power's screen, simulated slow 4G, 4× CPU slowdown) and
// desktop (its desktop preset: simulated 40 ms / 10 Mbps, no CPU slowdown).
// Printed per link and profile: the performance score, LCP, TBT, CLS, FCP,
// and the bytes transferred (total, and per resource type). The JSON and
// HTML reports go to .e2e-out/lighthouse/.
import lighthouse from 'lighthouse';
import desktopConfig from 'lighthouse/core/config/desktop-config.js';
import * as chromeLauncher from 'chrome-launcher';
import { createServer } from 'node:http';
import { createHash } from 'node:crypto';
import { readFile, mkdir, writeFile } from 'node:fs/promises';
import { join, extname, resolve, dirname, basename } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '../..');
const root = resolve(process.argv[2] ?? join(repo, 'dist'));
const out = join(repo, '.e2e-out', 'lighthouse');
const LINKS = ['#/nodeport-loadbalancer/1', '#/service-types/1', '#/local-lab/1', '#/service-types/3?tab=nodeport&embed=1'];

// ---------------------------------------------------------------- the static host
const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm', '.svg': 'image/svg+xml', '.json': 'application/json', '.bin': 'application/octet-stream',
};
const HASHED = /-[0-9a-f]{1,16}(_bg|_loader)?\.[a-z0-9]+$/;
const files = new Map(); // path -> { body, etag }
async function load(file) {
  if (!files.has(file)) {
    const body = await readFile(file).catch(() => null);
    files.set(file, body && { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` });
  }
  return files.get(file);
}
// Which encodings the client accepts (q=0 refuses one).
function accepts(header = '', coding) {
  return header.split(',').some((part) => {
    const [name, ...params] = part.trim().split(';').map((x) => x.trim());
    const q = params.find((p) => p.startsWith('q='));
    return name === coding && !(q && Number(q.slice(2)) === 0);
  });
}
const server = createServer(async (req, res) => {
  const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  const file = join(root, path === '/' ? 'index.html' : path);
  if (!file.startsWith(root + '/') || /\.(br|gz)$/.test(file)) { res.writeHead(404).end('not found'); return; }
  const original = await load(file);
  if (!original) { res.writeHead(404, { 'content-type': 'text/plain' }).end('not found'); return; }
  const headers = {
    'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
    'cache-control': HASHED.test(basename(file)) ? 'public, max-age=31536000, immutable' : 'no-cache',
    vary: 'accept-encoding',
  };
  let sent = original;
  for (const [coding, ext] of [['br', '.br'], ['gzip', '.gz']]) {
    if (!accepts(req.headers['accept-encoding'], coding)) continue;
    const copy = await load(file + ext);
    if (copy) { sent = copy; headers['content-encoding'] = coding; break; }
  }
  headers.etag = sent === original ? original.etag : `${original.etag.slice(0, -1)}-${headers['content-encoding']}"`;
  if (req.headers['if-none-match'] === headers.etag) { res.writeHead(304, headers).end(); return; }
  headers['content-length'] = sent.body.length;
  res.writeHead(200, headers).end(req.method === 'HEAD' ? undefined : sent.body);
});
await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
const origin = `http://127.0.0.1:${server.address().port}`;

let passed = 0, failed = 0;
const check = (cond, msg) => { if (!cond) throw new Error(msg); };
async function test(name, fn) {
  const t0 = Date.now();
  try { await fn(); passed++; console.log(`ok   ${name} (${((Date.now() - t0) / 1000).toFixed(1)} s)`); }
  catch (e) { failed++; console.log(`FAIL ${name}\n     ${String(e.message ?? e).split('\n').join('\n     ')}`); }
}

// The recipe itself, as a client sees it.
await test('the server sends the precompressed copies, content types and cache headers of the recipe', async () => {
  const html = await fetch(`${origin}/`, { headers: { 'accept-encoding': 'br, gzip' } });
  check(html.headers.get('content-encoding') === 'br' && html.headers.get('cache-control') === 'no-cache', `index.html: ${[...html.headers]}`);
  check(html.headers.get('content-type') === 'text/html; charset=utf-8', `index.html type ${html.headers.get('content-type')}`);
  const text = await html.text();
  const assets = [...text.matchAll(/(?:src|href)="\.\/([^"]+)"/g)].map((m) => m[1]);
  // The wasm is not named in index.html (no preload: it is fetched once the
  // first frame has painted); one of the scripts it loads names it.
  let named = text.match(/kubehops-web-[0-9a-f]+_bg\.wasm/)?.[0];
  for (const js of assets.filter((a) => a.endsWith('.js'))) {
    named ??= (await (await fetch(`${origin}/${js}`)).text()).match(/kubehops-web-[0-9a-f]+_bg\.wasm/)?.[0];
  }
  check(named, `neither index.html nor the scripts it names (${assets}) name the wasm`);
  assets.push(named);
  for (const a of assets) {
    const r = await fetch(`${origin}/${a}`, { headers: { 'accept-encoding': 'gzip, deflate, br' } });
    const want = a.endsWith('.svg') ? null : 'br';
    check(r.status === 200 && r.headers.get('content-encoding') === want, `${a}: ${r.status} ${r.headers.get('content-encoding')}`);
    check(r.headers.get('cache-control') === 'public, max-age=31536000, immutable', `${a}: cache-control ${r.headers.get('cache-control')}`);
    check(r.headers.get('content-type') === TYPES[extname(a)], `${a}: content-type ${r.headers.get('content-type')}`);
    await r.arrayBuffer();
  }
  const wasm = assets.find((a) => a.endsWith('.wasm'));
  const gz = await fetch(`${origin}/${wasm}`, { method: 'HEAD', headers: { 'accept-encoding': 'gzip' } });
  check(gz.headers.get('content-encoding') === 'gzip', `gzip only: ${gz.headers.get('content-encoding')}`);
  const plain = await fetch(`${origin}/${wasm}`, { method: 'HEAD', headers: { 'accept-encoding': 'identity' } });
  check(!plain.headers.get('content-encoding'), `identity: ${plain.headers.get('content-encoding')}`);
  const again = await fetch(`${origin}/`, { headers: { 'accept-encoding': 'br', 'if-none-match': html.headers.get('etag') } });
  check(again.status === 304, `revalidating index.html: ${again.status}`);
});

// ---------------------------------------------------------------- Lighthouse
const chromePath = process.env.CHROME_PATH ?? process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';
const chromeFlags = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic'];
await mkdir(out, { recursive: true });

const kb = (b) => `${(b / 1024).toFixed(1)} KiB`;
const ms = (v) => `${Math.round(v)} ms`;
const figures = [];

for (const link of LINKS) {
  for (const profile of ['mobile', 'desktop']) {
    await test(`Lighthouse ${profile}: ${link}`, async () => {
      const chrome = await chromeLauncher.launch({ chromePath, chromeFlags, logLevel: 'silent' });
      let result;
      try {
        result = await lighthouse(`${origin}/${link}`, { port: chrome.port, output: ['json', 'html'], logLevel: 'error', onlyCategories: ['performance'] },
          profile === 'desktop' ? desktopConfig : undefined);
      } finally {
        await chrome.kill();
      }
      const lhr = result?.lhr;
      check(lhr, 'Lighthouse gave no result');
      check(!lhr.runtimeError, `Lighthouse: ${lhr.runtimeError?.code} ${lhr.runtimeError?.message}`);
      check(lhr.configSettings.formFactor === profile, `ran as ${lhr.configSettings.formFactor}`);
      const stem = `${profile}-${link.replace(/^#\//, '').replace(/[^a-z0-9]+/gi, '-').replace(/-+$/, '')}`;
      await writeFile(join(out, `${stem}.json`), result.report[0]);
      await writeFile(join(out, `${stem}.html`), result.report[1]);
      const a = lhr.audits;
      const num = (id) => { const v = a[id]?.numericValue; check(Number.isFinite(v), `no figure for ${id}: ${a[id]?.errorMessage ?? a[id]?.explanation ?? 'missing'}`); return v; };
      const score = lhr.categories.performance.score;
      check(score !== null, 'no performance score');
      const requests = a['network-requests']?.details?.items ?? [];
      check(requests.length > 0, 'no network requests recorded');
      // By Lighthouse's resource type, but the wasm (a preload "fetch",
      // which it calls Other) under its own name.
      const byType = new Map();
      let total = 0, decoded = 0;
      for (const r of requests) {
        const type = r.mimeType === 'application/wasm' ? 'Wasm' : r.resourceType ?? 'Other';
        total += r.transferSize ?? 0;
        decoded += r.resourceSize ?? 0;
        byType.set(type, (byType.get(type) ?? 0) + (r.transferSize ?? 0));
      }
      // The wasm came compressed, as the recipe sends it.
      const wasm = requests.find((r) => /\.wasm$/.test(r.url));
      check(wasm && wasm.transferSize < wasm.resourceSize * 0.6, `the wasm was not sent compressed: ${JSON.stringify(wasm)}`);
      const types = [...byType].sort((x, y) => y[1] - x[1]).map(([t, b]) => `${t} ${kb(b)}`).join(', ');
      figures.push(`lighthouse: ${profile.padEnd(7)} ${link}: score ${Math.round(score * 100)}, LCP ${ms(num('largest-contentful-paint'))}, TBT ${ms(num('total-blocking-time'))}, CLS ${num('cumulative-layout-shift').toFixed(3)}, FCP ${ms(num('first-contentful-paint'))}; transferred ${kb(total)} in ${requests.length} requests, ${kb(decoded)} decoded (${types})`);
      console.log(`     ${figures.at(-1)}`);
    });
  }
}

server.close();
console.log(`lighthouse: Lighthouse ${lighthouse.version ?? '12.2.3'}, ${chromePath}; served from loopback with the README's headers (br); reports in ${out}`);
for (const f of figures) console.log(f);
console.log(`lighthouse e2e: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
