// End-to-end tests of the release build in Debian's headless Chromium,
// driven by playwright-core (which never downloads a browser).
//
// Serves dist/ on a loopback port, checks what a person would see and do,
// writes screenshots to .e2e-out/ for review, and prints the gzip sizes of
// the wasm and JS the page actually loaded.
import { chromium } from 'playwright-core';
import { createServer } from 'node:http';
import { readFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import { join, extname, resolve } from 'node:path';
import { tmpdir } from 'node:os';

const root = resolve(process.argv[2] ?? 'dist');
const out = resolve('.e2e-out');
const types = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.css': 'text/css' };

// The same dist/ is also served under a sub-path, as a documentation site
// that embeds the app at /kh/ would: /kh/x maps to dist/x.
const SUB = '/kh/';
const server = createServer(async (req, res) => {
  let path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  if (path === SUB.slice(0, -1)) { res.writeHead(301, { location: SUB }).end(); return; }
  if (path.startsWith(SUB)) path = path.slice(SUB.length - 1);
  const file = join(root, path === '/' ? 'index.html' : path);
  if (!file.startsWith(root)) { res.writeHead(403).end(); return; }
  try {
    const body = await readFile(file);
    res.writeHead(200, { 'content-type': types[extname(file)] ?? 'application/octet-stream' }).end(body);
  } catch {
    res.writeHead(404).end('not found');
  }
});
await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
const origin = `http://127.0.0.1:${server.address().port}`;

const profile = await mkdtemp(join(tmpdir(), 'kubehops-chromium-'));
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM_BIN ?? '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
  viewport: { width: 1600, height: 1000 },
});
await mkdir(out, { recursive: true });

let passed = 0, failed = 0;
const sizes = new Map();
const outside = [];

async function open(hash = '', opts = {}) {
  const page = await browser.newPage();
  if (opts.viewport) await page.setViewportSize(opts.viewport);
  if (opts.reducedMotion) await page.emulateMedia({ reducedMotion: 'reduce' });
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('response', (r) => { if (r.status() >= 400) errors.push(`HTTP ${r.status()} ${r.url()}`); });
  page.on('request', (r) => { if (!r.url().startsWith(origin)) outside.push(r.url()); });
  page.on('response', async (r) => {
    const u = r.url();
    if (/\.(wasm|js)$/.test(u) && !sizes.has(u)) {
      try { const b = await r.body(); sizes.set(u, { raw: b.length, gzip: gzipSync(b, { level: 9 }).length }); } catch {}
    }
  });
  await page.goto(`${origin}${opts.base ?? '/'}${hash}`);
  await page.waitForSelector('.kh[data-step] .kh-node-card', { timeout: 15000 });
  return { page, errors };
}

function check(cond, msg) { if (!cond) throw new Error(msg); }

// The address as the page leaves it: the app writes its link after the
// frame that shows a change is painted (src/app.rs, sync_link), so this
// reads it after a frame and the task that follows it.
async function settledUrl(page) {
  return page.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(() => r(location.href), 0))));
}

// A parameter control's choice is shown on the control at once and
// applied a frame after the click, in a task of its own
// (Player::choose); the page is aria-busy until then.
// Steps hop by hop to the scenario's end ('.' goes on into the next step;
// the link keeps the hop while paused, so it changes with each), calling
// `visit` with the link at each hop; returns how many hops it took.
async function eachHop(page, limit, visit) {
  let hops = 0;
  for (; hops < limit; hops++) {
    const before = await page.evaluate(() => location.hash);
    await page.keyboard.press('.');
    await page.waitForFunction((b) => location.hash !== b, before, { timeout: 300 }).catch(() => {});
    const at = await page.evaluate(() => location.hash);
    if (at === before) break;
    await visit(at);
  }
  return hops;
}

const settled = (page) => page.waitForFunction(() => !document.querySelector('.kh[aria-busy]'), null, { timeout: 10000 });
// A link to another scenario is applied when the worker has built it
// (Player::when_built): waits until the page shows scenario `title` and is
// no longer busy.
const arrived = (page, title) => page.waitForFunction((t) => {
  const kh = document.querySelector('.kh[data-step]');
  return kh && !kh.hasAttribute('aria-busy') && kh.querySelector('h1')?.textContent === t;
}, title, { timeout: 10000 });
// Clicks a parameter control and waits until its choice is applied.
const choose = async (page, control) => { await control.click(); await settled(page); };

// ONLY=text runs just the tests whose names contain it (a local aid; CI runs all).
async function test(name, fn) {
  if (process.env.ONLY && !name.includes(process.env.ONLY)) return;
  try { await fn(); passed++; console.log(`ok   ${name}`); }
  catch (e) { failed++; console.log(`FAIL ${name}\n     ${String(e.message ?? e).split('\n').join('\n     ')}`); }
}

const currentStep = (page) => page.getAttribute('.kh', 'data-step').then(Number);
const playing = (page) => page.getAttribute('.kh', 'data-playing');
const kubectl = (page) => page.textContent('[data-testid=kubectl]');

await test('page loads without console errors and shows three nodes and both Pods', async () => {
  const { page, errors } = await open();
  const svg = await page.textContent('.kh-canvas svg');
  for (const t of ['Node-1', 'Node-2', 'Node-3', '10.0.0.11', '10.0.0.12', '10.0.0.13', '10.244.1.5:8080', '10.244.3.9:8080', 'no web Pod']) {
    check(svg.includes(t), `canvas lacks "${t}"`);
  }
  check(errors.length === 0, `console errors: ${errors.join(' | ')}`);
  await page.close();
});

await test('served under a sub-path (/kh/), the page loads its files from there and renders', async () => {
  const { page, errors } = await open('#/nodeport-loadbalancer/2/end', { base: SUB });
  check(await page.locator('.kh-node-card').count() === 3, `expected three nodes, got ${await page.locator('.kh-node-card').count()}`);
  const svg = await page.textContent('.kh-canvas svg');
  for (const t of ['Node-1', 'Node-2', 'Node-3']) check(svg.includes(t), `canvas lacks "${t}"`);
  check(await currentStep(page) === 2, 'the link in the hash did not open step 2');
  // Every file came from under /kh/, none from the site root.
  const loaded = await page.evaluate(() => performance.getEntriesByType('resource').map((e) => new URL(e.name).pathname));
  check(loaded.length >= 3 && loaded.every((p) => p.startsWith('/kh/')), `files loaded from outside /kh/: ${loaded.join(', ')}`);
  check(new URL((await settledUrl(page))).pathname === SUB, `page moved away from ${SUB}: ${(await settledUrl(page))}`);
  check(errors.length === 0, `console errors: ${errors.join(' | ')}`);
  await page.close();
});

// The opening state is read from the data the build wrote (src/opening.rs)
// when the link asks for a scenario with its defaults: what is shown is the
// same as when the worker builds it (the data blocked), at every step. A
// build is the page's `kh-build` measure: from its request to the worker's
// answer (the page builds nothing itself).
await test('opening state: read from the build\'s data for a default link, the same page as a build, and built when the data fails or the link sets parameters', async () => {
  const shown = async (hash, block) => {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    if (block) await page.route(/opening-.*\.bin$/, (r) => r.abort());
    await page.goto(`${origin}/${hash}`);
    await page.waitForSelector('.kh-hoplist', { state: 'attached' });
    const out = await page.evaluate(() => ({
      text: document.querySelector('.kh-main').textContent,
      builds: performance.getEntriesByName('kh-build').length,
      reads: performance.getEntriesByName('kh-opening').length,
      fetched: performance.getEntriesByType('resource').map((e) => new URL(e.name).pathname.slice(1)).filter((p) => /^opening-.*\.bin$/.test(p)),
    }));
    await page.close();
    return { ...out, errors };
  };
  for (const hash of ['#/nodeport-loadbalancer/2/end', '#/local-lab/7/end', '#/service-types/1/end?theme=dark']) {
    const id = hash.split('/')[1];
    const read = await shown(hash, false), built = await shown(hash, true);
    check(read.fetched.length === 1 && read.fetched[0].startsWith(`opening-${id}-`), `${hash}: fetched ${read.fetched.join(', ') || 'nothing'}`);
    check(read.reads === 1 && read.builds === 0, `${hash}: ${read.reads} reads and ${read.builds} builds at start-up, expected 1 and 0`);
    check(built.reads === 0 && built.builds === 1, `${hash} with the data blocked: ${built.reads} reads and ${built.builds} builds, expected 0 and 1`);
    check(read.text.length > 200 && read.text === built.text, `${hash}: the page read from data differs from the page built`);
    check(read.errors.length === 0 && built.errors.length === 0, `${hash}: errors ${[...read.errors, ...built.errors].join(' | ')}`);
  }
  const set = await shown('#/service-types/3/end?tab=nodeport', false);
  check(set.fetched.length === 0 && set.builds === 1, `a link with parameters fetched ${set.fetched.join(', ') || 'nothing'} and built ${set.builds} times`);
});

// The worker builds every scenario after the opening state (src/worker.rs).
// When it cannot load, the opening state still plays, nothing is said
// until something is asked of it, and a change says why and keeps what is
// shown.
// Its wasm refused (an error inside the worker: an ErrorEvent), or its
// script itself (a plain error event, with no message: found by
// monkey.mjs in WebKit, going back to a page left while it loaded).
for (const [part, blocked] of [['wasm', /kubehops-worker-[0-9a-f]+_bg\.wasm$/], ['script', /kubehops-worker-[0-9a-f]+_loader\.js$/]]) await test(`a worker that cannot load (its ${part}): the opening state plays, and a change of parameters says why and keeps what is shown`, async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.route(blocked, (r) => r.abort());
  await page.goto(`${origin}/#/service-types/1`);
  await page.waitForSelector('.kh[data-step] .kh-node-card', { timeout: 15000 });
  await page.waitForTimeout(1000);
  check(await page.locator('.kh-notice').count() === 0, `a notice before anything was asked: ${await page.locator('.kh-notice').allTextContents()}`);
  await page.getByRole('button', { name: 'Next step', exact: true }).click();
  await page.waitForFunction(() => document.querySelector('.kh')?.getAttribute('data-step') === '2');
  await page.getByRole('tab', { name: 'NodePort', exact: true }).click();
  await page.waitForSelector('.kh-notice', { timeout: 10000 });
  const said = await page.textContent('.kh-notice');
  check(said.includes("kubehops's model stopped") && said.includes('What was shown before stays'), `notice: ${said}`);
  check((await page.textContent('.kh-canvas svg')).includes('Node-1'), 'the canvas was lost');
  check(await page.textContent('h1') === 'The five Service types', 'the scenario changed');
  // Not left busy, and the controls show what is shown (choosing again asks again).
  await page.waitForFunction(() => !document.querySelector('.kh[aria-busy]'), null, { timeout: 5000 });
  check(await page.getByRole('tab', { name: 'ClusterIP', exact: true }).getAttribute('aria-selected') === 'true', 'the tab shown is not the tab of the picture');
  check(errors.length === 0, `page errors: ${errors.join(' | ')}`);
  await page.close();
});

