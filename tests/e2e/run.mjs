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

const server = createServer(async (req, res) => {
  const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
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
  page.on('request', (r) => { if (!r.url().startsWith(origin)) outside.push(r.url()); });
  page.on('response', async (r) => {
    const u = r.url();
    if (/\.(wasm|js)$/.test(u) && !sizes.has(u)) {
      try { const b = await r.body(); sizes.set(u, { raw: b.length, gzip: gzipSync(b, { level: 9 }).length }); } catch {}
    }
  });
  await page.goto(`${origin}/${hash}`);
  await page.waitForSelector('.kh-node-card', { timeout: 15000 });
  return { page, errors };
}

function check(cond, msg) { if (!cond) throw new Error(msg); }

async function test(name, fn) {
  try { await fn(); passed++; console.log(`ok   ${name}`); }
  catch (e) { failed++; console.log(`FAIL ${name}\n     ${String(e.message ?? e).split('\n').join('\n     ')}`); }
}

const currentStep = (page) => page.getAttribute('.kh', 'data-step').then(Number);
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
  check(await page.getAttribute('[aria-label^="Step 1 of 5"]', 'aria-current') === 'step', 'step 1 not marked current');
  const before = await kubectl(page);
  check(before.includes('ClusterIP'), `step 1 should start from a ClusterIP Service:\n${before}`);
  await page.getByRole('button', { name: 'Next step' }).click();
  check(await currentStep(page) === 2, 'indicator did not advance');
  check(await page.getAttribute('[aria-label^="Step 2 of 5"]', 'aria-current') === 'step', 'step 2 not marked current');
  const after = await kubectl(page);
  check(after !== before && after.includes('80:31000/TCP'), `kubectl did not change to the NodePort:\n${after}`);
  check(page.url().endsWith('#/nodeport-loadbalancer/2'), `URL not updated: ${page.url()}`);
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

await test('keyboard: arrows step, Home restarts, Space plays', async () => {
  const { page } = await open();
  await page.locator('body').press('ArrowRight');
  await page.locator('body').press('ArrowRight');
  check(await currentStep(page) === 3, 'ArrowRight did not step');
  await page.locator('body').press('ArrowLeft');
  check(await currentStep(page) === 2, 'ArrowLeft did not step back');
  await page.locator('body').press('Home');
  check(await currentStep(page) === 1, 'Home did not restart');
  const playing = () => page.getAttribute('.kh', 'data-playing');
  const was = await playing();
  await page.locator('body').press('Space');
  check(await playing() !== was, 'Space did not toggle play');
  await page.locator('body').press('Space');
  check(await playing() === was, 'Space did not toggle back');
  await page.close();
});

await test('reduced motion: a step opens in its end state, without a moving packet', async () => {
  const { page } = await open('#/nodeport-loadbalancer/2', { reducedMotion: true });
  check(await page.getAttribute('.kh', 'data-playing') === 'false', 'should not animate');
  check((await page.textContent('.kh-status')).startsWith('6/6'), 'should show the last hop');
  await page.close();
});

await test('step 2 shows the packet before and after DNAT and SNAT', async () => {
  const { page } = await open('#/nodeport-loadbalancer/2/2');
  const hop = await page.textContent('.kh-hop');
  for (const t of ['10.0.0.12:31000', '10.244.3.9:8080', 'DNAT', 'SNAT', '198.51.100.23:51000']) check(hop.includes(t), `hop lacks ${t}`);
  check(await page.locator('.kh-rule.hit').count() > 0, 'no rule highlighted on Node-2');
  await page.close();
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

// Screenshots for people to look at: every step at its end, at three widths,
// plus the start of step 3 while the balancer is pending.
await test('screenshots of every step', async () => {
  for (const [w, h] of [[1600, 1000], [720, 1400], [1920, 1080]]) {
    for (let s = 1; s <= 5; s++) {
      const { page } = await open(`#/nodeport-loadbalancer/${s}/end`, { viewport: { width: w, height: h } });
      await page.screenshot({ path: join(out, `step${s}-${w}.png`), fullPage: w === 720 });
      await page.close();
    }
  }
  const { page } = await open('#/nodeport-loadbalancer/3/3', { viewport: { width: 1600, height: 1000 } });
  await page.screenshot({ path: join(out, 'step3-pending-1600.png') });
  await page.close();
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
