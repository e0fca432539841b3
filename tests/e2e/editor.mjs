// End-to-end tests of the manifest editor (issue 10), against the release
// build in dist/, in Debian's headless Chromium through playwright-core.
// Prints the time from a keystroke to the re-simulated frame as figures.
import { chromium } from 'playwright-core';
import { serveDist } from './serve.mjs';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';

const root = resolve(process.argv[2] ?? 'dist');
const out = resolve('.e2e-out');
const { server, origin } = await serveDist(root);
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_BIN ?? '/usr/bin/chromium', args: ['--no-sandbox', '--headless', '--disable-gpu'] });
await mkdir(out, { recursive: true });

let passed = 0, failed = 0;
function check(cond, msg) { if (!cond) throw new Error(msg); }

// The address as the page leaves it: the app writes its link after the
// frame that shows a change is painted (src/app.rs, sync_link), so this
// reads it after a frame and the task that follows it.
async function settledUrl(page) {
  return page.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(() => r(location.href), 0))));
}
async function test(name, fn) {
  try { await fn(); passed++; console.log(`ok   ${name}`); } catch (e) { failed++; console.log(`FAIL ${name}\n     ${e.message}`); }
}

async function open(hash, width = 1600) {
  const page = await browser.newPage({ viewport: { width, height: 1100 } });
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${origin}/${hash}`);
  await page.waitForSelector('.kh[data-step] .kh-node-card', { timeout: 15000 });
  page.errors = errors;
  return page;
}

// The status once the worker has answered: while it checks, the line keeps
// the last result and is aria-busy (src/editor.rs, Said).
const ACCEPTED = '#kh-editor-status:not([aria-busy]) .kh-accepted';
const REFUSED = '#kh-editor-status:not([aria-busy]) .kh-refusal';
const editorOf = (page) => page.getByRole('textbox', { name: /Service manifest/ });
async function startEditing(page) {
  await page.getByRole('button', { name: 'Edit', exact: true }).click();
  const area = editorOf(page);
  await area.waitFor();
  return area;
}
const kubectl = (page) => page.locator('.kh-card', { has: page.getByRole('heading', { name: 'kubectl' }) }).locator('pre').first().innerText();
const hopList = (page) => page.locator('.kh-hoplist').innerText();
const NODEPORT = (port) => `apiVersion: v1\nkind: Service\nmetadata:\n  name: api\nspec:\n  type: NodePort\n  selector:\n    app: api\n  ports:\n  - port: 80\n    targetPort: 8080\n    nodePort: ${port}\n`;

await test('the editor starts from the tab\'s own Service, in a labelled text area with line numbers', async () => {
  const page = await open('#/service-types/1');
  const area = await startEditing(page);
  const text = await area.inputValue();
  check(text.startsWith('apiVersion: v1\nkind: Service\nmetadata:\n  name: api\n') && text.includes('type: ClusterIP'), `starting text: ${text}`);
  check(await area.evaluate((a) => getComputedStyle(a).fontFamily.toLowerCase().includes('mono')), 'not monospace');
  const numbers = await page.locator('.kh-gutter-lines').innerText();
  check(numbers.trim().split('\n').length >= text.trim().split('\n').length, `line numbers: ${numbers}`);
  check(page.errors.length === 0, page.errors.join('\n'));
  await page.close();
});

await test('an invalid nodePort shows the API server\'s message at its line, and the canvas keeps the last valid state', async () => {
  const page = await open('#/service-types/1/end');
  const before = await kubectl(page);
  const nodes = await page.locator('.kh-node-card').count();
  const area = await startEditing(page);
  await area.fill(NODEPORT(29000));
  const refusal = page.locator(REFUSED);
  await refusal.waitFor();
  const said = await refusal.innerText();
  check(said.includes('The Service "api" is invalid:'), said);
  check(said.includes('Line 12: spec.ports[0].nodePort: Invalid value: 29000: provided port is not in the valid range. The range of valid ports is 30000-32767'), said);
  check((await page.locator('.kh-ln.bad').innerText()).trim() === '! 12', 'line 12 is not marked in the gutter');
  check(await area.getAttribute('aria-invalid') === 'true', 'aria-invalid not set');
  check(await kubectl(page) === before, 'kubectl output changed although the edit was refused');
  check(await page.locator('.kh-node-card').count() === nodes, 'the canvas lost its nodes');
  check(await area.inputValue() === NODEPORT(29000), 'the typed text was lost');
  await page.locator('.kh-manifest').screenshot({ path: join(out, 'editor-refused.png') });
  check(page.errors.length === 0, page.errors.join('\n'));
  await page.close();
});

await test('a valid edit re-simulates: kubectl, the step and the hops follow', async () => {
  const page = await open('#/service-types/1/end?client=laptop');
  const hopsBefore = await hopList(page);
  const area = await startEditing(page);
  const t0 = Date.now();
  await area.fill(NODEPORT(31234));
  await page.waitForSelector(ACCEPTED);
  await page.waitForFunction(() => document.querySelector('.kh-hoplist')?.innerText.includes('31234') || document.body.innerText.includes('80:31234/TCP'));
  console.log(`     figure: typed edit to re-simulated page ${Date.now() - t0} ms (fill, build, render)`);
  await page.keyboard.press('Escape');
  check(!(await editorOf(page).count()), 'Esc did not leave the editor');
  check(await page.evaluate(() => document.activeElement?.textContent?.trim()) === 'Edit', 'focus did not go back to the Edit button');
  // The shortcuts work again: End (on the page) shows the step's end.
  await page.evaluate(() => document.activeElement.blur());
  await page.keyboard.press('End');
  await page.waitForFunction(() => document.body.innerText.includes('80:31234/TCP'));
  check((await kubectl(page)).includes('80:31234/TCP'), `kubectl: ${await kubectl(page)}`);
  check(new URL((await settledUrl(page))).hash.includes('tab=nodeport') && new URL((await settledUrl(page))).hash.includes('manifest='), `link: ${(await settledUrl(page))}`);
  // Send Request from the laptop now dials the typed node port.
  await page.getByRole('button', { name: /^Step \d+ of \d+: Send Request$/ }).click();
  await page.evaluate(() => document.activeElement.blur());
  await page.keyboard.press('End');
  await page.waitForFunction(() => document.querySelector('.kh-hoplist')?.innerText.includes(':31234'));
  check((await hopList(page)) !== hopsBefore, 'the hops did not change');
  await page.screenshot({ path: join(out, 'editor-nodeport-1600.png'), fullPage: true });
  check(page.errors.length === 0, page.errors.join('\n'));
  await page.close();
});

await test('the link carries the edit: opening it shows the typed Service; Reset goes back to the tab\'s own', async () => {
  const first = await open('#/service-types/1');
  await (await startEditing(first)).fill(NODEPORT(31999));
  await first.waitForSelector(ACCEPTED);
  const url = first.url();
  await first.close();
  const page = await open(new URL(url).hash);
  await page.locator('body').press('End');
  await page.waitForFunction(() => document.body.innerText.includes('80:31999/TCP'));
  const area = await startEditing(page);
  check(await area.inputValue() === NODEPORT(31999), 'the editor does not show the linked text');
  await page.getByRole('button', { name: 'Reset' }).click();
  await page.waitForFunction(() => !location.hash.includes('manifest='));
  // The link opened the NodePort tab (the typed Service's type); Reset gives that tab's own.
  const own = await area.inputValue();
  check(own.includes('type: NodePort') && own.includes('nodePort: 30080') && !own.includes('31999'), `Reset did not restore the tab's manifest: ${own}`);
  check(page.errors.length === 0, page.errors.join('\n'));
  await page.close();
});

