// The canvas as a reader sees it, in the release build: at every size
// readers use, on every step of every scenario, the smallest canvas text
// and every text inside its box, measured on the page the browser drew
// (its own fonts, not the core's metrics); and the disagreements between
// picture and narration that issue 18 lists, as the page shows them.
//
//   node tests/e2e/canvas.mjs            (screenshots in .e2e-out/canvas/)
import { chromium } from 'playwright-core';
import { mkdir, mkdtemp } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { serveDist } from './serve.mjs';

const out = resolve('.e2e-out/canvas');
await mkdir(out, { recursive: true });
const { server, origin } = await serveDist(resolve(process.argv[2] ?? 'dist'));
const profile = await mkdtemp(join(tmpdir(), 'kubehops-canvas-'));
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM_BIN ?? '/usr/bin/chromium',
  headless: true,
  reducedMotion: 'reduce',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});

let passed = 0, failed = 0;
async function test(name, fn) {
  try { await fn(); passed++; console.log(`ok   ${name}`); }
  catch (e) { failed++; console.log(`FAIL ${name}\n     ${String(e.message ?? e).split('\n').join('\n     ')}`); }
}
function check(cond, msg) { if (!cond) throw new Error(msg); }

const SCENARIOS = { 'nodeport-loadbalancer': 5, 'service-types': 3, 'local-lab': 10 };
// [name, width, height, embed, present, smallest px]
const SIZES = [
  ['embed 480×360', 480, 360, true, false, 12],
  ['embed 720×560', 720, 560, true, false, 12],
  ['embed 1280×720', 1280, 720, true, false, 12],
  ['page 720×900', 720, 900, false, false, 12],
  ['present 1920×1080', 1920, 1080, false, true, 24],
];

// What the canvas shows: the smallest text in view (in CSS px), and every
// text whose box on the drawing is not inside the box it belongs to (the
// first rect of its nearest group that has one).
const measure = (page) => page.evaluate(() => {
  const svg = document.querySelector('.kh-stage .kh-canvas svg') ?? document.querySelector('.kh-canvas svg');
  const frame = svg.getBoundingClientRect();
  const scale = svg.getScreenCTM()?.a ?? 1;
  let min = Infinity, which = '';
  const out = [];
  for (const t of svg.querySelectorAll('text')) {
    const text = t.textContent.trim();
    if (!text) continue;
    const r = t.getBoundingClientRect();
    const shown = r.width > 0 && r.right > frame.left && r.left < frame.right && r.bottom > frame.top && r.top < frame.bottom;
    if (shown) {
      for (const el of [t, ...t.querySelectorAll('tspan')]) {
        const px = parseFloat(getComputedStyle(el).fontSize) * scale;
        if (px < min) { min = px; which = (el.textContent || '').trim().slice(0, 40); }
      }
    }
    let g = t.parentElement;
    while (g && g.tagName !== 'svg' && !Array.from(g.children).some((c) => c.tagName === 'rect')) g = g.parentElement;
    const box = g && Array.from(g.children).find((c) => c.tagName === 'rect');
    if (!box) continue;
    const b = t.getBBox(), bx = box.getBBox();
    if (b.x < bx.x - 1 || b.y < bx.y - 1 || b.x + b.width > bx.x + bx.width + 1 || b.y + b.height > bx.y + bx.height + 1) {
      out.push(`"${text.slice(0, 40)}" (${b.x.toFixed(0)},${b.y.toFixed(0)} ${b.width.toFixed(0)}×${b.height.toFixed(0)}) outside its box (${bx.x.toFixed(0)},${bx.y.toFixed(0)} ${bx.width.toFixed(0)}×${bx.height.toFixed(0)})`);
    }
  }
  return { min, which, overflow: out };
});

await test('every step of every scenario: canvas text legible and inside its box, at every size', async () => {
  const problems = [];
  const report = [];
  for (const [name, w, h, embed, present, floor] of SIZES) {
    const page = await browser.newPage();
    await page.setViewportSize({ width: w, height: h });
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    let smallest = Infinity, where = '';
    for (const [id, steps] of Object.entries(SCENARIOS)) {
      for (let k = 1; k <= steps; k++) {
        for (const at of ['', '/end']) {
          const link = `#/${id}/${k}${at}${embed ? '?embed=1' : ''}`;
          await page.goto(`${origin}/${link}`);
          await page.waitForSelector('.kh[data-step] .kh-canvas svg .kh-zone');
          if (present && !(await page.locator('.kh-presenting').count())) { await page.keyboard.press('p'); await page.waitForSelector('.kh-presenting'); }
          await page.waitForTimeout(120);
          const m = await measure(page);
          if (m.min < smallest) { smallest = m.min; where = `${link} ("${m.which}")`; }
          if (m.min < floor - 0.05) problems.push(`${name} ${link}: "${m.which}" at ${m.min.toFixed(1)} px`);
          for (const o of m.overflow) problems.push(`${name} ${link}: ${o}`);
          if (k === 2 && at === '/end') await page.screenshot({ path: join(out, `${name.replace(/[^a-z0-9]+/gi, '-')}-${id}-2-end.png`) });
        }
      }
    }
    report.push(`${name}: smallest ${smallest.toFixed(1)} px at ${where}`);
    if (errors.length) problems.push(`${name}: ${errors.join(' | ')}`);
    await page.close();
  }
  console.log(report.map((r) => `     ${r}`).join('\n'));
  check(problems.length === 0, problems.slice(0, 30).join('\n') + (problems.length > 30 ? `\n… and ${problems.length - 30} more` : ''));
});

