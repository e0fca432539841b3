// End-to-end tests of "Your cluster" on the release build (dist/), in
// Debian's headless Chromium through playwright-core: the page before a
// paste, pasting the CLI's fixture cluster and playing a request through
// it, a bad paste, a generated cluster of 50 nodes, 2,000 Pods and 500
// Services (time from paste to the first frame), and a 10 MB paste (how
// long the main thread is busy, from PerformanceObserver's long tasks).
// Screenshots go to .e2e-out/cluster-*.png.
import { chromium } from 'playwright-core';
import { serveDist } from './serve.mjs';
import { readFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join, resolve, dirname } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '../..');
const root = resolve(process.argv[2] ?? join(repo, 'dist'));
const out = join(repo, '.e2e-out');
const fixtures = join(repo, 'crates/kubehops-cli/tests/fixtures/cluster');

const { server, origin } = await serveDist(root);
const profile = await mkdtemp(join(tmpdir(), 'kubehops-cluster-'));
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM_BIN ?? '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: { width: 1600, height: 1000 },
});
await mkdir(out, { recursive: true });

let passed = 0, failed = 0;
const figures = [];
const check = (cond, msg) => { if (!cond) throw new Error(msg); };
async function test(name, fn) {
  try { await fn(); passed++; console.log(`ok   ${name}`); }
  catch (e) { failed++; console.log(`FAIL ${name}\n     ${String(e.message ?? e).split('\n').join('\n     ')}`); }
}

async function open(hash = '#/your-cluster/1', viewport, before) {
  const page = await browser.newPage();
  if (viewport) await page.setViewportSize(viewport);
  if (before) await before(page);
  const errors = [], outside = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('request', (r) => { if (!r.url().startsWith(origin)) outside.push(r.url()); });
  // Long tasks of the main thread, from the first moment on.
  await page.addInitScript(() => {
    window.__long = [];
    new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__long.push({ start: e.startTime, ms: e.duration }); }).observe({ type: 'longtask', buffered: true });
  });
  await page.goto(`${origin}/${hash}`);
  await page.waitForSelector('#kh-paste-text', { timeout: 20000 });
  return { page, errors, outside };
}

// Sets the paste box's text as a paste would (one input event) and
// returns the milliseconds until the canvas has drawn a frame with node
// cards (or an error), measured in the page.
async function paste(page, text) {
  // The text goes into the page first, in a task of its own, so that the
  // long tasks measured are the page's handling of the paste, not the
  // test shipping megabytes into the page.
  await page.evaluate((t) => { window.__text = t; }, text);
  await page.waitForTimeout(100);
  return page.evaluate(() => new Promise((done) => {
    const t = window.__text;
    const area = document.querySelector('#kh-paste-text');
    area.focus();
    const t0 = performance.now();
    // A paste event, as the browser sends it; a synthetic one inserts
    // nothing, so where the page lets it through, the text goes in by hand.
    const dt = new DataTransfer();
    dt.setData('text/plain', t);
    const ev = new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true });
    if (area.dispatchEvent(ev)) {
      area.value = t;
      area.dispatchEvent(new Event('input', { bubbles: true }));
    }
    const wait = () => {
      if (document.querySelector('.kh-node-card') || document.querySelector('[data-testid=paste-error]')) {
        requestAnimationFrame(() => done({ ms: performance.now() - t0, t0 }));
      } else requestAnimationFrame(wait);
    };
    requestAnimationFrame(wait);
  }));
}

const fixture = async () => `${await readFile(join(fixtures, 'cluster.yaml'), 'utf8')}\n---\n${await readFile(join(fixtures, 'shop.json'), 'utf8')}`;

