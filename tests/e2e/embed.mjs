// End-to-end tests of embedding and presenting, against the release build
// in Debian's headless Chromium (playwright-core, no browser download).
//
// dist/ is served with the Content-Security-Policy the README documents;
// a host page on another loopback port (its own origin) embeds it, sizes
// the iframe from the height message and drives it with postMessage; a
// third origin, not listed, is ignored. Screenshots go to .e2e-out/.
import { chromium } from 'playwright-core';
import { createServer } from 'node:http';
import { readFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join, extname, resolve } from 'node:path';
import { tmpdir } from 'node:os';

const root = resolve(process.argv[2] ?? 'dist');
const out = resolve('.e2e-out');
const CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' blob:";
const types = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.css': 'text/css', '.svg': 'image/svg+xml' };

// The app, under /kh/ as a documentation site would host it, with the policy.
const SUB = '/kh/';
const app = createServer(async (req, res) => {
  let path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  if (!path.startsWith(SUB)) { res.writeHead(404).end('not found'); return; }
  path = path.slice(SUB.length - 1);
  const file = join(root, path === '/' ? 'index.html' : path);
  if (!file.startsWith(root)) { res.writeHead(403).end(); return; }
  try {
    const body = await readFile(file);
    res.writeHead(200, { 'content-type': types[extname(file)] ?? 'application/octet-stream', 'content-security-policy': CSP }).end(body);
  } catch {
    res.writeHead(404).end('not found');
  }
});

// The host page: an iframe sized by the height message, driven by window.send.
const HOST_JS = `
const q = new URLSearchParams(location.search);
const f = document.createElement('iframe');
f.src = q.get('src');
f.title = 'KubeHops';
f.width = q.get('w') || '720';
f.height = '200';
f.allow = 'fullscreen';
f.style.border = '0';
f.style.display = 'block';
document.body.append(f);
window.messages = [];
const appOrigin = new URL(f.src).origin;
addEventListener('message', (e) => {
  if (e.source !== f.contentWindow || e.origin !== appOrigin) return;
  window.messages.push(e.data);
  if (e.data && e.data.type === 'kubehops:height' && e.data.version === 1) f.height = String(e.data.height);
});
window.send = (m) => f.contentWindow.postMessage(m, appOrigin);
`;
const host = () => createServer((req, res) => {
  const path = new URL(req.url, 'http://x').pathname;
  if (path === '/host.js') { res.writeHead(200, { 'content-type': 'text/javascript' }).end(HOST_JS); return; }
  if (path === '/') {
    res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><html><head><title>host</title><link rel="icon" href="data:,"></head><body style="margin:0"><script src="/host.js"></script></body></html>');
    return;
  }
  res.writeHead(404).end();
});
const listen = (s) => new Promise((ok) => s.listen(0, '127.0.0.1', () => ok(`http://127.0.0.1:${s.address().port}`)));
const hostA = host(), hostB = host();
const [appOrigin, hostOrigin, strangerOrigin] = [await listen(app), await listen(hostA), await listen(hostB)];
const base = `${appOrigin}${SUB}`;

const profile = await mkdtemp(join(tmpdir(), 'kubehops-embed-'));
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM_BIN ?? '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
  viewport: { width: 1280, height: 800 },
});
await browser.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: appOrigin });
await mkdir(out, { recursive: true });

let passed = 0, failed = 0;
const outside = [];
const allowed = [appOrigin, hostOrigin, strangerOrigin];

// Every page (and frame) records CSP violations; console errors too.
await browser.addInitScript(() => {
  window.__csp = [];
  document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
});
async function watch(page) {
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('request', (r) => { if (!allowed.some((o) => r.url().startsWith(o))) outside.push(r.url()); });
  return errors;
}

async function violations(page) {
  let all = [];
  for (const f of page.frames()) {
    if (!f.url().startsWith(appOrigin)) continue;
    all = all.concat(await f.evaluate(() => window.__csp ?? ['(no recorder)']).catch(() => []));
  }
  return all;
}

async function open(hash, opts = {}) {
  const page = await browser.newPage();
  if (opts.viewport) await page.setViewportSize(opts.viewport);
  if (opts.reducedMotion) await page.emulateMedia({ reducedMotion: 'reduce' });
  const errors = await watch(page);
  await page.goto(`${base}${hash}`);
  await page.waitForSelector('.kh[data-step] .kh-canvas svg .kh-zone', { timeout: 15000 });
  return { page, errors };
}