// Save-Data: the worker's 300 KB are fetched when the page first needs
// them (a change of parameters), not right after it is shown; without it,
// right after.
await test('with Save-Data the worker is fetched when first needed, without it right after the page is shown', async () => {
  const opened = async (saveData) => {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    if (saveData) {
      await page.addInitScript(() => Object.defineProperty(navigator, 'connection', { value: { saveData: true }, configurable: true }));
    }
    const fetched = [];
    page.on('request', (r) => { if (/kubehops-worker-[0-9a-f]+_bg\.wasm$/.test(r.url())) fetched.push(r.url()); });
    await page.goto(`${origin}/#/service-types/1`);
    await page.waitForSelector('.kh[data-step] .kh-node-card', { timeout: 15000 });
    await page.waitForTimeout(1500);
    return { page, errors, fetched };
  };
  const plain = await opened(false);
  check(plain.fetched.length === 1, `without Save-Data the worker is not fetched once the page is shown: ${plain.fetched.length}`);
  await plain.page.close();
  const { page, errors, fetched } = await opened(true);
  check(fetched.length === 0, `with Save-Data the worker was fetched before it was needed: ${fetched.join(', ')}`);
  const needed = page.waitForRequest(/kubehops-worker-[0-9a-f]+_bg\.wasm$/, { timeout: 20000 }).catch(() => null);
  await page.getByRole('tab', { name: 'NodePort', exact: true }).click();
  check(await needed !== null, 'the worker was not fetched when first needed');
  // The change is built (by the worker, once it came) and shown.
  await page.waitForFunction(() => (document.querySelector('[data-testid=kubectl]')?.textContent ?? '').includes('NodePort'), null, { timeout: 20000 });
  check((await page.textContent('.kh-canvas svg')).includes('Node-1'), 'no canvas after the change');
  check(errors.length === 0, `page errors: ${errors.join(' | ')}`);
  await page.close();
});

await test('controls are real buttons with accessible names', async () => {
  const { page } = await open();
  for (const name of ['Play', 'Previous step', 'Next step', 'Restart']) {
    check(await page.getByRole('button', { name, exact: true }).count() === 1, `no button named "${name}"`);
  }
  check(await page.getByRole('button', { name: /^Step 3 of 5/ }).count() === 1, 'step indicator buttons missing');
  await page.close();
});

await test('Next step advances the indicator and changes the kubectl output', async () => {
  const { page } = await open();
  check(await currentStep(page) === 1, 'does not start at step 1');
  check(await page.getByRole('button', { name: /^Step 1 of 5/ }).getAttribute('aria-current') === 'step', 'step 1 not marked current');
  const before = await kubectl(page);
  check(before.includes('ClusterIP'), `step 1 should start from a ClusterIP Service:\n${before}`);
  await page.getByRole('button', { name: 'Next step' }).click();
  check(await currentStep(page) === 2, 'indicator did not advance');
  check(await page.getByRole('button', { name: /^Step 2 of 5/ }).getAttribute('aria-current') === 'step', 'step 2 not marked current');
  const after = await kubectl(page);
  check(after !== before && after.includes('80:31000/TCP'), `kubectl did not change to the NodePort:\n${after}`);
  check((await settledUrl(page)).endsWith('#/nodeport-loadbalancer/2'), `URL not updated: ${(await settledUrl(page))}`);
  await page.close();
});

await test('Play moves a packet, Pause stops it', async () => {
  const { page } = await open();
  await page.getByRole('button', { name: 'Play' }).click();
  await page.waitForSelector('[data-testid=packet]', { timeout: 5000 });
  const p1 = await page.getAttribute('[data-testid=packet]', 'transform');
  await page.waitForTimeout(400);
  const p2 = await page.getAttribute('[data-testid=packet]', 'transform');
  check(p1 !== p2, `packet did not move: ${p1}`);
  await page.getByRole('button', { name: 'Pause' }).click();
  const p3 = await page.getAttribute('[data-testid=packet]', 'transform');
  await page.waitForTimeout(400);
  check(p3 === await page.getAttribute('[data-testid=packet]', 'transform'), 'packet moved while paused');
  await page.close();
});

await test('opening a step URL shows that step', async () => {
  const { page } = await open('#/nodeport-loadbalancer/3/end');
  check(await currentStep(page) === 3, 'not on step 3');
  const k = await kubectl(page);
  check(k.includes('LoadBalancer') && k.includes('203.0.113.7'), `step 3 end should show the balancer IP:\n${k}`);
  check((await page.textContent('.kh-narration')).includes('Step 3 of 5'), 'narration not for step 3');
  await page.close();
});

await test('step 3 shows <pending> before the address is published', async () => {
  const { page } = await open('#/nodeport-loadbalancer/3/1');
  check((await kubectl(page)).includes('<pending>'), 'EXTERNAL-IP should be <pending> after the apply');
  check((await page.textContent('.kh-canvas svg')).includes('none yet'), 'no balancer should exist before the controller asks');
  await page.getByRole('button', { name: /^Show hop 3:/ }).click();
  check((await page.textContent('.kh-canvas svg')).includes('provisioning'), 'balancer should show provisioning once created');
  check((await kubectl(page)).includes('<pending>'), 'still <pending> while provisioning');
  await page.close();
});

await test('keyboard: arrows and Page keys step, Home restarts, End ends the step, Space plays', async () => {
  const { page, errors } = await open();
  await page.locator('body').press('ArrowRight');
  await page.locator('body').press('ArrowRight');
  check(await currentStep(page) === 3, 'ArrowRight did not step');
  await page.locator('body').press('ArrowLeft');
  check(await currentStep(page) === 2, 'ArrowLeft did not step back');
  // Presenter clickers send Page Down and Page Up.
  await page.keyboard.press('PageDown');
  check(await currentStep(page) === 3, 'PageDown did not step');
  await page.keyboard.press('PageUp');
  check(await currentStep(page) === 2, 'PageUp did not step back');
  await page.locator('body').press('End');
  check((await page.getAttribute('.kh-status', 'data-hop')).startsWith('6/6') && await playing(page) === 'false', 'End did not show the end of step 2');
  await page.locator('body').press('Home');
  check(await currentStep(page) === 1, 'Home did not restart');
  const was = await playing(page);
  await page.locator('body').press('Space');
  check(await playing(page) !== was, 'Space did not toggle play');
  await page.locator('body').press('Space');
  check(await playing(page) === was, 'Space did not toggle back');
  check(errors.length === 0, `console errors: ${errors.join(' | ')}`);
  await page.close();
});

await test('keyboard: . and , (and ] and [) step one hop, pausing, across steps', async () => {
  const { page } = await open('#/nodeport-loadbalancer/2/2');
  const status = () => page.getAttribute('.kh-status', 'data-hop');
  await page.keyboard.press('.');
  check((await status()).startsWith('3/6') && await playing(page) === 'false', `. should show hop 3, paused: ${await status()}`);
  await page.keyboard.press(']');
  check((await status()).startsWith('4/6'), `] should show hop 4: ${await status()}`);
  await page.keyboard.press(',');
  await page.keyboard.press('[');
  check((await status()).startsWith('2/6'), `, and [ should go back two hops: ${await status()}`);
  check((await settledUrl(page)).endsWith('#/nodeport-loadbalancer/2/2'), `hash should name hop 2: ${(await settledUrl(page))}`);
  // At the end of a step, . opens the next step at its first hop…
  await page.locator('body').press('End');
  await page.keyboard.press('.');
  check(await currentStep(page) === 3 && (await status()).startsWith('1/'), `. at the end: step ${await currentStep(page)}, ${await status()}`);
  // …and , goes back to the end of the previous one.
  await page.keyboard.press(',');
  check(await currentStep(page) === 2 && (await status()).startsWith('6/6'), `, at hop 1: step ${await currentStep(page)}, ${await status()}`);
  // While playing, . stops and shows the hop in flight at its end.
  await page.getByRole('button', { name: 'Next step' }).click();
  await page.waitForFunction(() => Number(document.querySelector('.kh').dataset.progress) > 0.2);
  await page.keyboard.press('.');
  check(await playing(page) === 'false', '. did not pause');
  check(Number(await page.getAttribute('.kh', 'data-progress')) === 1, `. mid-hop should show hop 1 at its end: ${await page.getAttribute('.kh', 'data-progress')}`);
  await page.close();
});

await test('keyboard: Space, Home and End stay with focused elements; shortcuts stay out of fields', async () => {
  const { page } = await open('#/nodeport-loadbalancer/2/2', { viewport: { width: 1600, height: 480 } });
  // Space on a focused summary opens its details and does not play.
  const summary = page.locator('.kh-rules summary');
  await summary.focus();
  await page.keyboard.press('Space');
  check(await page.locator('.kh-rules').evaluate((d) => d.open), 'Space on the summary did not open it');
  check(await playing(page) === 'false', 'Space on the summary started playback');
  await page.keyboard.press('Space');
  check(!(await page.locator('.kh-rules').evaluate((d) => d.open)), 'Space on the summary did not close it again');
  // Home and End in the focused, scrollable rules list scroll it; the step stays.
  const list = page.locator('.kh-save-main');
  await list.focus();
  check(await list.evaluate((e) => e.scrollHeight > e.clientHeight + 50), 'the rules list should scroll at this size');
  // (Keyboard scrolling may be smooth: wait for it.)
  const scrolled = (cond, msg) => list.evaluate((e, c) => new Promise((ok) => {
    const t0 = performance.now();
    const poll = () => (c === 'end' ? e.scrollTop > 0 : e.scrollTop === 0) || performance.now() - t0 > 2000 ? ok() : requestAnimationFrame(poll);
    poll();
  }), cond).then(async () => check(cond === 'end' ? await list.evaluate((e) => e.scrollTop) > 0 : await list.evaluate((e) => e.scrollTop) === 0, msg));
  await page.keyboard.press('End');
  await scrolled('end', 'End did not scroll the rules list');
  await page.keyboard.press('Home');
  await scrolled('top', 'Home did not scroll the rules list back to its top');
  check(await currentStep(page) === 2 && (await page.getAttribute('.kh-status', 'data-hop')).startsWith('2/6'), 'Home/End in the list moved the player');
  await page.keyboard.press('Space');
  check(await playing(page) === 'false', 'Space in the rules list started playback');
  // Arrows and hop keys still work from there.
  await page.keyboard.press('.');
  check((await page.getAttribute('.kh-status', 'data-hop')).startsWith('3/6'), '. did not work with the list focused');
  // In the speed select, keys are the select's own…
  const speed = page.getByRole('combobox', { name: 'Speed' });
  await speed.focus();
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('.');
  check(await currentStep(page) === 2 && (await page.getAttribute('.kh-status', 'data-hop')).startsWith('3/6'), 'keys in the select moved the player');
  // …except a clicker's Page keys, which still step.
  const before = await speed.inputValue();
  await page.keyboard.press('PageDown');
  check(await currentStep(page) === 3 && await speed.inputValue() === before, `PageDown in the select: step ${await currentStep(page)}, speed ${await speed.inputValue()}`);
  await page.close();
});