// The same cluster as kubehops_objects::cluster::example_yaml(50, 2000, 500):
// a YAML List of nodes, Pods spread over them, Services (every fifth a
// NodePort) each with an EndpointSlice of its Pods.
function bigCluster(nodes, pods, services) {
  const y = ['apiVersion: v1\nkind: List\nitems:\n'];
  const nodeIp = (i) => `10.0.${Math.floor(i / 250)}.${10 + (i % 250)}`;
  const podIp = (p) => { const n = p % nodes; return `10.${100 + Math.floor(n / 250)}.${n % 250}.${2 + (Math.floor(p / nodes) % 250)}`; };
  const pad = (p) => String(p).padStart(5, '0');
  for (let n = 0; n < nodes; n++) {
    y.push(`- apiVersion: v1\n  kind: Node\n  metadata:\n    name: node-${n + 1}\n  spec:\n    podCIDR: 10.${100 + Math.floor(n / 250)}.${n % 250}.0/24\n  status:\n    addresses:\n    - type: InternalIP\n      address: ${nodeIp(n)}\n`);
  }
  for (let p = 0; p < pods; p++) {
    const app = p % services;
    y.push(`- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: app${app}-7c9d8f5b6-p${pad(p)}\n    namespace: ns${app % 10}\n    labels:\n      app: app${app}\n  spec:\n    nodeName: node-${(p % nodes) + 1}\n    containers:\n    - name: app\n      ports:\n      - name: http\n        containerPort: 8080\n  status:\n    podIP: ${podIp(p)}\n    conditions:\n    - type: Ready\n      status: "True"\n`);
  }
  for (let s = 0; s < services; s++) {
    const np = s % 5 === 0 ? `\n      nodePort: ${30000 + (s % 2768)}` : '';
    y.push(`- apiVersion: v1\n  kind: Service\n  metadata:\n    name: app${s}\n    namespace: ns${s % 10}\n  spec:\n    type: ${s % 5 === 0 ? 'NodePort' : 'ClusterIP'}\n    clusterIP: 10.96.${1 + Math.floor(s / 250)}.${1 + (s % 250)}\n    selector:\n      app: app${s}\n    ports:\n    - name: http\n      port: 80\n      targetPort: 8080${np}\n`);
    y.push(`- apiVersion: discovery.k8s.io/v1\n  kind: EndpointSlice\n  metadata:\n    name: app${s}-abcde\n    namespace: ns${s % 10}\n    labels:\n      kubernetes.io/service-name: app${s}\n  addressType: IPv4\n  endpoints:\n`);
    for (let p = s; p < pods; p += services) {
      y.push(`  - addresses: ["${podIp(p)}"]\n    conditions: {ready: true}\n    nodeName: node-${(p % nodes) + 1}\n    targetRef: {kind: Pod, name: app${s}-7c9d8f5b6-p${pad(p)}}\n`);
    }
    y.push('  ports:\n  - name: http\n    protocol: TCP\n    port: 8080\n');
  }
  return y.join('');
}

// The same objects as one JSON List, as kubectl get -o json prints them.
function bigClusterJson(nodes, pods, services) {
  const items = [];
  const nodeIp = (i) => `10.0.${Math.floor(i / 250)}.${10 + (i % 250)}`;
  const podIp = (p) => { const n = p % nodes; return `10.${100 + Math.floor(n / 250)}.${n % 250}.${2 + (Math.floor(p / nodes) % 250)}`; };
  const pad = (p) => String(p).padStart(5, '0');
  for (let n = 0; n < nodes; n++) items.push({ apiVersion: 'v1', kind: 'Node', metadata: { name: `node-${n + 1}` }, spec: { podCIDR: `10.${100 + Math.floor(n / 250)}.${n % 250}.0/24` }, status: { addresses: [{ type: 'InternalIP', address: nodeIp(n) }] } });
  for (let p = 0; p < pods; p++) {
    const app = p % services;
    items.push({ apiVersion: 'v1', kind: 'Pod', metadata: { name: `app${app}-7c9d8f5b6-p${pad(p)}`, namespace: `ns${app % 10}`, labels: { app: `app${app}` } }, spec: { nodeName: `node-${(p % nodes) + 1}`, containers: [{ name: 'app', ports: [{ name: 'http', containerPort: 8080 }] }] }, status: { podIP: podIp(p), conditions: [{ type: 'Ready', status: 'True' }] } });
  }
  for (let s = 0; s < services; s++) {
    const port = { name: 'http', port: 80, targetPort: 8080 };
    if (s % 5 === 0) port.nodePort = 30000 + (s % 2768);
    items.push({ apiVersion: 'v1', kind: 'Service', metadata: { name: `app${s}`, namespace: `ns${s % 10}` }, spec: { type: s % 5 === 0 ? 'NodePort' : 'ClusterIP', clusterIP: `10.96.${1 + Math.floor(s / 250)}.${1 + (s % 250)}`, selector: { app: `app${s}` }, ports: [port] } });
    const endpoints = [];
    for (let p = s; p < pods; p += services) endpoints.push({ addresses: [podIp(p)], conditions: { ready: true }, nodeName: `node-${(p % nodes) + 1}`, targetRef: { kind: 'Pod', name: `app${s}-7c9d8f5b6-p${pad(p)}` } });
    items.push({ apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: `app${s}-abcde`, namespace: `ns${s % 10}`, labels: { 'kubernetes.io/service-name': `app${s}` } }, addressType: 'IPv4', endpoints, ports: [{ name: 'http', protocol: 'TCP', port: 8080 }] });
  }
  return JSON.stringify({ apiVersion: 'v1', kind: 'List', items }, null, 2);
}