async function clean(page, errors) {
  const v = await violations(page);
  check(v.length === 0, `CSP violations: ${v.join(' | ')}`);
  check(errors.length === 0, `console errors: ${errors.join(' | ')}`);
}

function check(cond, msg) { if (!cond) throw new Error(msg); }
// The address as the page leaves it: the app writes its link after the
// frame that shows a change is painted (src/app.rs, sync_link), so this
// reads it after a frame and the task that follows it.
async function settledUrl(page) {
  return page.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(() => r(location.href), 0))));
}

async function test(name, fn) {
  try { await fn(); passed++; console.log(`ok   ${name}`); }
  catch (e) { failed++; console.log(`FAIL ${name}\n     ${String(e.message ?? e).split('\n').join('\n     ')}`); }
}

const SCENARIOS = ['nodeport-loadbalancer', 'service-types', 'local-lab'];
const step = (page) => page.getAttribute('.kh', 'data-step').then(Number);
const playing = (page) => page.getAttribute('.kh', 'data-playing');

await test('dist/index.html has no inline script or style, and the full page runs under the CSP without violations', async () => {
  const html = await readFile(join(root, 'index.html'), 'utf8');
  check(!/<script(?![^>]*\bsrc=)[^>]*>\s*\S/.test(html), `inline script left in index.html:\n${html}`);
  check(!/<style|\sstyle=/.test(html), 'inline style in index.html');
  const { page, errors } = await open('#/nodeport-loadbalancer/2/end');
  check(await page.locator('.kh-node-card').count() === 3, 'the page did not render under the policy');
  // The header really is set: an inline script is refused and reported.
  await page.evaluate(() => { const s = document.createElement('script'); s.textContent = 'window.__ran = 1'; document.head.append(s); });
  await page.waitForTimeout(100);
  check(await page.evaluate(() => window.__ran) === undefined, 'an inline script ran: the policy is not applied');
  check((await violations(page)).length === 1, 'the probe was not reported as a violation');
  await page.evaluate(() => { window.__csp = []; });
  errors.length = 0; // the probe's own refusal
  await page.getByRole('button', { name: 'Play' }).click();
  await page.waitForTimeout(300);
  await clean(page, errors);
  await page.close();
});

// The worker (the model's builders, the object reader and the YAML
// parser: src/worker.rs) is off the critical path: started once the page
// is shown, it builds every later state and reads a paste.
await test('under the CSP, on a sub-path, the worker starts once the page is shown, from its hashed files, with no violation, and reads a paste', async () => {
  const page = await browser.newPage();
  const errors = await watch(page);
  await page.goto(`${base}#/your-cluster/1`);
  await page.waitForSelector('#kh-paste-text', { timeout: 15000 });
  for (let i = 0; i < 100 && page.workers().length === 0; i++) await page.waitForTimeout(100);
  check(page.workers().length === 1, `no worker started once the page was shown: ${page.workers().map((w) => w.url()).join(' ')}`);
  const text = await readFile(resolve('crates/kubehops-cli/tests/fixtures/cluster/cluster.yaml'), 'utf8');
  await page.fill('#kh-paste-text', text);
  await page.waitForSelector('[data-testid=paste-summary]', { timeout: 20000 });
  const summary = await page.textContent('[data-testid=paste-summary]');
  check(summary.includes('Read 3 nodes'), `summary: ${summary}`);
  const urls = page.workers().map((w) => new URL(w.url()).pathname);
  check(urls.length === 1 && /^\/kh\/kubehops-worker-[0-9a-f]{1,16}_loader\.js$/.test(urls[0]), `workers: ${urls.join(' ')}`);
  await page.waitForSelector('.kh-canvas .kh-node-card');
  await clean(page, errors);
  await page.close();
});