await test('speed: a select named "Speed" scales how fast hops play', async () => {
  const { page, errors } = await open();
  const speed = page.getByRole('combobox', { name: 'Speed' });
  check(await speed.count() === 1, 'no control named "Speed"');
  const labels = (await speed.locator('option').allTextContents()).map((t) => t.trim());
  check(labels.join(' ') === '0.5× 1× 1.5× 2×', `speed options: ${labels.join(' ')}`);
  check(await speed.inputValue() === '1', 'should start at 1×');
  // Progress made in the same wall time, at 0.5× and at 2×.
  const rate = async (label) => {
    await speed.selectOption({ label });
    await page.getByRole('button', { name: 'Step 2 of 5', exact: false }).click();
    const t0 = Date.now();
    await page.waitForTimeout(900);
    const p = Number(await page.getAttribute('.kh', 'data-progress'));
    return p / ((Date.now() - t0) / 1000);
  };
  const slow = await rate('0.5×');
  const fast = await rate('2×');
  check(slow > 0 && fast / slow > 2.5, `2× should run about 4 times as fast as 0.5×: ${slow.toFixed(2)} vs ${fast.toFixed(2)} hops/s`);
  check(await speed.inputValue() === '3', 'the select does not show 2×');
  check(errors.length === 0, `console errors: ${errors.join(' | ')}`);
  await page.close();
});

await test('reduced motion: a step opens in its end state, without a moving packet', async () => {
  const { page } = await open('#/nodeport-loadbalancer/2', { reducedMotion: true });
  check(await page.getAttribute('.kh', 'data-playing') === 'false', 'should not animate');
  check((await page.getAttribute('.kh-status', 'data-hop')).startsWith('6/6'), 'should show the last hop');
  await page.close();
});

await test('step 2 shows the packet before and after DNAT and SNAT', async () => {
  const { page } = await open('#/nodeport-loadbalancer/2/2');
  const hop = await page.textContent('.kh-hop');
  for (const t of ['10.0.0.12:31000', '10.244.3.9:8080', 'DNAT', 'SNAT', '198.51.100.23:51000']) check(hop.includes(t), `hop lacks ${t}`);
  check(await page.locator('.kh-rule.hit').count() > 0, 'no rule highlighted on Node-2');
  await page.close();
});