await test('while the worker checks, the status keeps the last result, busy, and says "Checking" only when the check takes a while', async () => {
  const page = await open('#/service-types/1/end');
  const area = await startEditing(page);
  await area.fill(NODEPORT(31001));
  await page.waitForSelector(ACCEPTED);
  const status = page.locator('#kh-editor-status');
  // A fast check: the next frame still shows the last result, marked busy.
  const fast = await page.evaluate(() => new Promise((done) => {
    const a = document.querySelector('.kh-editor-text');
    a.value = a.value.replace('31001', '31002');
    a.dispatchEvent(new Event('input', { bubbles: true }));
    requestAnimationFrame(() => setTimeout(() => {
      const s = document.querySelector('#kh-editor-status');
      done({ busy: s.getAttribute('aria-busy'), text: s.textContent });
    }, 0));
  }));
  check(fast.busy === 'true' && fast.text.includes('Accepted') && !fast.text.includes('Checking'), `during a check: ${JSON.stringify(fast)}`);
  await page.waitForSelector(ACCEPTED);
  // A slow one (the page's messages to the worker held for 1.5 s): it says so.
  await page.evaluate(() => {
    const post = Worker.prototype.postMessage;
    Worker.prototype.postMessage = function (...args) { setTimeout(() => post.apply(this, args), 1500); };
  });
  await area.fill(NODEPORT(31003));
  await page.waitForSelector('#kh-editor-status[aria-busy=true] .kh-checking', { timeout: 1400 });
  check((await status.innerText()).includes('Checking it as the API server would'), await status.innerText());
  await page.waitForSelector(ACCEPTED, { timeout: 5000 });
  check(page.errors.length === 0, page.errors.join('\n'));
  await page.close();
});