await test('embed=1 shows only the canvas, the controls and the narration, on every scenario', async () => {
  for (const id of SCENARIOS) {
    const { page, errors } = await open(`#/${id}/1?embed=1`, { viewport: { width: 720, height: 560 } });
    check(await page.locator('.kh-embed').count() === 1, `${id}: not the embed page`);
    for (const gone of ['.kh-head', '.kh-nav', '.kh-titlebar', '.kh-side', '.kh-tables', '.kh-params']) {
      check(await page.locator(gone).count() === 0, `${id}: ${gone} is shown in the embed`);
    }
    check(await page.locator('.kh-narration').count() === 1, `${id}: no narration`);
    check(await page.getByRole('button', { name: 'Play', exact: true }).count() === 1, `${id}: no Play button`);
    check(await playing(page) === 'false', `${id}: plays without autoplay=1`);
    await clean(page, errors);
    await page.close();
  }
});

await test('controls=full|minimal|none', async () => {
  // The playback controls (the narration's "Read the step" and its words are not).
  const names = async (page) => page.$$eval('.kh-embed button:not(.kh-narr-toggle):not(.kh-word)', (bs) => bs.map((b) => b.getAttribute('aria-label') ?? b.textContent.trim()));
  let { page, errors } = await open('#/nodeport-loadbalancer/2?embed=1&controls=full');
  let n = await names(page);
  for (const want of ['Restart', 'Previous step', 'Play', 'Next step']) check(n.includes(want), `full lacks ${want}: ${n}`);
  check(n.some((x) => /^Step 3 of 5/.test(x)), `full lacks the step buttons: ${n}`);
  await page.close();
  ({ page, errors } = await open('#/nodeport-loadbalancer/2?embed=1&controls=minimal'));
  n = await names(page);
  check(JSON.stringify(n) === JSON.stringify(['Previous step', 'Play', 'Next step']), `minimal: ${n}`);
  check((await page.textContent('.kh-mini-count')) === 'Step 2 of 5', 'minimal lacks the step count');
  await page.getByRole('button', { name: 'Next step' }).click();
  check(await step(page) === 3, 'minimal Next did not step');
  await clean(page, errors);
  await page.close();
  ({ page, errors } = await open('#/nodeport-loadbalancer/2?embed=1&controls=none'));
  check((await names(page)).length === 0, `none still shows buttons: ${await names(page)}`);
  await page.keyboard.press('PageDown');
  check(await step(page) === 3, 'keys do not step without controls');
  await clean(page, errors);
  await page.close();
});

await test('theme=light|dark|auto sets data-theme on the root element (auto: none)', async () => {
  for (const [t, want] of [['light', 'light'], ['dark', 'dark'], ['auto', null], [null, null]]) {
    const { page, errors } = await open(`#/service-types/1?embed=1${t ? `&theme=${t}` : ''}`);
    const got = await page.evaluate(() => document.documentElement.getAttribute('data-theme'));
    check(got === want, `theme=${t}: data-theme is ${got}`);
    if (t) check((await settledUrl(page)).includes(`theme=${t}`) === (t !== 'auto'), `theme=${t} not kept in the address: ${page.url()}`);
    await clean(page, errors);
    await page.close();
  }
  const { page } = await open('#/service-types/1?theme=dark');
  check(await page.evaluate(() => document.documentElement.getAttribute('data-theme')) === 'dark', 'theme= does not apply to the full page');
  await page.close();
});

await test('autoplay=1 plays, never under prefers-reduced-motion', async () => {
  let { page, errors } = await open('#/nodeport-loadbalancer/2?embed=1&autoplay=1');
  await page.waitForFunction(() => Number(document.querySelector('.kh').dataset.step) >= 2 && document.querySelector('.kh').dataset.playing === 'true');
  await page.waitForSelector('[data-testid=packet]', { timeout: 5000 });
  await clean(page, errors);
  await page.close();
  ({ page, errors } = await open('#/nodeport-loadbalancer/2?embed=1&autoplay=1', { reducedMotion: true }));
  await page.waitForTimeout(600);
  check(await playing(page) === 'false', 'autoplay under reduced motion');
  await clean(page, errors);
  await page.close();
});

await test('bad embed values open the page with the link notice, never a blank page', async () => {
  const { page, errors } = await open('#/nodeport-loadbalancer/2?embed=1&theme=neon&controls=lots&autoplay=maybe&origins=*,javascript:alert(1)');
  const notice = await page.textContent('.kh-notice');
  for (const t of ['theme="neon"', 'controls="lots"', 'autoplay="maybe"', 'is not an origin']) check(notice.includes(t), `notice lacks ${t}: ${notice}`);
  check(await page.locator('.kh-canvas svg .kh-zone').count() > 0, 'no canvas');
  check(await playing(page) === 'false', 'a bad autoplay value played');
  await clean(page, errors);
  await page.close();
});