await test('a paused hop stays in the link: #/…/4/3 reloads at hop 3', async () => {
  const { page, errors } = await open('#/nodeport-loadbalancer/4/3');
  const at3 = async (when) => {
    check(await currentStep(page) === 4, `${when}: not on step 4`);
    check((await page.getAttribute('.kh-status', 'data-hop')).startsWith('3/'), `${when}: status ${await page.textContent('.kh-status')}`);
    check(await page.getAttribute('.kh-hopbtn[aria-current=true]', 'aria-label').then((l) => l.startsWith('Show hop 3')), `${when}: hop 3 not current`);
    check((await settledUrl(page)).endsWith('#/nodeport-loadbalancer/4/3'), `${when}: hash ${(await settledUrl(page))}`);
  };
  await at3('opened');
  await page.reload();
  await page.waitForSelector('.kh[data-step] .kh-node-card');
  await at3('reloaded');
  // Choosing a hop writes it; the end is /end; playing names only the step.
  await page.getByRole('button', { name: /^Show hop 1[:( ]/ }).click();
  check((await settledUrl(page)).endsWith('#/nodeport-loadbalancer/4/1'), `after hop 1: ${(await settledUrl(page))}`);
  // End on the focused hop button is the button's; from the page it is ours.
  await page.keyboard.press('End');
  check((await settledUrl(page)).endsWith('#/nodeport-loadbalancer/4/1'), `End on a focused button moved the player: ${(await settledUrl(page))}`);
  await page.evaluate(() => document.activeElement.blur());
  await page.keyboard.press('End');
  check((await settledUrl(page)).endsWith('#/nodeport-loadbalancer/4/end'), `at the end: ${(await settledUrl(page))}`);
  await page.getByRole('button', { name: 'Previous step' }).click();
  check((await settledUrl(page)).endsWith('#/nodeport-loadbalancer/3'), `playing: ${(await settledUrl(page))}`);
  // With a seed, the seed stays last.
  await page.goto(`${origin}/#/nodeport-loadbalancer/2/4?seed=42`);
  await page.reload();
  await page.waitForSelector('.kh[data-step] .kh-node-card');
  check((await settledUrl(page)).endsWith('#/nodeport-loadbalancer/2/4?seed=42') && (await page.getAttribute('.kh-status', 'data-hop')).startsWith('4/6'), `seeded: ${(await settledUrl(page))}`);
  // Editing the hash by hand opens the new position and is not overwritten.
  await page.evaluate(() => { location.hash = '#/nodeport-loadbalancer/5/2'; });
  await page.waitForFunction(() => document.querySelector('.kh').dataset.step === '5');
  check((await page.getAttribute('.kh-status', 'data-hop')).startsWith('2/') && (await settledUrl(page)).endsWith('#/nodeport-loadbalancer/5/2'), `edited: ${(await settledUrl(page))}`);
  check(errors.length === 0, `console errors: ${errors.join(' | ')}`);
  await page.close();
});

await test('a hop past the end of a step shows its end and says so', async () => {
  const { page, errors } = await open('#/nodeport-loadbalancer/2/99');
  const notice = await page.textContent('.kh-notice');
  check(notice.includes('Hop 99 does not exist; step 2 has 6 hops. Showing its end.'), `notice: ${notice}`);
  check(await currentStep(page) === 2 && (await page.getAttribute('.kh-status', 'data-hop')).startsWith('6/6'), 'should show the end of step 2');
  check((await settledUrl(page)).endsWith('#/nodeport-loadbalancer/2/end'), `hash: ${(await settledUrl(page))}`);
  check(errors.length === 0, `console errors: ${errors.join(' | ')}`);
  await page.close();
});

await test('hops are named by short labels; what-if hops are marked in the list and in their names', async () => {
  const { page, errors } = await open('#/nodeport-loadbalancer/2/3');
  // Canvas Pod boxes carry the Pod's own name, as kubectl prints it (a
  // chip in the compact picture drops the word "Pod"); the title says it too.
  const podLabels = await page.$$eval('.kh-pod', (gs) => gs.map((g) => g.querySelector('text')?.textContent.trim() ?? ''));
  const named = (name) => podLabels.some((l) => l === `Pod ${name}` || l === name);
  check(named('web-6b8f9c7d5-x2klp') && named('web-6b8f9c7d5-q7rtm'), `pod labels: ${podLabels.join(' | ')}`);
  check((await page.locator('.kh-pod title').allTextContents()).some((t) => /^Pod web-[0-9a-z]+-q7rtm$/.test(t)), 'full Pod name missing from the title');
  // The hop heading: "Hop 3 of 6:" then the route, with no leading separator.
  const head = (await page.textContent('.kh-hop-head')).replace(/\s+/g, ' ').trim();
  check(head.includes('Hop 3 of 6:') && head.includes('Node-3') && head.includes('Pod web-6b8f9c7d5-q7rtm'), `heading: ${head}`);
  check(!/ · /.test(head), `heading still uses a separator: ${head}`);
  const route = page.locator('.kh-hop-route');
  check(!(await route.textContent()).trim().startsWith('·'), 'route starts with a separator');
  // The hop list shows the route with short labels too.
  const item3 = page.locator('.kh-hopbtn').nth(2);
  check((await item3.textContent()).includes('Node-3 → Pod web-6b8f9c7d5-q7rtm'), `hop list: ${await item3.textContent()}`);
  await page.close();
  // Step 4 has what-if hops (ipMode VIP): chip in the list, and said in the name.
  const p4 = await open('#/nodeport-loadbalancer/4/end');
  const whatIf = p4.page.locator('.kh-hopbtn.whatif');
  check(await whatIf.count() >= 1, 'no what-if hop in step 4');
  for (const b of await whatIf.all()) {
    check((await b.textContent()).includes('WHAT IF'), `what-if hop without its chip: ${await b.textContent()}`);
    check(/^Show hop \d+ \(what if: ipMode VIP\): /.test(await b.getAttribute('aria-label')), `name: ${await b.getAttribute('aria-label')}`);
  }
  for (const b of await p4.page.locator('.kh-hopbtn:not(.whatif)').all()) {
    check(!(await b.textContent()).includes('WHAT IF') && /^Show hop \d+: /.test(await b.getAttribute('aria-label')), `plain hop marked: ${await b.getAttribute('aria-label')}`);
  }
  await whatIf.first().click();
  check((await p4.page.textContent('.kh-hop-head')).includes('what if: ipMode VIP'), 'the heading of a what-if hop does not say so');
  check(errors.length === 0 && p4.errors.length === 0, `console errors: ${[...errors, ...p4.errors].join(' | ')}`);
  await p4.page.close();
});

await test('matched rules name their table (nat, filter) in the hop panel and the rules panel', async () => {
  const { page, errors } = await open('#/nodeport-loadbalancer/2/2');
  await page.locator('.kh-rules summary').click();
  const items = page.locator('.kh-rules li');
  check(await items.count() > 0, 'no matched rules listed');
  for (const li of await items.all()) {
    const tag = (await li.locator('.kh-table').textContent()).trim();
    check(tag === 'nat' || tag === 'filter', `rule without a table: ${await li.textContent()}`);
  }
  const tables = await page.locator('.kh-rules .kh-table').allTextContents();
  check(tables.includes('nat') && tables.includes('filter'), `hop 2 should match rules in both tables: ${tables.join(' ')}`);
  await page.locator('.kh-save-shared summary').click();
  const shared = page.locator('.kh-save-shared .kh-save-line');
  check(await shared.count() > 0, 'no shared rules');
  for (const li of await shared.all()) {
    check(/^(nat|filter)$/.test((await li.locator('.kh-table').textContent()).trim()), `shared rule without a table: ${await li.textContent()}`);
  }
  check(errors.length === 0, `console errors: ${errors.join(' | ')}`);
  await page.close();
});

await test('the legend draws each kind with the canvas\'s dash pattern; control plane is amber', async () => {
  const { page } = await open('#/nodeport-loadbalancer/4/end');
  const dash = (sel) => page.locator(sel).first().evaluate((e) => getComputedStyle(e).strokeDasharray);
  const patterns = new Set();
  for (const k of ['dns', 'request', 'reply', 'control', 'dropped']) {
    const d = await dash(`.kh-legend .kh-trail.kh-${k}`);
    patterns.add(d);
    // The canvas trail of the same kind, where this step has one.
    if (await page.locator(`.kh-trails .kh-trail.kh-${k}:not(.whatif)`).count()) {
      check(await dash(`.kh-trails .kh-trail.kh-${k}:not(.whatif)`) === d, `${k}: legend ${d} differs from the canvas`);
    }
  }
  check(patterns.size === 5, `kinds share a pattern: ${[...patterns].join(' / ')}`);
  const wi = await dash('.kh-legend .kh-trail.whatif');
  check(wi !== 'none' && wi === await dash('.kh-trails .kh-trail.whatif'), `what-if legend ${wi} differs from the canvas`);
  // Amber: red well above blue, green between (not brown: bright enough).
  const rgb = (await page.locator('.kh-legend .kh-trail.kh-control').evaluate((e) => getComputedStyle(e).stroke)).match(/\d+/g).map(Number);
  check(rgb[0] > 170 && rgb[1] > 110 && rgb[2] < 40, `control-plane line is not amber: rgb(${rgb})`);
  await page.close();
});

await test('layout: narrow, the legend sits under the canvas and the narration follows; wide, the narration sits beside the canvas', async () => {
  const box = (page, sel) => page.locator(sel).first().boundingBox();
  const narrow = await open('#/nodeport-loadbalancer/2/end', { viewport: { width: 720, height: 1400 } });
  // The stage ends with the controls, the read and export tools, the legend and the settings.
  const [controls, narr, legend, hop, pic] = await Promise.all(['.kh-stage', '.kh-narration', '.kh-legend', '.kh-side', '.kh-canvas'].map((s) => box(narrow.page, s)));
  check(narr.y > controls.y + controls.height && narr.y - (controls.y + controls.height) < 40, `720: narration at ${narr.y}, controls end at ${controls.y + controls.height}`);
  check(legend.y > pic.y + pic.height && legend.y + legend.height <= controls.y + controls.height, `720: the legend (${legend.y}) is not in the stage under the canvas (ends ${pic.y + pic.height})`);
  check(narr.y < hop.y, `720: narration (${narr.y}) should come before the hop panel (${hop.y})`);
  const width = await narrow.page.evaluate(() => document.documentElement.scrollWidth);
  check(width <= 720, `720: the page scrolls sideways (${width}px)`);
  await narrow.page.close();
  const wide = await open('#/nodeport-loadbalancer/2/end', { viewport: { width: 1600, height: 1000 } });
  const [canvas, n2, h2] = await Promise.all(['.kh-canvas', '.kh-narration', '.kh-side'].map((s) => box(wide.page, s)));
  check(n2.x > canvas.x + canvas.width && Math.abs(n2.y - canvas.y) < 4, `1600: narration not beside the canvas: ${JSON.stringify(n2)}`);
  check(h2.y - (n2.y + n2.height) <= 16, `1600: gap under the narration: ${h2.y - (n2.y + n2.height)}px`);
  await wide.page.close();
});

// Issue 18: the first screen of every scenario holds the canvas's
// controls. Opening a step plays it, so the button may read Pause.
const FIRST_LINKS = ['#/nodeport-loadbalancer/1', '#/service-types/1', '#/local-lab/1'];
await test('first screen: Play is in view without scrolling at 720×900 and 1920×1080, on each scenario\'s first link', async () => {
  const problems = [];
  for (const [w, h] of [[720, 900], [1920, 1080]]) {
    for (const link of FIRST_LINKS) {
      const { page } = await open(link, { viewport: { width: w, height: h } });
      const play = page.getByRole('button', { name: /^(Play|Pause)$/ });
      const b = await play.boundingBox();
      // In view, and what is drawn at its middle is the button itself.
      const onTop = await play.evaluate((el) => {
        const r = el.getBoundingClientRect();
        const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
        return !!hit && el.contains(hit);
      });
      const scrolled = await page.evaluate(() => window.scrollY);
      if (!b || b.y < 0 || b.y + b.height > h || !onTop || scrolled !== 0) {
        problems.push(`${link} at ${w}×${h}: Play at y ${b && Math.round(b.y)}–${b && Math.round(b.y + b.height)}${onTop ? '' : ', covered'}${scrolled ? `, scrolled ${scrolled}` : ''}`);
      }
      await page.close();
    }
  }
  check(problems.length === 0, problems.join('\n'));
});

await test('step indicator: one row for the lab\'s ten steps, each a button named with its title, reachable by Tab', async () => {
  for (const [w, h] of [[720, 900], [1920, 1080]]) {
    const { page } = await open('#/local-lab/1', { viewport: { width: w, height: h } });
    const nav = page.getByRole('navigation', { name: 'Steps' });
    const box = await nav.boundingBox();
    check(box.height < 56, `${w}px: the step indicator is ${Math.round(box.height)}px tall`);
    const steps = nav.getByRole('button');
    check(await steps.count() === 10, `${w}px: ${await steps.count()} step buttons`);
    await nav.getByRole('button').first().focus();
    for (let i = 0; i < 10; i++) {
      const b = steps.nth(i);
      const title = (await b.locator('.kh-step-title').textContent()).trim();
      const name = `Step ${i + 1} of 10: ${title}`;
      check(title.length > 3 && await nav.getByRole('button', { name, exact: true }).count() === 1, `${w}px: no step button named "${name}"`);
      check(await b.evaluate((el) => el === document.activeElement), `${w}px: Tab did not reach step ${i + 1}`);
      const r = await b.boundingBox();
      check(r && r.x >= 0 && r.x + r.width <= w, `${w}px: step ${i + 1} is off screen: ${JSON.stringify(r)}`);
      await page.keyboard.press('Tab');
    }
    // Enter on a focused step opens it.
    await steps.nth(6).focus();
    await page.keyboard.press('Enter');
    check(await currentStep(page) === 7, `${w}px: Enter on step 7 opened step ${await currentStep(page)}`);
    check(await steps.nth(6).getAttribute('aria-current') === 'step', `${w}px: step 7 not marked current`);
    await page.close();
  }
});

await test('panel text is in rem: the projector rule (1700 px and up) scales it', async () => {
  const sels = ['.kh-hopcap', '.kh-hopkind', '.kh-chip', '.kh-tag', '.kh-rules ol', '.kh-save-main', '.kh-ct-list', '.kh-code'];
  const sizes = async (w) => {
    const { page } = await open('#/nodeport-loadbalancer/2/2', { viewport: { width: w, height: 1000 } });
    const out = {};
    for (const s of sels) out[s] = await page.locator(s).first().evaluate((e) => parseFloat(getComputedStyle(e).fontSize));
    await page.close();
    return out;
  };
  const [a, b] = [await sizes(1600), await sizes(1920)];
  for (const s of sels) check(Math.abs(b[s] / a[s] - 19 / 16) < 0.02, `${s}: ${a[s]}px at 1600, ${b[s]}px at 1920`);
});

await test('a bad link opens the page anyway and says why', async () => {
  const { page, errors } = await open('#/no-such-thing/99');
  const notice = await page.textContent('.kh-notice');
  check(notice.includes('no-such-thing') && notice.includes('does not exist'), `notice: ${notice}`);
  check(await currentStep(page) === 1, 'should fall back to step 1');
  check(errors.length === 0, `console errors: ${errors.join(' | ')}`);
  await page.close();
});

await test('clicking quickly through every control never breaks the page', async () => {
  const { page, errors } = await open();
  const names = ['Next step', 'Play', 'Previous step', 'Restart', 'Next step', 'Next step', 'Pause', 'Next step', 'Next step', 'Next step'];
  for (const n of names) {
    const b = page.getByRole('button', { name: n, exact: true });
    if (await b.count() && await b.isEnabled()) await b.click();
  }
  for (let i = 0; i < 12; i++) await page.locator('.kh-hopbtn').nth(i % 3).click().catch(() => {});
  check((await page.textContent('.kh-canvas svg')).includes('Node-3'), 'canvas gone');
  check(errors.length === 0, `console errors: ${errors.join(' | ')}`);
  await page.close();
});

const rulesHeading = (page) => page.textContent('[data-testid=rules] h2');
const ctNode = (page, name) => page.textContent(`[data-testid=conntrack] [data-node="${name}"]`);
const pick = (page) => page.getByRole('switch', { name: 'Random pick (seeded)' });
// The settings disclosure under the canvas, opened as a reader would (its
// controls are out of the accessibility tree while it is folded).
async function openSettings(page) {
  const d = page.locator('details.kh-settings');
  if (!(await d.evaluate((e) => e.open))) await d.locator('summary').click();
  // The page's keys (End, '.') stay with a focused control: hand them back.
  await page.evaluate(() => document.activeElement?.blur());
}

await test('the rules panel shows Node-2\'s iptables-save lines and marks what hop 2 matched', async () => {
  const { page, errors } = await open('#/nodeport-loadbalancer/2/2');
  check((await rulesHeading(page)).includes('Rules on Node-2'), `heading: ${await rulesHeading(page)}`);
  const text = await page.textContent('.kh-save-main');
  check(text.includes('-A KUBE-NODEPORTS') && text.includes('--dport 31000'), `no KUBE-NODEPORTS line:\n${text}`);
  const hits = page.locator('.kh-save-main .kh-save-line.hit');
  check(await hits.count() >= 1, 'no matched line highlighted');
  const first = hits.first();
  check((await first.textContent()).includes('▶'), 'matched line lacks the ▶ marker');
  check(Number(await first.evaluate((e) => getComputedStyle(e).fontWeight)) >= 700, 'matched line is not bold');
  check((await first.textContent()).includes('matched by this hop'), 'matched line has no text for screen readers');
  check((await hits.allTextContents()).some((t) => t.includes('-A KUBE-NODEPORTS')), 'the KUBE-NODEPORTS rule is not marked as matched');
  // Shared chains the walk passed through are listed too.
  check((await page.textContent('.kh-save-shared')).includes('-A PREROUTING'), 'PREROUTING not listed as matched');
  // The selector: real buttons with aria-pressed.
  const b2 = page.getByRole('button', { name: 'Node-2', exact: true });
  const b3 = page.getByRole('button', { name: 'Node-3', exact: true });
  check(await b2.getAttribute('aria-pressed') === 'true', 'Node-2 not pressed');
  await b3.click();
  check((await rulesHeading(page)).includes('Rules on Node-3'), 'picking Node-3 did not switch the panel');
  check(await b3.getAttribute('aria-pressed') === 'true' && await b2.getAttribute('aria-pressed') === 'false', 'aria-pressed did not follow');
  check(await page.locator('.kh-save-main .kh-save-line.hit').count() === 0, 'Node-3 should have no matched line on hop 2');
  await page.getByRole('button', { name: 'Follow the hop' }).click();
  check((await rulesHeading(page)).includes('Rules on Node-2'), 'Follow the hop did not return to Node-2');
  // Long lines stay inside the panel.
  const over = await page.locator('.kh-save-main').evaluate((e) => e.scrollWidth - e.clientWidth);
  check(over <= 1, `rules overflow sideways by ${over}px`);
  check(errors.length === 0, `console errors: ${errors.join(' | ')}`);
  await page.close();
});

await test('the rules panel follows a control-plane hop to the node it updates and marks added lines', async () => {
  const { page } = await open('#/nodeport-loadbalancer/1/3');
  check((await rulesHeading(page)).includes('Rules on Node-2'), `heading: ${await rulesHeading(page)}`);
  const added = await page.locator('.kh-save-main .kh-save-line.added').allTextContents();
  check(added.some((t) => t.includes('-A KUBE-NODEPORTS')), `KUBE-NODEPORTS not marked as added: ${added.join(' | ')}`);
  await page.close();
});

await test('conntrack: no entry on Node-2 before step 2, a dport=31000 entry after it', async () => {
  const { page, errors } = await open('#/nodeport-loadbalancer/1/end');
  check((await ctNode(page, 'Node-2')).includes('conntrack -L: no entries on Node-2'), `step 1: ${await ctNode(page, 'Node-2')}`);
  await page.close();
  const p2 = await open('#/nodeport-loadbalancer/2/1');
  check((await ctNode(p2.page, 'Node-2')).includes('no entries on Node-2'), 'an entry exists before Node-2 saw the packet');
  await p2.page.getByRole('button', { name: /^Show hop 2:/ }).click();
  const created = p2.page.locator('[data-node="Node-2"] .kh-ct-entry');
  check(await created.count() === 1, 'hop 2 should create one entry on Node-2');
  check((await created.textContent()).includes('dport=31000') && (await created.textContent()).includes('new at hop 2'), `entry: ${await created.textContent()}`);
  await p2.page.close();
  const p3 = await open('#/nodeport-loadbalancer/2/end');
  const n2 = await ctNode(p3.page, 'Node-2');
  check(n2.includes('dport=31000') && n2.includes('ESTABLISHED'), `step 2 end, Node-2:\n${n2}`);
  check(n2.includes('used by this hop'), 'the reply\'s un-NAT should mark the entry it used');
  check((await ctNode(p3.page, 'Node-1')).includes('no entries on Node-1'), 'Node-1 should have no entry');
  check(errors.length === 0 && p3.errors.length === 0, `console errors: ${[...errors, ...p3.errors].join(' | ')}`);
  await p3.page.close();
});

await test('random pick: the switch rebuilds the walkthrough with a seed, and off restores the fixed picks', async () => {
  const { page, errors } = await open('#/nodeport-loadbalancer/2/end');
  await openSettings(page);
  const sw = pick(page);
  check(await sw.count() === 1, 'no switch named "Random pick (seeded)"');
  check(!(await sw.isChecked()), 'random pick should start off');
  const fixed = await page.textContent('.kh-hoplist');
  check(fixed.includes('DNAT to 10.244.3.9:8080'), `fixed pick changed:\n${fixed}`);
  await sw.check();
  await settled(page);
  check(await sw.isChecked(), 'switch did not turn on');
  await page.waitForFunction(() => /\?seed=\d+$/.test(location.hash));
  const seed1 = (await page.textContent('[data-testid=seed]')).replace(/\D/g, '');
  check((await settledUrl(page)).endsWith(`#/nodeport-loadbalancer/2?seed=${seed1}`), `hash lacks the seed: ${(await settledUrl(page))}`);
  check(await currentStep(page) === 2, 'the step was not kept');
  check(await page.getAttribute('.kh', 'data-playing') === 'true', 'the step did not play again');
  await choose(page, page.getByRole('button', { name: 'New seed' }));
  const seed2 = (await page.textContent('[data-testid=seed]')).replace(/\D/g, '');
  check(seed2 !== seed1 && (await settledUrl(page)).endsWith(`?seed=${seed2}`), `New seed: ${seed1} → ${seed2}, ${(await settledUrl(page))}`);
  check((await page.textContent('.kh-canvas svg')).includes('Node-3'), 'canvas gone after a new seed');
  await sw.uncheck();
  await settled(page);
  await page.waitForFunction(() => !location.hash.includes('?'));
  check(await page.textContent('.kh-hoplist') === fixed, 'turning it off did not restore the fixed picks');
  // Playing, the link names the step; if the replay already ended, its end.
  check(/#\/nodeport-loadbalancer\/2(\/end)?$/.test((await settledUrl(page))), `hash: ${(await settledUrl(page))}`);
  check(errors.length === 0, `console errors: ${errors.join(' | ')}`);
  await page.close();
});

await test('a seed in the link picks differently and still works', async () => {
  const { page, errors } = await open('#/nodeport-loadbalancer/2/end?seed=42');
  await openSettings(page);
  check(await pick(page).isChecked(), 'switch should be on for ?seed=42');
  check((await page.textContent('[data-testid=seed]')).includes('42'), 'seed 42 not shown');
  check((await page.textContent('.kh-hoplist')).includes('DNAT to 10.244.1.5:8080'), 'seed 42 should pick the Pod on Node-1 in step 2');
  check((await page.getAttribute('.kh-status', 'data-hop')).startsWith('6/6'), 'the step should open at its end');
  check(await page.locator('.kh-notice').count() === 0, 'a good seed should not leave a notice');
  check((await settledUrl(page)).endsWith('#/nodeport-loadbalancer/2/end?seed=42'), `hash: ${(await settledUrl(page))}`);
  // Playing on through the steps works with the seed too.
  await page.getByRole('button', { name: 'Next step' }).click();
  check(await currentStep(page) === 3 && (await settledUrl(page)).endsWith('#/nodeport-loadbalancer/3?seed=42'), `next: ${(await settledUrl(page))}`);
  check(errors.length === 0, `console errors: ${errors.join(' | ')}`);
  await page.close();
});

await test('a bad seed in the link gives a notice and the fixed picks', async () => {
  const { page, errors } = await open('#/nodeport-loadbalancer/3?seed=4x2');
  const notice = await page.textContent('.kh-notice');
  check(notice.includes('seed') && notice.includes('4x2'), `notice: ${notice}`);
  await openSettings(page);
  check(!(await pick(page).isChecked()), 'switch should be off after a bad seed');
  check(await currentStep(page) === 3, 'the step should still open');
  check(!(await settledUrl(page)).includes('seed'), `bad seed kept in the hash: ${(await settledUrl(page))}`);
  check(errors.length === 0, `console errors: ${errors.join(' | ')}`);
  await page.close();
});

await test('toggling random pick and nodes quickly never breaks the page', async () => {
  const { page, errors } = await open('#/nodeport-loadbalancer/4?seed=18446744073709551615');
  await openSettings(page);
  for (let i = 0; i < 6; i++) {
    await pick(page).click();
    if (await page.getByRole('button', { name: 'New seed' }).count()) await page.getByRole('button', { name: 'New seed' }).click();
    await page.getByRole('button', { name: `Node-${(i % 3) + 1}`, exact: true }).click();
    await page.getByRole('button', { name: i % 2 ? 'Next step' : 'Previous step' }).click();
  }
  await page.evaluate(() => { location.hash = '#/nodeport-loadbalancer/5/end?seed=7&seed=&x'; });
  await page.waitForTimeout(100);
  check((await page.textContent('.kh-canvas svg')).includes('Node-3'), 'canvas gone');
  check(errors.length === 0, `console errors: ${errors.join(' | ')}`);
  await page.close();
});

// Canvas labels that overlap, from their boxes on screen: every pair of
// visible <text> elements (the moving token aside) whose boxes intersect
// by more than a sliver.
async function overlappingLabels(page) {
  return page.evaluate(() => {
    const boxes = [...document.querySelectorAll('.kh-canvas svg text')]
      .filter((t) => !t.closest('.kh-token') && t.textContent.trim() && t.getClientRects().length)
      .map((t) => ({ text: t.textContent.trim(), r: t.getBoundingClientRect() }))
      .filter((b) => b.r.width > 0 && b.r.height > 0);
    const bad = [];
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i].r, b = boxes[j].r;
        const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (w > 1 && h > 1) bad.push(`"${boxes[i].text}" / "${boxes[j].text}"`);
      }
    }
    return bad;
  });
}