const shoot = async (page, name) => page.screenshot({ path: join(out, `cluster-${name}.png`), fullPage: true });

for (const [w, h] of [[720, 1400], [1920, 1080]]) {
  await test(`empty page at ${w}px: says nothing leaves the browser, offers a paste box and a file input`, async () => {
    const { page, errors, outside } = await open('#/your-cluster/1', { width: w, height: h });
    const text = await page.textContent('.kh-paste');
    check(text.includes('Nothing leaves your browser'), 'privacy note missing');
    check(text.includes('kubectl get nodes,pods,services,endpointslices -A -o yaml'), 'command missing');
    check(await page.getByLabel(/Paste the output of/).count() === 1, 'the paste box has no label');
    check(await page.locator('input[type=file]').count() === 1, 'no file input');
    check(await page.locator('.kh-node-card').count() === 0, 'nodes drawn before a paste');
    check(!(await page.locator('#kh-main').isVisible()), 'an empty stage is shown before a paste');
    await shoot(page, `empty-${w}`);
    check(errors.length === 0 && outside.length === 0, `errors: ${errors.join(' | ')} outside: ${outside.join(' ')}`);
    await page.close();
  });
}

for (const [w, h] of [[720, 1400], [1920, 1080]]) {
  await test(`pasting the CLI's fixture cluster at ${w}px plays a request through its rules`, async () => {
    const { page, errors, outside } = await open('#/your-cluster/1', { width: w, height: h });
    const { ms } = await paste(page, await fixture());
    figures.push(`fixture cluster (3 nodes, 2 Pods, 5 Services): paste to first frame ${ms.toFixed(0)} ms at ${w}px`);
    check((await page.textContent('[data-testid=paste-summary]')).includes('Read 3 nodes, 2 Pods, 5 Services'), await page.textContent('.kh-paste'));
    const svg = await page.innerHTML('.kh-canvas svg');
    for (const t of ['Node-1', 'Node-2', 'Node-3', '10.0.0.11']) check(svg.includes(t), `canvas lacks ${t}`);
    await page.selectOption('#kh-menu-service', 'default/web');
    await page.selectOption('#kh-menu-client', 'pod:default/shop-1');
    await page.waitForFunction(() => location.hash.includes('service=default/web') && location.hash.includes('client=pod:default/shop-1'));
    await page.getByRole('button', { name: /^Step \d+ of \d+: Send Request$/ }).click();
    await page.waitForFunction(() => document.querySelector('.kh').dataset.step === '3');
    await page.waitForFunction(() => document.querySelector('.kh').dataset.playing === 'false', null, { timeout: 60000 });
    const hash = await page.evaluate(() => location.hash);
    check(!hash.includes('kind'), `the link holds the paste: ${hash.slice(0, 80)}`);
    const rules = await page.textContent('[data-testid=rules]');
    check(/KUBE-SVC-[A-Z2-7]{16}/.test(rules), `rules panel lacks a KUBE-SVC chain: ${rules.slice(0, 300)}`);
    const narration = await page.textContent('.kh-narration');
    check(narration.includes('200 OK') || narration.includes('reply'), `narration: ${narration}`);
    check(await page.locator('.kh-trail').count() >= 4, 'fewer than four hops drawn');
    await shoot(page, `fixture-${w}`);
    check(errors.length === 0 && outside.length === 0, `errors: ${errors.join(' | ')} outside: ${outside.join(' ')}`);
    await page.close();
  });
}