// The frame is the page: measured at the three sizes the issue names.
await test('embed fits 480×360, 720×560 and 1280×720 with no scrollbar, on every scenario', async () => {
  const problems = [];
  for (const [w, h] of [[480, 360], [720, 560], [1280, 720]]) {
    for (const id of SCENARIOS) {
      const { page, errors } = await open(`#/${id}/2/end?embed=1`, { viewport: { width: w, height: h } });
      const m = await page.evaluate(() => {
        const d = document.documentElement, svg = document.querySelector('.kh-canvas svg').getBoundingClientRect();
        const bar = document.querySelector('.kh-embed-bar').getBoundingClientRect(), narr = document.querySelector('.kh-narration').getBoundingClientRect();
        return { sw: d.scrollWidth, sh: d.scrollHeight, cw: d.clientWidth, ch: d.clientHeight, svgW: svg.width, svgH: svg.height, bottom: Math.max(bar.bottom, narr.bottom, svg.bottom) };
      });
      if (m.sw > m.cw || m.sh > m.ch) problems.push(`${id} at ${w}×${h}: scrolls (${m.sw}×${m.sh} in ${m.cw}×${m.ch})`);
      if (m.bottom > h + 0.5) problems.push(`${id} at ${w}×${h}: content ends at ${m.bottom}`);
      if (m.svgH < h * 0.3) problems.push(`${id} at ${w}×${h}: canvas only ${m.svgW.toFixed(0)}×${m.svgH.toFixed(0)}`);
      if (id !== 'service-types') await page.screenshot({ path: join(out, `embed-${id}-${w}x${h}.png`) });
      if (errors.length) problems.push(`${id} at ${w}×${h}: ${errors.join(' | ')}`);
      if ((await violations(page)).length) problems.push(`${id}: CSP ${await violations(page)}`);
      await page.close();
    }
  }
  check(problems.length === 0, problems.join('\n'));
});

// A host page on its own origin embeds the app under /kh/ and drives it.
async function hostPage(origin, hash, w = 720) {
  const page = await browser.newPage();
  const errors = await watch(page);
  await page.goto(`${origin}/?w=${w}&src=${encodeURIComponent(`${base}${hash}`)}`);
  const frame = async () => {
    const f = page.frames().find((x) => x.url().startsWith(appOrigin));
    check(f, 'no app frame');
    return f;
  };
  await page.waitForFunction(() => document.querySelector('iframe'));
  for (let i = 0; i < 100 && !page.frames().some((x) => x.url().startsWith(appOrigin)); i++) await page.waitForTimeout(100);
  await (await frame()).waitForSelector('.kh[data-step] .kh-canvas svg .kh-zone', { timeout: 15000 });
  const messages = () => page.evaluate(() => window.messages);
  const send = (m) => page.evaluate((m) => window.send(m), m);
  // Waits for a message of this type after the n-th one.
  const next = async (type, after) => {
    const h = await page.waitForFunction(([t, n]) => window.messages.slice(n).find((m) => m && m.type === t), [type, after], { timeout: 5000 });
    return h.jsonValue();
  };
  return { page, errors, frame, messages, send, next };
}