// Every step at its end, at 720 and 1920 px (and 1600): no two canvas
// labels overlap. The screenshots are kept for people to look at.
await test('no two canvas labels overlap, on every step at 720, 1600 and 1920 px', async () => {
  // The detector itself: a copy of a label laid over the original is found.
  {
    const { page } = await open('#/nodeport-loadbalancer/1/end');
    await page.evaluate(() => {
      const t = document.querySelector('.kh-canvas svg text.kh-node-name');
      t.parentNode.appendChild(t.cloneNode(true));
    });
    check((await overlappingLabels(page)).length > 0, 'the overlap check missed a label drawn twice');
    await page.close();
  }
  const problems = [];
  for (const [w, h] of [[1600, 1000], [720, 1400], [1920, 1080]]) {
    for (let s = 1; s <= 5; s++) {
      const { page } = await open(`#/nodeport-loadbalancer/${s}/end`, { viewport: { width: w, height: h } });
      const bad = await overlappingLabels(page);
      if (bad.length) problems.push(`step ${s} at ${w}px: ${bad.join(', ')}`);
      await page.screenshot({ path: join(out, `step${s}-${w}.png`), fullPage: w === 720 });
      await page.close();
    }
  }
  check(problems.length === 0, problems.join('\n'));
});

// More screenshots for review; not counted as a test.
async function reviewScreenshots() {
  const { page } = await open('#/nodeport-loadbalancer/3/3', { viewport: { width: 1600, height: 1000 } });
  await page.screenshot({ path: join(out, 'step3-pending-1600.png') });
  await page.close();
  // The node tables and the random switch, whole pages.
  for (const [w, h] of [[1600, 1000], [720, 1400], [1920, 1080]]) {
    for (const [name, hash] of [['rules-2-2', '#/nodeport-loadbalancer/2/2'], ['conntrack-2-end', '#/nodeport-loadbalancer/2/end'],
      ['rules-1-3', '#/nodeport-loadbalancer/1/3'], ['seed-42-5-end', '#/nodeport-loadbalancer/5/end?seed=42']]) {
      const { page } = await open(hash, { viewport: { width: w, height: h } });
      await page.screenshot({ path: join(out, `${name}-${w}.png`), fullPage: true });
      await page.close();
    }
  }
}
await reviewScreenshots();

// ---------------------------------------------------------------- the Service types explorer

const TABS = ['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName', 'Headless'];
const svcRow = async (page, name) => (await kubectl(page)).split('\n').find((l) => l.startsWith(`${name} `)) ?? '';

/// Opens a step by a link that plays it once (no hop in the hash), at 2×
/// speed, and waits until it has played to its end.
async function playToEnd(hash) {
  const { page, errors } = await open(hash);
  await page.getByRole('combobox', { name: 'Speed' }).selectOption({ label: '2×' });
  await page.waitForFunction(() => document.querySelector('.kh').dataset.playing === 'false', null, { timeout: 90000 });
  return { page, errors };
}

await test('navigation: one link per scenario, reachable by keyboard, opening each scenario', async () => {
  const { page, errors } = await open();
  const nav = page.getByRole('navigation', { name: 'Scenarios' });
  check(await nav.getByRole('link').count() === 4, 'expected one link per scenario (four)');
  await nav.getByRole('link', { name: 'The five Service types' }).focus();
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => location.hash.startsWith('#/service-types/1'));
  await arrived(page, 'The five Service types');
  check((await page.textContent('h1')) === 'The five Service types', `title: ${await page.textContent('h1')}`);
  check(await nav.getByRole('link', { name: 'The five Service types' }).getAttribute('aria-current') === 'page', 'current scenario not marked');
  check(await page.locator('.kh-node-card').count() === 2, 'the explorer has two nodes');
  await nav.getByRole('link', { name: 'NodePort and LoadBalancer' }).click();
  await page.waitForFunction(() => location.hash.startsWith('#/nodeport-loadbalancer/1'));
  await arrived(page, 'NodePort and LoadBalancer');
  check(await page.locator('.kh-node-card').count() === 3, 'the walkthrough has three nodes');
  check(errors.length === 0, `console errors: ${errors.join(' | ')}`);
  await page.close();
});