await test('once read, the paste box folds to a line and the canvas is on the first screen (1280×800); "Edit the paste" brings the text back', async () => {
  const { page, errors } = await open('#/your-cluster/1', { width: 1280, height: 800 });
  const text = await fixture();
  await paste(page, text);
  await page.waitForSelector('.kh[data-step] .kh-node-card');
  const line = await page.textContent('[data-testid=paste-summary]');
  check(line.includes('Read 3 nodes, 2 Pods, 5 Services'), `summary: ${line}`);
  check(!(await page.locator('#kh-paste-text').isVisible()), 'the paste box is still open');
  const panel = await page.locator('.kh-paste').boundingBox();
  check(panel.height < 80, `the folded panel is ${Math.round(panel.height)}px tall`);
  const canvas = await page.locator('.kh-canvas').boundingBox();
  const scrolled = await page.evaluate(() => window.scrollY);
  // Before, the open box put the canvas's top at 546 px, most of it below the fold.
  check(canvas.y + scrolled <= 400, `the canvas starts at ${Math.round(canvas.y + scrolled)}px, not in the top half of the first screen (800px)`);
  const play = await page.getByRole('button', { name: /^(Play|Pause)$/ }).boundingBox();
  check(play.y + play.height <= 800, `Play ends at ${Math.round(play.y + play.height)}px, below the first screen`);
  // Focus left the box for the line, off the tab order: the shortcuts work.
  check(await page.evaluate(() => document.activeElement?.classList.contains('kh-paste-ok')), `focus is on ${await page.evaluate(() => document.activeElement?.outerHTML.slice(0, 80))}`);
  await shoot(page, 'folded-1280');
  const edit = page.getByRole('button', { name: 'Edit the paste', exact: true });
  check(await edit.count() === 1, 'no "Edit the paste" button');
  await edit.click();
  const box = page.getByLabel(/Paste the output of/);
  check(await box.isVisible(), 'the box did not open');
  check(await box.inputValue() === text, 'the text came back changed');
  await page.waitForFunction(() => document.activeElement?.id === 'kh-paste-text');
  // Typing in the open box never folds it.
  await page.keyboard.press('Control+End');
  await page.keyboard.type('\n');
  await page.waitForTimeout(200);
  check(await box.isVisible(), 'typing folded the box');
  // "Hide the paste" folds it again, the text kept.
  await page.getByRole('button', { name: 'Hide the paste', exact: true }).click();
  check(!(await box.isVisible()), 'Hide the paste did not fold the box');
  await edit.click();
  check(await box.inputValue() === `${text}\n`, 'the text changed while folded');
  check(errors.length === 0, errors.join(' | '));
  await page.close();
});

await test('a bad paste shows the API server\'s error and keeps the text', async () => {
  const { page } = await open();
  const bad = 'apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  type: NodePort\n  ports: [{port: 80, nodePort: 29000}]\n';
  await paste(page, bad);
  const err = await page.textContent('[data-testid=paste-error]');
  check(err.includes('The Service "web" is invalid: spec.ports[0].nodePort: Invalid value: 29000: provided port is not in the valid range. The range of valid ports is 30000-32767'), err);
  check(await page.inputValue('#kh-paste-text') === bad, 'the text was changed');
  await paste(page, 'kind: [\n');
  const syntax = await page.textContent('[data-testid=paste-error]');
  check(syntax.startsWith('error: error parsing STDIN'), syntax);
  check(await page.inputValue('#kh-paste-text') === 'kind: [\n', 'the text was changed');
  await page.close();
});

await test('a reader that cannot load says so, keeps the text, and "Try again" reads it', async () => {
  // The worker starts once the page is shown (src/worker.rs): its wasm is
  // refused from the start.
  const { page, errors } = await open('#/your-cluster/1', undefined, (p) => p.route(/kubehops-worker-[0-9a-f]+_bg\.wasm$/, (r) => r.abort()));
  const text = await fixture();
  await page.fill('#kh-paste-text', text);
  const alert = page.locator('.kh-paste [role=alert]');
  await alert.waitFor({ timeout: 20000 });
  const said = await alert.textContent();
  check(said.includes("kubehops's reader stopped") && said.includes('The text is kept'), `alert: ${said}`);
  check(await page.inputValue('#kh-paste-text') === text, 'the text was changed');
  await page.unroute(/kubehops-worker-[0-9a-f]+_bg\.wasm$/);
  await page.getByRole('button', { name: 'Try again' }).click();
  await page.waitForSelector('[data-testid=paste-summary]', { timeout: 20000 });
  check((await page.textContent('[data-testid=paste-summary]')).includes('Read 3 nodes'), 'not read after trying again');
  check(await page.locator('.kh-paste [role=alert]').count() === 0, 'the alert stayed');
  // The refused fetch is the browser's own console error; nothing else.
  const others = errors.filter((e) => !/ERR_FAILED|Failed to load resource|kubehops-worker/.test(e));
  check(others.length === 0, others.join(' | '));
  await page.close();
});