await test('a host page on another origin sizes the iframe from the height message and drives it with postMessage', async () => {
  const h = await hostPage(hostOrigin, `#/nodeport-loadbalancer/1?embed=1&origins=${hostOrigin}`);
  const ready = await h.next('kubehops:ready', 0);
  check(ready.version === 1 && ready.state.scenario === 'nodeport-loadbalancer' && ready.state.step === 1 && ready.state.steps === 5, `ready: ${JSON.stringify(ready)}`);
  const height = await h.next('kubehops:height', 0);
  check(height.version === 1 && height.height > 300, `height: ${JSON.stringify(height)}`);
  await h.page.waitForTimeout(400);
  const sized = await h.page.evaluate(() => {
    const hs = window.messages.filter((m) => m.type === 'kubehops:height');
    return { last: hs.at(-1).height, frame: document.querySelector('iframe').getBoundingClientRect().height, count: hs.length };
  });
  check(Math.abs(sized.frame - sized.last) < 1, `iframe is ${sized.frame} px, last height message ${sized.last}`);
  const f = await h.frame();
  const inner = await f.evaluate(() => ({ sh: document.documentElement.scrollHeight, ch: document.documentElement.clientHeight, svg: document.querySelector('.kh-canvas svg').getBoundingClientRect().width }));
  check(inner.sh <= inner.ch, `the sized frame scrolls: ${inner.sh} > ${inner.ch}`);
  check(inner.svg > 700, `the canvas does not use the frame's width: ${inner.svg}`);
  await h.page.screenshot({ path: join(out, 'embed-host-720.png'), fullPage: true });

  let n = (await h.messages()).length;
  await h.send({ type: 'kubehops:get', version: 1, id: 'q1' });
  let st = await h.next('kubehops:state', n);
  check(st.id === 'q1' && st.state.step === 1 && st.state.playing === false && st.state.link.startsWith('#/nodeport-loadbalancer/1'), `get: ${JSON.stringify(st)}`);

  n = (await h.messages()).length;
  await h.send({ type: 'kubehops:set', version: 1, id: 2, step: 3, hop: 'end' });
  st = await h.next('kubehops:state', n);
  check(st.id === 2 && st.state.step === 3 && st.state.hop === st.state.hops && !st.state.playing, `set step 3 end: ${JSON.stringify(st)}`);
  check(await f.getAttribute('.kh', 'data-step') === '3', 'the frame did not open step 3');
  const change = await h.next('kubehops:change', n);
  check(change.state.step === 3, `change: ${JSON.stringify(change)}`);

  n = (await h.messages()).length;
  await h.send({ type: 'kubehops:next', version: 1 });
  st = await h.next('kubehops:state', n);
  check(st.state.step === 4 && await f.getAttribute('.kh', 'data-step') === '4', `next: ${JSON.stringify(st)}`);
  await h.send({ type: 'kubehops:previous', version: 1 });
  await f.waitForSelector('.kh[data-step="3"]');

  n = (await h.messages()).length;
  await h.send({ type: 'kubehops:set', version: 1, playing: true });
  st = await h.next('kubehops:state', n);
  check(st.state.playing === true, `play: ${JSON.stringify(st)}`);
  await h.send({ type: 'kubehops:set', version: 1, playing: false });
  await f.waitForSelector('.kh[data-playing="false"]');

  n = (await h.messages()).length;
  await h.send({ type: 'kubehops:set', version: 1, scenario: 'service-types', step: 2, hop: 'end', id: 'sc' });
  st = await h.next('kubehops:state', n);
  check(st.state.scenario === 'service-types' && st.state.step === 2, `scenario: ${JSON.stringify(st)}`);
  check(f.url().includes('embed=1') && f.url().includes('origins='), `the frame lost its embed options: ${f.url()}`);

  // The Pod network, as the link's network= takes it; a value it does not have is refused.
  n = (await h.messages()).length;
  await h.send({ type: 'kubehops:set', version: 1, network: 'vxlan', id: 'net' });
  st = await h.next('kubehops:state', n);
  check(st.id === 'net' && st.state.link.includes('network=vxlan') && st.state.step === 2, `network: ${JSON.stringify(st)}`);
  await f.waitForFunction(() => location.hash.includes('network=vxlan'), null, { timeout: 5000 });
  n = (await h.messages()).length;
  await h.send({ type: 'kubehops:set', version: 1, network: 'geneve', id: 'badnet' });
  const netErr = await h.next('kubehops:error', n);
  check(netErr.id === 'badnet' && /"geneve" is not a value of network; it takes routed, vxlan/.test(netErr.message), `network error: ${JSON.stringify(netErr)}`);

  // Two commands in a row, the first still being built (by the page's
  // worker) when the second comes: each is answered once, the first with
  // an error that says it was overtaken, and the second is what is shown.
  n = (await h.messages()).length;
  await h.page.evaluate(() => {
    window.send({ type: 'kubehops:set', version: 1, scenario: 'local-lab', step: 2, id: 'first' });
    window.send({ type: 'kubehops:set', version: 1, scenario: 'nodeport-loadbalancer', step: 2, id: 'second' });
  });
  st = await h.next('kubehops:state', n);
  check(st.id === 'second' && st.state.scenario === 'nodeport-loadbalancer' && st.state.step === 2, `second: ${JSON.stringify(st)}`);
  await h.page.waitForTimeout(300);
  const answers = (await h.messages()).slice(n).filter((m) => m.id === 'first' || m.id === 'second');
  check(answers.length === 2 && answers.some((m) => m.id === 'first' && m.type === 'kubehops:error' && /newer change/.test(m.message)), `answers: ${JSON.stringify(answers)}`);
  await h.send({ type: 'kubehops:set', version: 1, scenario: 'service-types', step: 2, network: 'vxlan', id: 'back' });
  await h.next('kubehops:state', (await h.messages()).length - 1);

  n = (await h.messages()).length;
  await h.send({ type: 'kubehops:set', version: 1, step: 99, id: 'bad' });
  const err = await h.next('kubehops:error', n);
  check(err.id === 'bad' && /Step 99 does not exist/.test(err.message), `error: ${JSON.stringify(err)}`);

  // Not of the protocol's shape: ignored, no answer, nothing changes, nothing injected.
  n = (await h.messages()).length;
  const before = await f.getAttribute('.kh', 'data-step');
  for (const m of [
    { type: 'kubehops:set', version: 2, step: 1 },
    { type: 'kubehops:set', version: 1, step: 1, html: '<img src=x onerror=alert(1)>' },
    { type: 'kubehops:set', version: 1, step: '1' },
    { type: 'kubehops:navigate', version: 1, url: 'https://example.com/' },
    { type: 'kubehops:set', version: 1, scenario: 'javascript:alert(1)' },
    'kubehops:get', 42, null, [1, 2, 3],
    { type: 'iframe-resizer', height: 1 },
  ]) await h.send(m);
  await h.page.waitForTimeout(500);
  const after = (await h.messages()).slice(n).filter((m) => m.type !== 'kubehops:height');
  check(after.length === 0, `answers to malformed messages: ${JSON.stringify(after)}`);
  check(await f.getAttribute('.kh', 'data-step') === before, 'a malformed message changed the step');
  check(f.url().startsWith(`${base}#/service-types/2`), `the frame navigated: ${f.url()}`);
  check(await f.evaluate(() => document.querySelectorAll('img').length) === 0, 'markup was injected');
  await clean(h.page, h.errors);
  await h.page.close();
});