await test('Tab indents inside the editor; shortcuts stay out of it', async () => {
  const page = await open('#/service-types/1');
  const area = await startEditing(page);
  await area.fill('a:\n');
  await area.press('End');
  await page.keyboard.press('Tab');
  await page.keyboard.type('b: 1');
  check(await area.inputValue() === 'a:\n  b: 1', JSON.stringify(await area.inputValue()));
  const step = await page.locator('.kh').getAttribute('data-step');
  await page.keyboard.press('ArrowRight');
  check(await page.locator('.kh').getAttribute('data-step') === step, 'an arrow key stepped while typing');
  await page.close();
});

await test('every scenario offers the editor, and a typed Service plays in each', async () => {
  for (const [id, text] of [
    ['nodeport-loadbalancer', 'apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  type: LoadBalancer\n  selector:\n    app: web\n  ports:\n  - port: 8443\n    targetPort: 8080\n'],
    ['local-lab', 'apiVersion: v1\nkind: Service\nmetadata:\n  name: booking\n  namespace: apollo-airlines-apps\nspec:\n  type: LoadBalancer\n  selector:\n    app: booking\n  ports:\n  - port: 80\n    targetPort: 8082\n'],
  ]) {
    const page = await open(`#/${id}/1`);
    const area = await startEditing(page);
    await area.fill(text);
    await page.waitForSelector(ACCEPTED);
    await page.getByRole('button', { name: /^Step \d+ of \d+: Send Request$/ }).click();
    await page.evaluate(() => document.activeElement.blur());
    await page.keyboard.press('End');
    await page.waitForFunction(() => document.querySelectorAll('.kh-hoplist li').length > 1);
    const narration = await page.locator('.kh-narration').innerText().catch(() => '');
    console.log(`     ${id}: ${narration.replace(/\s+/g, ' ').slice(0, 300)}`);
    await page.screenshot({ path: join(out, `editor-${id}.png`), fullPage: true });
    check(page.errors.length === 0, `${id}: ${page.errors.join('\n')}`);
    await page.close();
  }
});

await test('figures: after a keystroke, the next frame and the re-simulated one, on every scenario', async () => {
  for (const [id, port] of [['service-types', 'nodePort'], ['nodeport-loadbalancer', 'nodePort'], ['local-lab', 'nodePort']]) {
    const page = await open(`#/${id}/1/end`);
    const area = await startEditing(page);
    const base = await area.inputValue();
    const times = await page.evaluate(async ({ base, port, accepted }) => {
      const a = document.querySelector('.kh-editor-text');
      const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
      // Resolves once the next frame is painted (see metrics.mjs).
      const painted = () => new Promise((done) => requestAnimationFrame(() => {
        const ch = new MessageChannel();
        ch.port1.onmessage = done;
        ch.port2.postMessage(0);
      }));
      const out = [];
      for (let i = 0; i < 10; i++) {
        // Alternate admitted texts, so every input re-simulates.
        const text = base.replace(/\n *nodePort: \d+/, '').replace(/type: \w+/, 'type: NodePort').replace(/\n$/, '') + `\n    ${port}: ${31000 + i}\n`;
        // A keystroke comes in a task of its own, at any point of a frame;
        // typed from inside an animation callback, the next one would be a
        // whole frame away however little the page did. Spread over a frame.
        await new Promise((r) => setTimeout(r, (i * 5) % 16));
        const t0 = performance.now();
        a.value = text;
        a.dispatchEvent(new Event('input', { bubbles: true }));
        await painted();
        const next = performance.now() - t0;
        // The worker reads, admits and builds it; then the page draws it.
        while (!document.querySelector(accepted) && performance.now() - t0 < 10000) await frame();
        out.push([next, performance.now() - t0]);
        // The next edit comes after the page has drawn this one, as a
        // reader's next keystroke would: its next frame is then its own,
        // not the end of this one's drawing.
        await frame();
        await frame();
      }
      return out;
    }, { base, port, accepted: ACCEPTED });
    check(await page.locator(ACCEPTED).count() === 1, `${id}: the last edit was not accepted: ${await page.locator('#kh-editor-status').innerText()}`);
    const next = times.map((t) => t[0]).sort((x, y) => x - y);
    const shown = times.map((t) => t[1]).sort((x, y) => x - y);
    console.log(`     figure: ${id}: input to next paint (each edit typed in a task of its own after the last one was drawn), median ${next[5].toFixed(1)} ms, max ${next[9].toFixed(1)} ms; to the re-simulated frame (read, admitted and built in the worker), median ${shown[5].toFixed(1)} ms, max ${shown[9].toFixed(1)} ms (10 edits; includes waiting for the frame)`);
    await page.close();
  }
});

for (const width of [720, 1920]) {
  const page = await open('#/service-types/1/end', width);
  await (await startEditing(page)).fill(NODEPORT(29000));
  await page.waitForSelector(REFUSED);
  await page.screenshot({ path: join(out, `editor-${width}.png`), fullPage: true });
  await page.close();
}

await browser.close();
server.close();
console.log(`editor e2e: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