await test('explorer: five tabs, two clients, DNS Lookup and Send Request are real controls', async () => {
  const { page } = await open('#/service-types/1');
  const tabs = page.getByRole('tablist', { name: 'Service type' }).getByRole('tab');
  check(await tabs.count() === 5, 'five tabs');
  for (const t of TABS) check(await page.getByRole('tab', { name: t, exact: true }).count() === 1, `no tab ${t}`);
  check(await page.getByRole('tab', { name: 'ClusterIP' }).getAttribute('aria-selected') === 'true', 'ClusterIP selected first');
  for (const name of ['Pod web', 'Laptop']) {
    check(await page.getByRole('button', { name, exact: true }).count() === 1, `no button "${name}"`);
  }
  check(await page.getByRole('button', { name: 'Step 2 of 3: DNS Lookup', exact: true }).count() === 1, 'no button for DNS Lookup');
  check(await page.getByRole('button', { name: 'Step 3 of 3: Send Request', exact: true }).count() === 1, 'no button for Send Request');
  // Arrow keys move between tabs, as in any tab list.
  await page.getByRole('tab', { name: 'ClusterIP' }).focus();
  await page.keyboard.press('ArrowRight');
  await page.waitForFunction(() => location.hash.includes('tab=nodeport'));
  check(await page.getByRole('tab', { name: 'NodePort' }).getAttribute('aria-selected') === 'true', 'ArrowRight did not select NodePort');
  await page.close();
});

await test('explorer: DNS Lookup and Send Request are each one visible control, reached by keyboard', async () => {
  for (const [w, h] of [[720, 900], [1920, 1080]]) {
    const { page } = await open('#/service-types/1', { viewport: { width: w, height: h } });
    for (const [name, step] of [['DNS Lookup', 2], ['Send Request', 3]]) {
      const named = [];
      for (const role of ['button', 'link', 'tab', 'menuitem', 'radio', 'option', 'switch', 'checkbox']) {
        const all = page.getByRole(role, { name });
        for (let i = 0; i < await all.count(); i++) if (await all.nth(i).isVisible()) named.push(all.nth(i));
      }
      check(named.length === 1, `${w}px: ${named.length} visible controls named "${name}"`);
      await named[0].focus();
      await page.keyboard.press('Enter');
      check(await currentStep(page) === step, `${w}px: Enter on "${name}" opened step ${await currentStep(page)}`);
    }
    await page.close();
  }
});

await test('explorer: the canvas stays put when the tab or the client changes', async () => {
  const top = (page) => page.locator('.kh-canvas').evaluate((el) => el.getBoundingClientRect().top + window.scrollY);
  for (const [w, h] of [[720, 900], [1920, 1080]]) {
    const { page } = await open('#/service-types/1', { viewport: { width: w, height: h } });
    const first = await top(page);
    const seen = [];
    for (const client of ['Pod web', 'Laptop']) {
      await choose(page, page.getByRole('button', { name: client, exact: true }));
      for (const t of TABS) {
        await choose(page, page.getByRole('tab', { name: t, exact: true }));
        await page.waitForFunction((v) => location.hash.includes(`tab=${v}`) || (v === 'clusterip' && !location.hash.includes('tab=')), t.toLowerCase());
        seen.push([`${client}/${t}`, await top(page)]);
      }
    }
    const off = seen.filter(([, y]) => Math.abs(y - first) > 1);
    check(off.length === 0, `${w}px: the canvas starts at ${first}px on the first tab, elsewhere at ${off.map(([k, y]) => `${k} ${y}px`).join(', ')}`);
    // What does not apply stays in its place, disabled, and says when it applies.
    await choose(page, page.getByRole('tab', { name: 'ClusterIP', exact: true }));
    const policy = page.getByRole('switch', { name: 'externalTrafficPolicy: Local' });
    check(await policy.isVisible() && await policy.isDisabled(), `${w}px: on ClusterIP the policy switch is not shown disabled`);
    check(await page.getByRole('group', { name: 'Only for NodePort or LoadBalancer' }).count() === 1, `${w}px: the disabled switch does not say when it applies`);
    await choose(page, page.getByRole('tab', { name: 'NodePort', exact: true }));
    check(await policy.isEnabled(), `${w}px: on NodePort the policy switch is disabled`);
    await page.close();
  }
});

await test("explorer: each tab's kubectl get svc line is right", async () => {
  const want = {
    ClusterIP: ['api', /ClusterIP\s+10\.96\.0\.50\s+<none>\s+80\/TCP/],
    NodePort: ['api', /NodePort\s+10\.96\.0\.50\s+<none>\s+80:30080\/TCP/],
    LoadBalancer: ['api', /LoadBalancer\s+10\.96\.0\.50\s+203\.0\.113\.10\s+80:30080\/TCP/],
    ExternalName: ['db', /ExternalName\s+<none>\s+mydb\.example\.com\s+<none>/],
    Headless: ['api', /ClusterIP\s+None\s+<none>\s+80\/TCP/],
  };
  const { page } = await open('#/service-types/1/end');
  for (const t of TABS) {
    await choose(page, page.getByRole('tab', { name: t, exact: true }));
    // End on a focused tab moves to the last tab, as in any tab list: press it elsewhere.
    await page.evaluate(() => document.activeElement.blur());
    await page.keyboard.press('End');
    const row = await svcRow(page, want[t][0]);
    check(want[t][1].test(row), `${t}: kubectl row is "${row}"`);
  }
  // LoadBalancer is <pending> until the cloud answers.
  await page.goto(`${origin}/#/service-types/1/2?tab=loadbalancer`);
  // A link on the same page: applied once the worker has built its state.
  await page.waitForFunction(() => /LoadBalancer/.test(document.querySelector('[role=tab][aria-selected=true]')?.textContent ?? '') && !document.querySelector('.kh[aria-busy]'));
  check((await svcRow(page, 'api')).includes('<pending>'), `not pending early: ${await svcRow(page, 'api')}`);
  await page.close();
});

await test('explorer: every tab × client × action plays to its end with no console error', async () => {
  const cases = [];
  for (const t of TABS) for (const client of ['pod-web', 'laptop']) for (const step of [2, 3]) cases.push([t.toLowerCase(), client, step]);
  const problems = [];
  for (let i = 0; i < cases.length; i += 4) {
    await Promise.all(cases.slice(i, i + 4).map(async ([tab, client, step]) => {
      const { page, errors } = await playToEnd(`#/service-types/${step}?tab=${tab}&client=${client}`);
      const status = await page.getAttribute('.kh-status', 'data-hop');
      const [done, total] = status.split('/').map(Number);
      if (!(total > 0 && done === total)) problems.push(`${tab}/${client}/${step}: ended at "${status}"`);
      if (errors.length) problems.push(`${tab}/${client}/${step}: ${errors.join(' | ')}`);
      await page.close();
    }));
  }
  check(problems.length === 0, problems.join('\n'));
});

await test('explorer: From Outside ends in a dropped hop, and says why', async () => {
  const { page, errors } = await open('#/service-types/1');
  await choose(page, page.getByRole('button', { name: 'Demo: From Outside' }));
  await page.keyboard.press('End');
  check(await currentStep(page) === 3, 'the demo opens Send Request');
  const last = page.locator('.kh-hoplist li').last();
  check((await last.textContent()).includes('DROP'), `last hop is not a drop: ${await last.textContent()}`);
  check((await page.textContent('.kh-hop')).includes('exists only in kube-proxy'), 'the drop reason is not shown');
  check((await settledUrl(page)).includes('demo=from-outside') && (await settledUrl(page)).includes('client=laptop'), `link lacks the demo: ${(await settledUrl(page))}`);
  check(errors.length === 0, `console errors: ${errors.join(' | ')}`);
  await page.close();
});

await test('explorer: Headless answers three A records, and two after a Pod is made not Ready', async () => {
  const answer = async (page) => {
    await page.keyboard.press('End');
    return (await page.textContent('.kh-hoplist')).match(/A 10\.244\.\d+\.\d+/g)?.length ?? 0;
  };
  const { page, errors } = await open('#/service-types/2/end?tab=headless');
  // The final answer hop lists the records once per hop that carries them; count the distinct ones.
  const distinct = async () => new Set((await page.textContent('.kh-hoplist')).match(/A 10\.244\.\d+\.\d+/g)).size;
  await answer(page);
  check(await distinct() === 3, `expected three A records, got ${await distinct()}`);
  await choose(page, page.getByRole('switch', { name: 'Pod api-r8t6w Ready' }));
  await page.waitForFunction(() => location.hash.includes('notready=api-r8t6w'));
  await answer(page);
  check(await distinct() === 2, `expected two A records after a Pod is not Ready, got ${await distinct()}`);
  check((await page.textContent('.kh-canvas svg')).includes('not Ready'), 'the Pod is not marked not Ready on the canvas');
  check(errors.length === 0, `console errors: ${errors.join(' | ')}`);
  await page.close();
});

await test('explorer: a Pod made not Ready loses its rules, marked as removed', async () => {
  const { page } = await open('#/service-types/1/end?notready=api-m3n9q');
  // The rules panel's Node-2 (not the laptop's choice of node, disabled here).
  await page.getByTestId('rules').getByRole('button', { name: 'Node-2', exact: true }).click();
  // The last hop is kube-proxy on Node-2 rewriting its rules.
  const removed = await page.locator('[data-testid=rules] .kh-save-line.removed').count();
  check(removed > 0, 'no removed lines marked on Node-2');
  const gone = await page.locator('[data-testid=rules] .kh-save-line.removed').allTextContents();
  check(gone.some((l) => l.includes('-j DNAT --to-destination 10.244.2.8:8080')), `the Pod's DNAT line is not among the removed: ${gone.join(' | ')}`);
  await page.close();
});

await test('explorer: links open each state, and a link that cannot be understood opens a page with a note', async () => {
  const { page, errors } = await open('#/service-types/3/end?tab=nodeport&client=laptop&local=1&via=node-2');
  check(await page.getByRole('tab', { name: 'NodePort' }).getAttribute('aria-selected') === 'true', 'tab from the link');
  check(await page.getByRole('button', { name: 'Laptop', exact: true }).getAttribute('aria-pressed') === 'true', 'client from the link');
  check(await page.getByRole('switch', { name: 'externalTrafficPolicy: Local' }).isChecked(), 'toggle from the link');
  check((await page.textContent('.kh-narration')).includes('No SNAT'), 'Local policy narration missing');
  await page.goto(`${origin}/#/service-types/9?tab=sideways&notready=api-zzz&colour=red`);
  await page.waitForSelector('.kh-notice');
  const notice = await page.textContent('.kh-notice');
  for (const bit of ['sideways', 'api-zzz', 'colour', 'Step']) check(notice.includes(bit), `notice lacks "${bit}": ${notice}`);
  check(await page.locator('.kh-node-card').count() === 2, 'the page did not open');
  check(errors.length === 0, `console errors: ${errors.join(' | ')}`);
  await page.close();
});

await test('explorer: the manifest marks what changed from the previous tab', async () => {
  const { page } = await open('#/service-types/1/end?tab=nodeport');
  await choose(page, page.getByRole('tab', { name: 'Headless' }));
  await page.evaluate(() => document.activeElement.blur());
  await page.keyboard.press('End');
  const changed = await page.locator('.kh-line.changed').allTextContents();
  check(changed.some((l) => l.includes('clusterIP: None')), `changed lines: ${changed.join(' | ')}`);
  check((await page.textContent('.kh-hoplist')).includes('rejected'), 'the refused update is not shown');
  check((await settledUrl(page)).includes('from=nodeport'), `the link does not say where the tab came from: ${(await settledUrl(page))}`);
  await page.close();
});