await test('a page on an origin not in origins= is ignored and told nothing', async () => {
  const h = await hostPage(strangerOrigin, `#/nodeport-loadbalancer/2/end?embed=1&origins=${hostOrigin}`);
  const f = await h.frame();
  await h.page.waitForTimeout(600);
  await h.send({ type: 'kubehops:get', version: 1, id: 1 });
  await h.send({ type: 'kubehops:set', version: 1, step: 4, hop: 'end' });
  await h.page.waitForTimeout(600);
  const got = (await h.messages()).filter((m) => m.type !== 'kubehops:height');
  check(got.length === 0, `the unlisted origin was told: ${JSON.stringify(got)}`);
  check(await f.getAttribute('.kh', 'data-step') === '2', 'the unlisted origin moved the page');
  await clean(h.page, h.errors);
  await h.page.close();
  // Without origins= nobody drives it, but the height is still sent.
  const h2 = await hostPage(hostOrigin, '#/nodeport-loadbalancer/2/end?embed=1');
  await h2.next('kubehops:height', 0);
  await h2.send({ type: 'kubehops:set', version: 1, step: 4 });
  await h2.page.waitForTimeout(500);
  check((await h2.messages()).every((m) => m.type === 'kubehops:height'), 'without origins= the page answered');
  check(await (await h2.frame()).getAttribute('.kh', 'data-step') === '2', 'without origins= the page was driven');
  await h2.page.close();
});