for (const [w, h, format] of [[720, 1400, 'YAML'], [1920, 1080, 'YAML'], [1920, 1080, 'JSON']]) {
  await test(`a cluster of 50 nodes, 2,000 Pods and 500 Services in ${format} loads and groups what does not fit (${w}px)`, async () => {
    const { page, errors } = await open('#/your-cluster/3', { width: w, height: h });
    const text = format === 'YAML' ? bigCluster(50, 2000, 500) : bigClusterJson(50, 2000, 500);
    await page.waitForTimeout(500);
    const { ms, t0 } = await paste(page, text);
    await page.waitForTimeout(300);
    const long = await page.evaluate((t) => window.__long.filter((l) => l.start + l.ms >= t), t0);
    const worst = Math.max(0, ...long.map((l) => l.ms));
    figures.push(`big cluster (${(text.length / 1e6).toFixed(2)} MB ${format}, 50 nodes, 2000 Pods, 500 Services): paste to first frame ${ms.toFixed(0)} ms at ${w}px; longest task ${worst.toFixed(0)} ms`);
    check((await page.textContent('[data-testid=paste-summary]')).includes('Read 50 nodes, 2000 Pods, 500 Services'), await page.textContent('.kh-paste'));
    const cards = await page.locator('.kh-node-card').count();
    check(cards >= 1 && cards <= 6, `${cards} node cards`);
    const groups = await page.locator('.kh-group').evaluateAll((gs) => gs.map((g) => g.dataset.group));
    check(groups.some((g) => /^\+\d+ nodes$/.test(g)) && groups.some((g) => /^\+\d+ Pods$/.test(g)), `groups: ${groups.join(', ')}`);
    await page.getByRole('button', { name: /^Step \d+ of \d+: Send Request$/ }).click();
    await page.waitForFunction(() => document.querySelector('.kh').dataset.playing === 'false', null, { timeout: 60000 });
    check(/KUBE-SVC-/.test(await page.textContent('[data-testid=rules]')), 'no chain names for the big cluster');
    if (format === 'YAML') await shoot(page, `big-${w}`);
    // The clients' menu holds only its choice until it is first used, then
    // every client, the choice kept, at the width it had.
    const menu = page.locator('#kh-menu-client');
    const before = await menu.evaluate((m) => ({ n: m.options.length, value: m.value, width: m.getBoundingClientRect().width }));
    check(before.n === 1, `the clients' menu holds ${before.n} options before it is used`);
    await menu.focus();
    const after = await menu.evaluate((m) => ({ n: m.options.length, value: m.value, width: m.getBoundingClientRect().width }));
    check(after.n >= 2050 && after.value === before.value && after.width === before.width, `after focus: ${JSON.stringify(after)}, before: ${JSON.stringify(before)}`);
    const pod = await menu.evaluate((m) => [...m.options].find((o) => o.value.startsWith('pod:') && o.value !== m.value).value);
    await menu.selectOption(pod);
    await page.waitForTimeout(1000);
    check(await menu.evaluate((m) => m.value) === pod, 'the chosen client did not stay chosen');
    check(errors.length === 0, errors.join(' | '));
    await page.close();
  });
}

await test('a 10 MB paste is refused at once with a clear message, the text kept', async () => {
  const { page } = await open();
  let text = bigCluster(50, 2000, 500);
  while (text.length < 10e6) text += text;
  text = text.slice(0, 10e6);
  await page.waitForTimeout(500);
  const { ms, t0 } = await paste(page, text);
  await page.waitForTimeout(300);
  const long = await page.evaluate((t) => window.__long.filter((l) => l.start + l.ms >= t), t0);
  const worst = Math.max(0, ...long.map((l) => l.ms));
  const err = await page.textContent('[data-testid=paste-error]');
  figures.push(`10 MB paste: refused in ${ms.toFixed(0)} ms; longest task ${worst.toFixed(0)} ms (${long.length} long tasks)`);
  check(err.includes('the input is 9.5 MB and KubeHops reads at most 4.0 MB in the browser'), err);
  check(worst < 200, `a long task of ${worst} ms`);
  check((await page.textContent('[data-testid=paste-kept]')).includes('9.5 MB of text is kept'), 'the text is not said to be kept');
  await page.close();
});

for (const f of figures) console.log(`figure: ${f}`);
await browser.close();
server.close();
await rm(profile, { recursive: true, force: true });
console.log(`cluster e2e: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