await test('explorer: no two canvas labels overlap on any tab, at 720 and 1920 px', async () => {
  const problems = [];
  for (const [w, h] of [[720, 1400], [1920, 1080]]) {
    for (const t of TABS) {
      for (const client of ['pod-web', 'laptop']) {
        const { page } = await open(`#/service-types/3/end?tab=${t.toLowerCase()}&client=${client}`, { viewport: { width: w, height: h } });
        const bad = await overlappingLabels(page);
        if (bad.length) problems.push(`${t}/${client} at ${w}px: ${bad.join(', ')}`);
        await page.screenshot({ path: join(out, `types-${t.toLowerCase()}-${client}-${w}.png`), fullPage: w === 720 });
        await page.close();
      }
    }
  }
  check(problems.length === 0, problems.join('\n'));
});

// Every demo at 720 and 1920 px, for review; not counted as a test.
for (const [w, h] of [[720, 1400], [1920, 1080]]) {
  for (const demo of ['from-pod', 'from-outside', 'nodeport', 'loadbalancer', 'externalname', 'headless']) {
    const { page } = await open('#/service-types/1', { viewport: { width: w, height: h } });
    await page.locator('.kh-demo').filter({ hasText: new RegExp(`^Demo: ${{ 'from-pod': 'From a Pod', 'from-outside': 'From Outside', nodeport: 'NodePort', loadbalancer: 'LoadBalancer', externalname: 'ExternalName', headless: 'Headless' }[demo]}$`) }).click();
    await settled(page);
    await page.evaluate(() => { document.activeElement.blur(); window.scrollTo(0, 0); });
    await page.keyboard.press('End');
    await page.screenshot({ path: join(out, `demo-${demo}-${w}.png`), fullPage: w === 720 });
    await page.close();
  }
}

// ---------------------------------------------------------------- the local lab

await test('lab: every stage plays to its end with no console error, and links open each stage', async () => {
  const problems = [];
  for (let step = 1; step <= 10; step++) {
    const { page, errors } = await playToEnd(`#/local-lab/${step}`);
    if (await currentStep(page) !== step) problems.push(`stage ${step}: the link opened step ${await currentStep(page)}`);
    const status = await page.getAttribute('.kh-status', 'data-hop');
    const [done, total] = status.split('/').map(Number);
    if (!(total > 0 && done === total)) problems.push(`stage ${step}: ended at "${status}"`);
    if (errors.length) problems.push(`stage ${step}: ${errors.join(' | ')}`);
    await page.close();
  }
  check(problems.length === 0, problems.join('\n'));
});

await test('lab: EXTERNAL-IP stays <pending> without a controller and gets a pool address once MetalLB is installed', async () => {
  const { page } = await open('#/local-lab/4/end');
  check((await svcRow(page, 'booking')).includes('<pending>'), `stage 4: ${await svcRow(page, 'booking')}`);
  await page.goto(`${origin}/#/local-lab/5/end`);
  await page.waitForSelector('.kh[data-step] .kh-node-card');
  const row = await svcRow(page, 'booking');
  check(/172\.18\.0\.(5\d|[6-9]\d|100)\s/.test(row), `stage 5: not a pool address: ${row}`);
  await page.close();
});

await test('lab: the evidence outputs change with the stage, and each command can be copied', async () => {
  const evidence = async (page) => page.textContent('[data-testid=evidence]');
  const { page } = await open('#/local-lab/1/end');
  const first = await evidence(page);
  for (const cmd of ['docker ps --filter name=apollo11 --format "{{.Ports}}"', 'kubectl get svc -n apollo-airlines-apps -o wide', 'kubectl get svc -n envoy-gateway-system', 'kubectl get endpoints -n apollo-airlines-apps']) {
    check(first.includes(cmd), `stage 1 lacks the command ${cmd}`);
  }
  check(first.includes('0.0.0.0:30082->30082/tcp'), 'docker ps does not show the mapping');
  check(await page.getByRole('button', { name: /^Copy: docker ps/ }).count() === 1, 'no copy button for docker ps');
  await page.goto(`${origin}/#/local-lab/5/end`);
  await page.waitForSelector('[data-testid=evidence]');
  const later = await evidence(page);
  check(later !== first && /172\.18\.0\.5\d/.test(later), 'the evidence did not change when MetalLB assigned an address');
  await page.close();
});

await test('lab: the ARP exchange is drawn and named', async () => {
  const { page, errors } = await open('#/local-lab/6/end');
  const list = await page.textContent('.kh-hoplist');
  check(list.includes('ARP') && list.includes('who-has 172.18.0.50') && list.includes('is-at'), `hop list: ${list}`);
  check(await page.locator('.kh-trails polyline').count() >= 3, 'the ARP frames are not drawn');
  check((await page.textContent('.kh-hop')).includes('ARP on'), 'the hop panel does not show the ARP frame');
  check(errors.length === 0, `console errors: ${errors.join(' | ')}`);
  await page.close();
});

await test('lab: no two canvas labels overlap at 720 and 1920 px', async () => {
  const problems = [];
  for (const [w, h] of [[720, 1400], [1920, 1080]]) {
    for (let step = 1; step <= 10; step++) {
      const { page } = await open(`#/local-lab/${step}/end`, { viewport: { width: w, height: h } });
      const bad = await overlappingLabels(page);
      if (bad.length) problems.push(`stage ${step} at ${w}px: ${bad.join(', ')}`);
      await page.screenshot({ path: join(out, `lab-${step}-${w}.png`), fullPage: w === 720 });
      await page.close();
    }
  }
  check(problems.length === 0, problems.join('\n'));
});

await test('Pod network: every scenario plays to its end over the VXLAN overlay, each wrapped hop showing its outer header on the token and in the hop panel', async () => {
  const links = ['#/nodeport-loadbalancer/1/0?network=vxlan', '#/service-types/1/0?tab=nodeport&client=laptop&network=vxlan', '#/local-lab/1/0?network=vxlan'];
  const totals = [];
  for (const link of links) {
    const { page, errors } = await open(link);
    await openSettings(page);
    const group = page.getByRole('group', { name: 'Pod network' });
    check(await group.getByRole('button', { name: 'VXLAN (flannel)', exact: true }).getAttribute('aria-pressed') === 'true', `${link}: VXLAN is not the pressed Pod network`);
    check((await page.textContent('.kh-settings')).includes("flannel's default overlay"), `${link}: the choice does not say what VXLAN is`);
    let wrapped = 0;
    const hops = await eachHop(page, 600, async (at) => {
      const outer = page.locator('.kh-hop .kh-outer');
      if (await outer.count() === 0) return;
      wrapped++;
      const caption = await outer.locator('caption').textContent();
      const table = await outer.textContent();
      check(/added by flannel\.1 on .+, removed by flannel\.1 on /.test(caption), `${at}: the outer table does not say where it was wrapped and unwrapped: ${caption}`);
      check(table.includes('8472') && /VNI\s*1/.test(table), `${at}: the outer header lacks UDP 8472 or VNI 1: ${table}`);
      const svg = await page.textContent('.kh-canvas svg');
      check(/VXLAN \d+\.\d+\.\d+\.\d+ → \d+\.\d+\.\d+\.\d+ · VNI 1/.test(svg), `${at}: the token's card does not show the outer header`);
    });
    // At the last step's end: End moves nothing.
    const last = await page.evaluate(() => location.hash);
    await page.keyboard.press('End');
    await page.waitForTimeout(100);
    check(await page.evaluate(() => location.hash) === last, `${link}: stopped before the end, at ${last}`);
    check(wrapped >= 1, `${link}: no hop of ${hops} was wrapped`);
    check(errors.length === 0, `${link}: console errors: ${errors.join(' | ')}`);
    totals.push(`${link.split('?')[0]} ${wrapped} of ${hops}`);
    await page.close();
  }
  console.log(`     wrapped hops seen: ${totals.join('; ')}`);
  // Routed is the default and wraps nothing; the choice goes into the link.
  const { page, errors } = await open('#/service-types/3/0?tab=nodeport&client=laptop');
  for (let i = 0; i < 40; i++) {
    await page.keyboard.press('.');
    check(await page.locator('.kh-hop .kh-outer').count() === 0, 'a hop is wrapped on the routed network');
  }
  await openSettings(page);
  await choose(page, page.getByRole('group', { name: 'Pod network' }).getByRole('button', { name: 'VXLAN (flannel)', exact: true }));
  await page.waitForFunction(() => location.hash.includes('network=vxlan'), null, { timeout: 5000 });
  check(errors.length === 0, `console errors: ${errors.join(' | ')}`);
  await page.close();
});

await test('TCP packet by packet: every scenario plays its connections to their end, each later packet carried by conntrack, the entry\'s TCP states in the panel, and the choice in the link', async () => {
  const links = ['#/nodeport-loadbalancer/2/0?handshake=1', '#/service-types/3/0?tab=nodeport&client=laptop&handshake=1', '#/local-lab/1/0?handshake=1'];
  const totals = [];
  for (const link of links) {
    const { page, errors } = await open(link);
    await openSettings(page);
    const toggle = page.getByRole('switch', { name: 'TCP packet by packet' });
    check(await toggle.isChecked(), `${link}: the switch is off`);
    check((await page.textContent('.kh-settings')).includes('The rules decide the first; conntrack carries the rest.'), `${link}: the switch does not say what it does`);
    const states = new Set();
    let carried = 0, syn = 0;
    const hops = await eachHop(page, 900, async () => {
      const svg = await page.textContent('.kh-canvas svg');
      if (svg.includes('no rule walked:') && svg.includes('conntrack knows this connection')) carried++;
      if (/TCP SYN\b/.test(svg)) syn++;
      const ct = await page.locator('[data-testid=conntrack]').textContent().catch(() => '');
      for (const s of ['SYN_SENT', 'SYN_RECV', 'ESTABLISHED', 'FIN_WAIT', 'CLOSE_WAIT', 'LAST_ACK', 'TIME_WAIT']) if (ct.includes(s)) states.add(s);
      if (ct.includes('[ASSURED]')) states.add('[ASSURED]');
    });
    check(carried >= 3 && syn >= 1, `${link}: ${carried} hops carried by conntrack, ${syn} SYN cards, of ${hops}`);
    for (const s of ['SYN_SENT', 'SYN_RECV', 'ESTABLISHED', 'TIME_WAIT', '[ASSURED]']) check(states.has(s), `${link}: the conntrack panel never showed ${s} (${[...states].join(', ')})`);
    check(errors.length === 0, `${link}: console errors: ${errors.join(' | ')}`);
    totals.push(`${link.split('?')[0]} ${carried} of ${hops} by conntrack, states ${[...states].join(' ')}`);
    await page.close();
  }
  console.log(`     ${totals.join('; ')}`);
  // Off by default; switched on, it goes into the link.
  const { page, errors } = await open('#/nodeport-loadbalancer/2');
  await openSettings(page);
  const toggle = page.getByRole('switch', { name: 'TCP packet by packet' });
  check(!(await toggle.isChecked()), 'the handshake is on by default');
  await toggle.check();
  await page.waitForFunction(() => location.hash.includes('handshake=1'), null, { timeout: 5000 });
  check(errors.length === 0, `console errors: ${errors.join(' | ')}`);
  await page.close();
});