await test('the Embed button copies the <iframe> for what is on screen, and shows it', async () => {
  const { page, errors } = await open('#/service-types/3/end?tab=nodeport&client=laptop&theme=dark');
  await page.getByRole('button', { name: 'Embed', exact: true }).click();
  await page.waitForSelector('dialog[open] [data-testid=embed-snippet]');
  await page.waitForFunction(() => document.querySelector('[data-testid=embed-status]').textContent.startsWith('Copied'));
  const snippet = await page.inputValue('[data-testid=embed-snippet]');
  const src = `${base}#/service-types/3/end?tab=nodeport&amp;client=laptop`;
  check(snippet.startsWith(`<iframe src="${src}`) && snippet.includes('embed=1') && snippet.includes('theme=dark') && snippet.includes('title="KubeHops: '), `snippet: ${snippet}`);
  check(await page.evaluate(() => navigator.clipboard.readText()) === snippet, 'the clipboard does not hold the snippet');
  // The snippet opens that state, embedded.
  const url = snippet.match(/src="([^"]+)"/)[1].replaceAll('&amp;', '&');
  const e = await open(url.slice(base.length));
  check(await e.page.locator('.kh-embed').count() === 1 && await step(e.page) === 3, 'the snippet does not open the embedded state');
  await e.page.close();
  await page.getByRole('button', { name: 'Close' }).click();
  check(await page.locator('dialog[open]').count() === 0, 'the dialog did not close');
  await clean(page, errors);
  await page.close();
});

// Canvas labels whose boxes overlap (tokens aside), as run.mjs checks them.
const overlapping = (page) => page.evaluate(() => {
  const boxes = [...document.querySelectorAll('.kh-canvas svg text')]
    .filter((t) => !t.closest('.kh-token') && t.textContent.trim() && t.getClientRects().length)
    .map((t) => ({ text: t.textContent.trim(), r: t.getBoundingClientRect() }));
  const bad = [];
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i].r, b = boxes[j].r;
      if (Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1 && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1) bad.push(`"${boxes[i].text}" / "${boxes[j].text}"`);
    }
  }
  return bad;
});

// Canvas text in CSS pixels: its font size times the SVG's scale.
const smallestText = (page) => page.evaluate(() => {
  let min = Infinity, which = '';
  for (const t of document.querySelectorAll('.kh-canvas svg text')) {
    if (!t.textContent.trim() || !t.getClientRects().length) continue;
    const px = parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a;
    if (px < min) { min = px; which = t.textContent.trim(); }
  }
  return { min, which };
});

await test('presenter mode at 1920×1080 and 3840×2160: the canvas fills the screen, no canvas text under 24 px, keys step, H, Esc', async () => {
  const { page, errors } = await open('#/nodeport-loadbalancer/2/end', { viewport: { width: 1920, height: 1080 } });
  const before = await smallestText(page);
  check(before.min < 24, `the measure is blind: ${before.min} px before presenting`);
  await page.getByRole('button', { name: 'Present', exact: true }).click();
  await page.waitForSelector('.kh-presenting');
  await page.waitForTimeout(300);
  const fills = async (W, H) => page.evaluate(([W, H]) => {
    const s = document.querySelector('.kh-canvas svg').getBoundingClientRect();
    const c = document.querySelector('.kh-narration').getBoundingClientRect();
    const hop = document.querySelector('.kh-status').getBoundingClientRect();
    return { w: s.width, h: s.height, cap: c.height + hop.height, capTop: hop.top, full: s.width >= W - 1 && s.height + hop.height + c.height >= H - 2 };
  }, [W, H]);
  let f = await fills(1920, 1080);
  check(f.full && f.h > 800, `canvas does not fill 1920×1080: ${JSON.stringify(f)}`);
  let t = await smallestText(page);
  check(t.min >= 24, `canvas text at ${t.min.toFixed(1)} px ("${t.which}"); it was ${before.min.toFixed(1)} px before presenting`);
  check(await page.locator('.kh-head').isHidden() && await page.locator('.kh-side').isHidden(), 'the header or the panels are shown');
  check((await page.textContent('.kh-narration')).includes('Step 2 of 5'), 'the caption is not the narration');
  await page.screenshot({ path: join(out, 'present-1080.png') });
  await page.keyboard.press('PageDown');
  check(await step(page) === 3, 'Page Down did not step');
  await page.keyboard.press('PageUp');
  check(await step(page) === 2, 'Page Up did not step back');
  await page.keyboard.press('h');
  check(await page.locator('.kh-side').isVisible(), 'H did not show the panels');
  await page.screenshot({ path: join(out, 'present-1080-panels.png') });
  await page.keyboard.press('h');
  check(await page.locator('.kh-side').isHidden(), 'H did not hide the panels');
  // Every step of every scenario keeps the floor, and no two labels overlap.
  const problems = [];
  for (const [id, n] of [['nodeport-loadbalancer', 5], ['service-types', 3], ['local-lab', 10]]) {
    for (let k = 1; k <= n; k++) {
      await page.keyboard.press('Escape');
      await page.goto(`${base}#/${id}/${k}/end`);
      await page.waitForSelector('.kh[data-step] .kh-canvas svg .kh-zone');
      await page.keyboard.press('p');
      await page.waitForSelector('.kh-presenting');
      await page.waitForTimeout(250);
      t = await smallestText(page);
      if (!(t.min >= 24)) problems.push(`${id} step ${k}: canvas text at ${t.min.toFixed(1)} px ("${t.which}")`);
      const bad = await overlapping(page);
      if (bad.length) problems.push(`${id} step ${k}: overlapping labels ${bad.join(', ')}`);
      if ([3, 10].includes(k) || id === 'local-lab' && k === 1) await page.screenshot({ path: join(out, `present-1080-${id}-${k}.png`) });
    }
  }
  check(problems.length === 0, problems.join('\n'));
  await page.setViewportSize({ width: 3840, height: 2160 });
  await page.waitForTimeout(400);
  f = await fills(3840, 2160);
  check(f.full, `canvas does not fill 3840×2160: ${JSON.stringify(f)}`);
  t = await smallestText(page);
  check(t.min >= 48, `at 4K canvas text is ${t.min.toFixed(1)} px`);
  await page.screenshot({ path: join(out, 'present-4k.png') });
  await page.keyboard.press('Escape');
  await page.waitForFunction(() => !document.querySelector('.kh-presenting'));
  check(await page.locator('.kh-head').isVisible(), 'Esc did not bring the page back');
  await clean(page, errors);
  await page.close();
});