async function open(link, w = 1600, h = 1000) {
  const page = await browser.newPage();
  await page.setViewportSize({ width: w, height: h });
  await page.goto(`${origin}/${link}`);
  await page.waitForSelector('.kh[data-step] .kh-canvas svg .kh-zone');
  return page;
}
const lit = (page) => page.$$eval('.kh-stage .kh-canvas .kh-rule.hit text', (ts) => ts.map((t) => t.textContent.trim()));

await test('headless: the request is routed by the nodes, and no kube-proxy rule lights up', async () => {
  const page = await open('#/service-types/3/1?tab=headless');
  for (let hop = 1; hop <= 6; hop++) {
    await page.goto(`${origin}/#/service-types/3/${hop}?tab=headless`);
    await page.waitForTimeout(80);
    check((await lit(page)).length === 0, `hop ${hop}: a rule is lit: ${await lit(page)}`);
  }
  const said = await page.$$eval('.kh-stage .kh-canvas .kh-proxy text', (ts) => ts.map((t) => t.textContent));
  // The reason may wrap over lines in a narrow panel (the compact picture).
  check(said.join(' ').includes('headless, no virtual IP'), `the panel does not say why it is empty: ${said}`);
  check(await page.locator('.kh-stage .kh-canvas .kh-junction').count() >= 2, 'the nodes routing it are not drawn');
  await page.close();
});

await test('DNS lookup: the kube-dns rule that DNATs the query lights up on the node', async () => {
  const page = await open('#/service-types/2/2');
  const l = await lit(page);
  check(l.some((t) => t.includes(':53')), `no kube-dns row lit while the query is DNATed: ${l}`);
  await page.close();
});

await test('a rewrite is on the token: the old address struck through, the new one tagged', async () => {
  const page = await open('#/nodeport-loadbalancer/2/2');
  const struck = await page.$$eval('[data-testid=packet] .kh-struck', (ts) => ts.map((t) => t.textContent));
  const tags = await page.$$eval('[data-testid=packet] .kh-tag-text', (ts) => ts.map((t) => t.textContent.trim()));
  check(struck.includes('10.0.0.12:31000') && struck.includes('198.51.100.23:51000'), `struck: ${struck}`);
  check(tags.includes('DNAT') && tags.includes('SNAT'), `tags: ${tags}`);
  await page.close();
});

await test('a 404 and an NXDOMAIN look different from a good answer, in words as well as colour', async () => {
  let page = await open('#/local-lab/10/end');
  const card = await page.textContent('[data-testid=packet]');
  check(card.includes('✕ 404'), `the 404's card: ${card}`);
  check(await page.locator('[data-testid=packet] .kh-card.tone-bad').count() === 1, 'the 404 is not drawn as a failure');
  await page.close();
  page = await open('#/service-types/2/2?client=laptop');
  const nx = await page.textContent('[data-testid=packet]');
  check(nx.includes('✕ NXDOMAIN'), `the NXDOMAIN card: ${nx}`);
  await page.close();
});

await test('lab step 9: Envoy opens its own connection from its Pod, through the node\'s junction', async () => {
  const page = await open('#/local-lab/9/end');
  const hops = await page.$$eval('.kh-hoplist li', (ls) => ls.map((l) => l.textContent));
  const i = hops.findIndex((t) => t.includes('Pod envoy → apollo11-worker'));
  check(i >= 0, `no hop from Pod envoy: ${hops}`);
  await page.goto(`${origin}/#/local-lab/9/${i + 1}`);
  await page.waitForTimeout(100);
  check((await lit(page)).length === 0, `a kube-proxy rule is lit for Envoy's own connection: ${await lit(page)}`);
  check(await page.locator('.kh-stage .kh-canvas .kh-junction').count() >= 1, 'no junction drawn');
  await page.close();
});

await browser.close();
server.close();
console.log(`\n${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