await test('kube-proxy mode: every scenario plays to its end in nftables mode, with nft lines in the rules panel and the mode in the link', async () => {
  for (const link of ['#/nodeport-loadbalancer/1?mode=nftables', '#/service-types/1?tab=nodeport&client=laptop&mode=nftables', '#/local-lab/1?mode=nftables']) {
    const { page, errors } = await open(link);
    await openSettings(page);
    const group = page.getByRole('group', { name: 'kube-proxy mode' });
    check(await group.getByRole('button', { name: 'nftables', exact: true }).getAttribute('aria-pressed') === 'true', `${link}: nftables is not the pressed mode`);
    check((await page.textContent('.kh-settings')).includes('IPVS mode is not shown'), `${link}: the mode choice does not say why IPVS is missing`);
    check((await page.textContent('.kh-canvas svg')).includes('nftables rules, by kube-proxy'), `${link}: the canvas panel does not name the mode`);
    let nftLines = 0;
    // Every step, to its end.
    for (let i = 0; i < 12; i++) {
      await page.keyboard.press('End');
      const rules = await page.textContent('[data-testid=rules]');
      check(!rules.includes('-A KUBE-'), `${link} step ${await currentStep(page)}: iptables lines in nftables mode:\n${rules}`);
      if (rules.includes('add rule ip kube-proxy') || rules.includes('add element ip kube-proxy')) nftLines++;
      const before = await currentStep(page);
      await page.keyboard.press('ArrowRight');
      if (await currentStep(page) === before) break;
    }
    check(nftLines >= 1, `${link}: no step showed nftables lines`);
    check(errors.length === 0, `${link}: console errors: ${errors.join(' | ')}`);
    await page.close();
  }
  // The switch rebuilds the same step in the other mode, and the link says so.
  const { page, errors } = await open('#/nodeport-loadbalancer/2/2');
  check((await page.textContent('.kh-save-main')).includes('-A KUBE-NODEPORTS'), 'iptables mode does not show iptables lines');
  await openSettings(page);
  await choose(page, page.getByRole('group', { name: 'kube-proxy mode' }).getByRole('button', { name: 'nftables', exact: true }));
  await page.waitForFunction(() => location.hash.includes('mode=nftables'), null, { timeout: 5000 });
  await page.waitForFunction(() => document.querySelector('[data-testid=rules] h2')?.textContent.includes('nft'), null, { timeout: 5000 });
  const text = await page.textContent('.kh-save-main');
  check(text.includes('add element ip kube-proxy service-nodeports { tcp . 31000 : goto external-'), `no service-nodeports element:\n${text}`);
  check(errors.length === 0, `console errors: ${errors.join(' | ')}`);
  await page.close();
  // The same hop in nftables mode: the map element that sent the packet on is marked, and the hop names it.
  const nft = await open('#/nodeport-loadbalancer/2/2?mode=nftables');
  const hits = await nft.page.locator('.kh-save-main .kh-save-line.hit').allTextContents();
  check(hits.some((t) => t.includes('service-nodeports')), `the node port element is not marked as matched: ${hits.join(' | ')}`);
  check((await nft.page.textContent('.kh-hop')).includes('the verdict map service-nodeports sends tcp . 31000 to chain external-'), 'the hop does not say which map sent the packet on');
  check(nft.errors.length === 0, `console errors: ${nft.errors.join(' | ')}`);
  await nft.page.close();
  // The transcript sets each hop's rules beside the other mode's.
  const tr = await browser.newPage();
  const trErrors = [];
  tr.on('pageerror', (e) => trErrors.push(String(e)));
  tr.on('console', (m) => { if (m.type() === 'error') trErrors.push(m.text()); });
  await tr.goto(`${origin}/#/nodeport-loadbalancer/2?view=transcript`);
  await tr.waitForSelector('[data-testid=transcript]');
  const toggle = tr.getByRole('button', { name: 'Both kube-proxy modes' });
  check(await toggle.getAttribute('aria-pressed') === 'false', 'the transcript starts with one mode');
  await toggle.click();
  await tr.waitForSelector('.kh-trow-other', { timeout: 5000 });
  const others = await tr.locator('.kh-trow-other').allTextContents();
  check(others.length >= 3 && others.every((t) => t.startsWith('In nftables mode') && t.includes('add rule ip kube-proxy')), `other-mode rows: ${others.join(' | ')}`);
  check((await tr.locator('.kh-trow-rules').first().textContent()).startsWith('In iptables mode'), 'this mode\'s rules are not labelled with it');
  check(trErrors.length === 0, `console errors: ${trErrors.join(' | ')}`);
  await tr.close();
});

await test('settings: one folded disclosure under the canvas says what is set, opens by keyboard, and follows a choice; the story\'s own choices stay above', async () => {
  const { page, errors } = await open('#/service-types/1?tab=nodeport&client=laptop');
  const d = page.locator('details.kh-settings');
  check(await d.count() === 1, `${await d.count()} settings disclosures`);
  check(!(await d.evaluate((e) => e.open)), 'the settings start open');
  const summary = async () => (await d.locator('summary').textContent()).replace(/\s+/g, ' ').trim();
  check(await summary() === 'Settings: iptables · routed · whole requests · fixed picks', `summary: ${await summary()}`);
  // Below the canvas and its playback bar; the Service type tabs above it.
  const top = (sel) => page.locator(sel).first().evaluate((e) => e.getBoundingClientRect().top);
  check(await top('details.kh-settings') > await top('.kh-controls'), 'the settings are not under the playback bar');
  check(await top('.kh-params [role=tablist]') < await top('.kh-canvas'), 'the Service type tabs left the top');
  check(await page.getByRole('group', { name: 'kube-proxy mode' }).count() === 0, 'a folded setting is still offered');
  await d.locator('summary').focus();
  await page.keyboard.press('Enter');
  check(await d.evaluate((e) => e.open), 'Enter does not open the settings');
  await choose(page, page.getByRole('group', { name: 'kube-proxy mode' }).getByRole('button', { name: 'nftables', exact: true }));
  await page.waitForFunction(() => location.hash.includes('mode=nftables'), null, { timeout: 5000 });
  check(await summary() === 'Settings: nftables · routed · whole requests · fixed picks', `after nftables: ${await summary()}`);
  check(await d.evaluate((e) => e.open), 'a choice folded the settings');
  // The walkthrough has seeded picks: the summary says which.
  const w = await open('#/nodeport-loadbalancer/2/end?seed=42');
  const ws = (await w.page.locator('details.kh-settings summary').textContent()).replace(/\s+/g, ' ').trim();
  check(ws === 'Settings: iptables · routed · whole requests · seed 42', `walkthrough summary: ${ws}`);
  check(errors.length === 0 && w.errors.length === 0, `console errors: ${[...errors, ...w.errors].join(' | ')}`);
  await page.close();
  await w.page.close();
});

await test('narrow: Embed, Present and Presenter view fold behind one "Share and present" button; wide, they stand in a row', async () => {
  const { page, errors } = await open('#/nodeport-loadbalancer/2', { viewport: { width: 390, height: 844 } });
  const toggle = page.getByRole('button', { name: 'Share and present' });
  check(await toggle.isVisible() && await toggle.getAttribute('aria-expanded') === 'false', 'no folded "Share and present" button on a phone');
  check(!(await page.getByRole('button', { name: 'Present', exact: true }).isVisible()), 'Present shows while folded');
  await toggle.click();
  check(await toggle.getAttribute('aria-expanded') === 'true', 'the button does not say it is open');
  for (const name of ['Embed', 'Present', 'Presenter view']) check(await page.getByRole('button', { name, exact: true }).isVisible(), `${name} missing from the open menu`);
  await page.setViewportSize({ width: 1280, height: 800 });
  check(!(await toggle.isVisible()), 'the menu button shows on a wide screen');
  for (const name of ['Embed', 'Present', 'Presenter view']) check(await page.getByRole('button', { name, exact: true }).isVisible(), `${name} hidden on a wide screen`);
  check(errors.length === 0, `console errors: ${errors.join(' | ')}`);
  await page.close();
});

await test('words: the step\'s terms are buttons under the narration that open the core\'s definitions, by keyboard too; the transcript ends with a glossary', async () => {
  const { page, errors } = await open('#/nodeport-loadbalancer/2/end');
  const words = page.locator('.kh-narration .kh-words');
  // Folded to one line that counts them; a press on it opens the list.
  check(!(await words.evaluate((e) => e.open)), 'the words start open');
  const head = (await words.locator('summary').textContent()).replace(/\s+/g, ' ').trim();
  check(/^Words in this step \(\d+\)$/.test(head), `the words' line: ${head}`);
  await words.locator('summary').click();
  const names = (await words.locator('.kh-words-list button').allTextContents()).map((t) => t.trim());
  check(head.includes(`(${names.length})`), `${head} for ${names.length} words`);
  check(names.includes('DNAT') && names.includes('SNAT') && names.includes('conntrack'), `step 2's words: ${names.join(', ')}`);
  const dnat = words.getByRole('button', { name: 'DNAT', exact: true });
  check(await dnat.getAttribute('aria-expanded') === 'false', 'DNAT starts open');
  await dnat.focus();
  await page.keyboard.press('Enter');
  check(await dnat.getAttribute('aria-expanded') === 'true', 'Enter does not open DNAT');
  const def = await page.textContent('#kh-word-def');
  check(def.startsWith('DNAT: ') && def.includes('rewrites where a packet is going'), `definition: ${def}`);
  await page.keyboard.press('Enter');
  check(await dnat.getAttribute('aria-expanded') === 'false' && (await page.textContent('#kh-word-def')).trim() === '', 'a second press does not fold it');
  // Step 1 changes the Service, no packet is rewritten: no DNAT there.
  await page.evaluate(() => { location.hash = '#/nodeport-loadbalancer/1/end'; });
  await page.waitForFunction(() => document.querySelector('.kh').dataset.step === '1');
  const first = (await words.locator('.kh-words-list button').allTextContents()).map((t) => t.trim());
  check(!first.includes('DNAT'), `step 1 names DNAT: ${first.join(', ')}`);
  const t = await open('#/nodeport-loadbalancer/2?view=transcript');
  await t.page.waitForSelector('[data-testid=transcript]');
  const glossary = await t.page.textContent('.kh-tglossary');
  check(glossary.includes('DNAT') && glossary.includes('rewrites where a packet is going'), `transcript glossary: ${glossary.slice(0, 200)}`);
  check((await t.page.locator('.kh-twords').count()) >= 2, 'the transcript does not name the steps\' words');
  check(errors.length === 0 && t.errors.length === 0, `console errors: ${[...errors, ...t.errors].join(' | ')}`);
  await page.close();
  await t.page.close();
});

await test('no request leaves the page origin', async () => {
  check(outside.length === 0, `outside requests: ${outside.join(', ')}`);
});

for (const [u, s] of sizes) console.log(`size: ${u.replace(origin, '')}  ${s.raw} bytes raw, ${s.gzip} bytes gzip`);
await browser.close();
server.close();
await rm(profile, { recursive: true, force: true });
console.log(`e2e: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