await test('the presenter view shows the current and next narration, a clock and the hops, in step both ways', async () => {
  const { page, errors } = await open('#/nodeport-loadbalancer/1/end');
  const [notes] = await Promise.all([browser.waitForEvent('page'), page.getByRole('button', { name: 'Presenter view' }).click()]);
  const notesErrors = await watch(notes);
  await notes.waitForSelector('[data-testid=notes-current]');
  const narration = async () => page.textContent('.kh-narration p:last-child');
  const now = async () => notes.textContent('[data-testid=notes-current] p');
  check(await now() === await narration(), 'the notes do not show the current narration');
  check((await notes.textContent('[data-testid=notes-next] h2')).startsWith('Next · 2.'), 'the notes do not show the next step');
  check(/^\d\d:\d\d:\d\d$/.test(await notes.textContent('[data-testid=clock]')), 'no clock');
  check(await notes.locator('[data-testid=notes-hops] li').count() === 4, 'step 1 has four hops');
  // Main → notes.
  await page.keyboard.press('ArrowRight');
  await notes.waitForSelector('.kh[data-step="2"]');
  check(await now() === await narration(), 'the notes did not follow the main window');
  await page.keyboard.press('End');
  await notes.waitForFunction(() => document.querySelectorAll('[data-testid=notes-hops] li.done, [data-testid=notes-hops] li.current').length === document.querySelectorAll('[data-testid=notes-hops] li').length);
  // Notes → main, by button and by key.
  await notes.getByRole('button', { name: 'Next step' }).click();
  await page.waitForSelector('.kh[data-step="3"]');
  await notes.keyboard.press('PageUp');
  await page.waitForSelector('.kh[data-step="2"]');
  check(await step(notes) === 2, 'the notes lost their step');
  check(await now() === await narration(), 'the windows disagree');
  await notes.screenshot({ path: join(out, 'presenter-view.png') });
  await clean(notes, notesErrors);
  await clean(page, errors);
  await notes.close();
  await page.close();
});

await test('no request leaves the three test origins', async () => {
  check(outside.length === 0, `outside requests: ${outside.join(', ')}`);
});

await browser.close();
for (const s of [app, hostA, hostB]) s.close();
await rm(profile, { recursive: true, force: true });
console.log(`e2e embed: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
