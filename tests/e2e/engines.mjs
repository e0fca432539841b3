// The release build (dist/) in the two other browser engines: Gecko
// (Debian's firefox-esr, driven by puppeteer-core over WebDriver BiDi, no
// geckodriver) and WebKit (WebKitGTK's MiniBrowser under Xvfb, driven by
// selenium-webdriver through WebKitWebDriver). Chromium is tested by the
// other e2e files; this one runs a subset of them in each engine:
//
// - every scenario's default link and an embed link draw, with no error;
// - the step keys (← →) and Play (a packet moves);
// - one edit in the manifest editor (refused, then accepted by a typed key);
// - one paste in "Your cluster" (the CLI's fixture, then a request played);
// - the postMessage protocol, from a host page on another loopback origin;
// - the Content-Security-Policy page (an inline probe is refused, the app runs);
// - a page left while its wasm loads, then gone back to, starts (WebKit
//   keeps it in its back-forward cache, its wasm's load ended).
//
//   node tests/e2e/engines.mjs [firefox|webkit] [DIST]
//
// Without an engine, both run at once, each in a child process, and each
// one's time is printed. WebKitGTK's WebDriver gives no console, so every
// page is loaded with `?probe`: the test server then puts one external
// script first in index.html's head (kh-e2e-probe.js, same origin, so the
// CSP allows it; dist/index.html itself is never changed) that records
// uncaught errors, unhandled rejections, console.error calls and CSP
// violations; Firefox's console is read as well. WebKit's web content
// process has crashed about once in 300 loads here: a test during which it
// crashed runs once more in a new session, and the crash is printed and
// counted, never hidden. The drivers, the server with its probe and the
// host page, and the parent that runs the children are engines-lib.mjs's,
// shared with monkey.mjs.
import { readFile, mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { repo, serve, runChildren, waitFor as poll, launch, sleep } from './engines-lib.mjs';

const ENGINES = ['firefox', 'webkit'];
const args = process.argv.slice(2);
const engine = args.find((a) => ENGINES.includes(a));
const root = resolve(args.find((a) => !ENGINES.includes(a)) ?? join(repo, 'dist'));

if (!engine) await parent();
else await child(engine);

// ---------------------------------------------------------------- both engines at once
async function parent() {
  const t0 = Date.now();
  // About 30 s each; 300 s means a driver that stopped answering.
  const results = await runChildren(fileURLToPath(import.meta.url), ENGINES, [root], 'engines', 300);
  for (const r of results) {
    console.log(`engines: ${r.name} took ${r.seconds.toFixed(1)} s, exit ${r.signal ?? r.code}${r.summary ? ` (${r.summary.replace(/^engines \w+: /, '')})` : r.late ? ' (stopped at the deadline of 300 s)' : ''}`);
  }
  console.log(`engines: both in parallel took ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  process.exit(results.every((r) => r.code === 0) ? 0 : 1);
}

// ---------------------------------------------------------------- one engine
async function child(name) {
  const t0 = Date.now();
  // The app (with the probe where the address has ?probe; under /kh/
  // with the Content-Security-Policy) and the host page on another origin.
  const { appOrigin, hostOrigin, SUB, SLOW, slowWasm, close } = await serve(root);

  const out = join(repo, '.e2e-out');
  await mkdir(out, { recursive: true });
  const browser = await launch(name);
  console.log(`${name}: ${browser.version} (started in ${((Date.now() - t0) / 1000).toFixed(1)} s)`);

  let passed = 0, failed = 0, loads = 0;
  const crashes = [], notes = [];
  const check = (cond, msg) => { if (!cond) throw new Error(msg); };
  // A test during which the content process crashed runs once more, in a
  // new session; the crash is printed and counted.
  async function test(title, fn) {
    const start = Date.now();
    for (let attempt = 1; ; attempt++) {
      try {
        await fn();
        passed++;
        console.log(`ok   ${title} (${Date.now() - start} ms${attempt > 1 ? ', run again after a crash' : ''})`);
        return;
      } catch (e) {
        const crash = await browser.crashed(e);
        if (crash && attempt === 1) {
          crashes.push(`"${title}", last load ${lastUrl}: ${crash}`);
          console.log(`${name}: CRASH: the web content process crashed during "${title}" (last load ${lastUrl}; ${crash}); running the test once more in a new session`);
          await browser.restart();
          continue;
        }
        failed++;
        const shot = join(out, `engines-${name}-fail-${failed}.png`);
        const saved = await browser.screenshot(shot).then(() => `; screenshot ${shot}`, () => '');
        console.log(`FAIL ${title} (${Date.now() - start} ms${saved})\n     ${String((e.message || e.name + " " + e.stack) ?? e).split('\n').join('\n     ')}${crash ? `\n     (the content process crashed again: ${crash})` : ''}`);
        return;
      }
    }
  }
  // Polls fn in the page (or the iframe) until it returns something truthy.
  const waitFor = (fn, fnArgs, what, timeout, inFrame) => poll(browser, fn, fnArgs, what, timeout, inFrame);
  // Clicks and typing wait for their element first, as Playwright does in
  // the Chromium suite: the side panels are drawn in a task after the
  // first frame (app.rs's Later), so a control may come a moment after the
  // canvas the test waited for. Neither driver here waits by itself.
  const present = (sel) => waitFor((s) => !!document.querySelector(s), [sel], sel, 5000);
  const click = async (sel) => { await present(sel); await browser.click(sel); };
  const type = async (sel, text) => { await present(sel); await browser.type(sel, text); };
  // Opens a fresh document (a new query each time, so never a same-document
  // hash change) and waits for `ready` (in the iframe, for a host page).
  let lastUrl = '';
  async function open(hash, { base = '/', ready = '.kh[data-step] .kh-canvas svg .kh-node-card', top = '' } = {}) {
    lastUrl = top || `${appOrigin}${base}?probe&load=${++loads}${hash}`;
    browser.drain();
    await browser.goto(lastUrl);
    await waitFor((sel) => document.querySelector(sel) !== null, [ready], `${ready} at ${lastUrl}`, 20000, Boolean(top));
  }
  // Errors the probe recorded in the page (and frame), and the console's.
  async function clean({ frame = false } = {}) {
    const page = await (frame ? browser.evalFrame : browser.eval)(() => ({ errors: window.__khErrors ?? ['(the probe did not run)'], csp: window.__khCsp ?? [], notes: window.__khNotes ?? [] }));
    const consoleErrors = browser.drain();
    for (const note of new Set(page.notes)) {
      const n = page.notes.filter((x) => x === note).length;
      console.log(`     note: the page reported "${note}"${n > 1 ? ` ${n} times` : ''} (an error event, not an exception; not counted as an error)`);
      notes.push(note);
    }
    check(page.errors.length === 0, `errors in the page: ${page.errors.join(' | ')}`);
    check(page.csp.length === 0, `CSP violations: ${page.csp.join(' | ')}`);
    check(consoleErrors.length === 0, `console errors: ${consoleErrors.join(' | ')}`);
  }
  const attr = (a) => browser.eval((a) => document.querySelector('.kh')?.getAttribute(a), a);

  await test('every scenario\'s default link and an embed link draw their nodes, with no error', async () => {
    for (const [hash, want] of [
      ['#/nodeport-loadbalancer/1', ['Node-1', 'Node-2', 'Node-3']],
      ['#/service-types/1', ['Node-1']],
      ['#/local-lab/1', ['apollo11']],
      ['#/service-types/3?tab=nodeport&embed=1', ['Node-1']],
    ]) {
      await open(hash);
      const got = await browser.eval(() => ({
        cards: document.querySelectorAll('.kh[data-step] .kh-canvas svg .kh-node-card').length,
        svg: document.querySelector('.kh-canvas svg').textContent,
        embed: document.querySelectorAll('.kh-embed').length,
        step: document.querySelector('.kh').getAttribute('data-step'),
        title: document.title,
      }));
      check(got.cards > 0, `${hash}: no node card`);
      for (const t of want) check(got.svg.includes(t), `${hash}: the canvas lacks "${t}"`);
      check(got.embed === (hash.includes('embed=1') ? 1 : 0), `${hash}: embed page ${got.embed}`);
      check(got.step === (hash.includes('/3') ? '3' : '1'), `${hash}: data-step ${got.step}`);
      check(got.title.startsWith('KubeHops'), `${hash}: title ${got.title}`);
      await sleep(300);
      await clean();
    }
  });

  await test('the step keys move between steps; Play plays and a packet moves; Pause stops', async () => {
    await open('#/nodeport-loadbalancer/1');
    check(await attr('data-step') === '1', 'does not start at step 1');
    await browser.press('ArrowRight');
    await waitFor(() => document.querySelector('.kh').dataset.step === '2', [], '→ to open step 2', 5000);
    await browser.press('ArrowRight');
    await waitFor(() => document.querySelector('.kh').dataset.step === '3', [], '→ to open step 3', 5000);
    await browser.press('ArrowLeft');
    await waitFor(() => document.querySelector('.kh').dataset.step === '2', [], '← to open step 2 again', 5000);
    // A step opened by a key (or a link) plays its hops once; Play is
    // tried on a page at rest, at the end of step 1.
    await open('#/nodeport-loadbalancer/1/end');
    check(await attr('data-playing') === 'false', 'plays without Play');
    await click('button[aria-label="Play"]');
    await waitFor(() => document.querySelector('.kh').dataset.playing === 'true', [], 'data-playing="true"', 5000);
    const at = () => { const p = document.querySelector('[data-testid=packet]'); return p && `${p.dataset.x},${p.dataset.y}`; };
    const first = await waitFor(at, [], 'a packet', 5000);
    const moved = await waitFor((first) => { const p = document.querySelector('[data-testid=packet]'); return p && `${p.dataset.x},${p.dataset.y}` !== first && `${p.dataset.x},${p.dataset.y}`; }, [first], 'the packet to move', 5000);
    await click('button[aria-label="Pause"]');
    await waitFor(() => document.querySelector('.kh').dataset.playing === 'false', [], 'Pause to stop', 5000);
    const paused = await browser.eval(at);
    await sleep(400);
    check(await browser.eval(at) === paused, `the packet moved while paused, from (${paused})`);
    console.log(`     packet moved from (${first}) to (${moved}), and rests at (${paused}) paused`);
    await clean();
  });

  await test('an edit in the manifest editor: refused at its line, then accepted by a typed key, and played', async () => {
    await open('#/service-types/1/end?client=laptop');
    await click('.kh-manifest .kh-card-head button[aria-pressed]');
    await waitFor(() => !!document.querySelector('.kh-editor-text'), [], 'the editor', 5000);
    const text = 'apiVersion: v1\nkind: Service\nmetadata:\n  name: api\nspec:\n  type: NodePort\n  selector:\n    app: api\n  ports:\n  - port: 80\n    targetPort: 8080\n    nodePort: 3123';
    // The text goes in as one input event (as editor.mjs's figures do) ...
    await browser.eval((t) => {
      const a = document.querySelector('.kh-editor-text');
      a.value = t;
      a.dispatchEvent(new Event('input', { bubbles: true }));
      a.focus();
      a.setSelectionRange(t.length, t.length);
    }, text);
    const refusal = await waitFor(() => document.querySelector('#kh-editor-status:not([aria-busy]) .kh-refusal')?.textContent, [], 'the refusal', 5000);
    check(refusal.includes('spec.ports[0].nodePort: Invalid value: 3123: provided port is not in the valid range'), `refusal: ${refusal}`);
    // ... and the last digit is typed.
    await type('.kh-editor-text', '4');
    await waitFor(() => !!document.querySelector('#kh-editor-status:not([aria-busy]) .kh-accepted'), [], 'the edit to be accepted', 5000);
    check(await browser.eval(() => document.querySelector('.kh-editor-text').value.endsWith('nodePort: 31234')), 'the typed key did not reach the editor');
    await browser.press('Escape');
    await waitFor(() => !document.querySelector('.kh-editor-text'), [], 'Esc to leave the editor', 5000);
    await browser.eval(() => document.activeElement?.blur());
    await browser.press('End');
    await waitFor(() => document.querySelector('[data-testid=kubectl]')?.textContent.includes('80:31234/TCP'), [], 'kubectl to show 80:31234/TCP', 10000);
    // The link is written after the frame that shows the change.
    await waitFor(() => location.hash.includes('tab=nodeport') && location.hash.includes('manifest='), [], 'the link to hold the edit', 5000).catch(() => {});
    const hash = await browser.eval(() => location.hash);
    check(hash.includes('tab=nodeport') && hash.includes('manifest='), `link: ${hash}`);
    await clean();
  });

  await test('a paste in Your cluster: the CLI\'s fixture is read, drawn, and a request plays through its rules', async () => {
    const fixtures = join(repo, 'crates/kubehops-cli/tests/fixtures/cluster');
    const fixture = `${await readFile(join(fixtures, 'cluster.yaml'), 'utf8')}\n---\n${await readFile(join(fixtures, 'shop.json'), 'utf8')}`;
    await open('#/your-cluster/1', { ready: '#kh-paste-text' });
    // A paste event as the browser sends it; a synthetic one inserts
    // nothing, so where the page lets it through the text goes in by hand.
    await browser.eval((t) => {
      const area = document.querySelector('#kh-paste-text');
      area.focus();
      const dt = new DataTransfer();
      dt.setData('text/plain', t);
      if (area.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }))) {
        area.value = t;
        area.dispatchEvent(new Event('input', { bubbles: true }));
      }
    }, fixture);
    await waitFor(() => !!document.querySelector('.kh[data-step] .kh-canvas svg .kh-node-card'), [], 'the pasted cluster\'s nodes', 10000);
    const summary = await browser.eval(() => document.querySelector('[data-testid=paste-summary]')?.textContent ?? '');
    check(summary.includes('Read 3 nodes, 2 Pods, 5 Services'), `summary: ${summary}`);
    const svg = await browser.eval(() => document.querySelector('.kh-canvas svg').textContent);
    for (const t of ['Node-1', 'Node-2', 'Node-3', '10.0.0.11']) check(svg.includes(t), `the canvas lacks ${t}`);
    for (const [id, value] of [['#kh-menu-service', 'default/web'], ['#kh-menu-client', 'pod:default/shop-1']]) {
      await browser.eval((id, value) => {
        const s = document.querySelector(id);
        s.value = value;
        s.dispatchEvent(new Event('change', { bubbles: true }));
      }, id, value);
    }
    await waitFor(() => location.hash.includes('service=default/web') && location.hash.includes('client=pod:default/shop-1'), [], 'the link to name the Service and client', 5000);
    await browser.eval(() => [...document.querySelectorAll('button.kh-step')].find((b) => b.textContent.includes('Send Request')).setAttribute('data-e2e', 'send'));
    await click('button[data-e2e=send]');
    await waitFor(() => document.querySelector('.kh').dataset.step === '3', [], 'Send Request to open step 3', 10000);
    await waitFor(() => document.querySelector('.kh').dataset.playing === 'false', [], 'the request to finish playing', 60000);
    const rules = await browser.eval(() => document.querySelector('[data-testid=rules]').textContent);
    check(/KUBE-SVC-[A-Z2-7]{16}/.test(rules), `the rules panel lacks a KUBE-SVC chain: ${rules.slice(0, 300)}`);
    check(!(await browser.eval(() => location.hash)).includes('kind'), 'the link holds the paste');
    await clean();
  });

  await test('postMessage: a host page on another origin frames the app (origins=) and drives it', async () => {
    const src = `${appOrigin}${SUB}?probe&load=${++loads}#/nodeport-loadbalancer/1?embed=1&origins=${hostOrigin}`;
    await open('', { top: `${hostOrigin}/?src=${encodeURIComponent(src)}`, ready: '.kh[data-step] .kh-canvas svg .kh-node-card' });
    const message = (type, from) => waitFor((type, from) => window.messages.slice(from).find((m) => m && m.type === type), [type, from], type, 10000);
    const count = () => browser.eval(() => window.messages.length);
    const ready = await message('kubehops:ready', 0);
    check(ready.version === 1 && ready.state.scenario === 'nodeport-loadbalancer' && ready.state.step === 1 && ready.state.steps === 5, `ready: ${JSON.stringify(ready)}`);
    const height = await message('kubehops:height', 0);
    check(height.version === 1 && height.height > 300, `height: ${JSON.stringify(height)}`);
    await waitFor(() => {
      const hs = window.messages.filter((m) => m.type === 'kubehops:height');
      return Math.abs(document.querySelector('iframe').getBoundingClientRect().height - hs.at(-1).height) < 1;
    }, [], 'the iframe to take the height it asked for', 5000);

    let n = await count();
    await browser.eval(() => window.send({ type: 'kubehops:get', version: 1, id: 'q1' }));
    let st = await message('kubehops:state', n);
    check(st.id === 'q1' && st.state.step === 1 && st.state.playing === false && st.state.link.startsWith('#/nodeport-loadbalancer/1'), `get: ${JSON.stringify(st)}`);

    n = await count();
    await browser.eval(() => window.send({ type: 'kubehops:set', version: 1, id: 2, step: 3, hop: 'end' }));
    st = await message('kubehops:state', n);
    check(st.id === 2 && st.state.step === 3 && st.state.hop === st.state.hops && !st.state.playing, `set step 3 end: ${JSON.stringify(st)}`);
    check(await browser.evalFrame(() => document.querySelector('.kh').dataset.step) === '3', 'the frame did not open step 3');
    check((await message('kubehops:change', n)).state.step === 3, 'no change message for step 3');

    n = await count();
    await browser.eval(() => window.send({ type: 'kubehops:next', version: 1 }));
    st = await message('kubehops:state', n);
    check(st.state.step === 4, `next: ${JSON.stringify(st)}`);
    await waitFor(() => document.querySelector('.kh').dataset.step === '4', [], 'the frame to open step 4', 5000, true);

    n = await count();
    await browser.eval(() => window.send({ type: 'kubehops:set', version: 1, playing: true }));
    st = await message('kubehops:state', n);
    check(st.state.playing === true, `play: ${JSON.stringify(st)}`);
    await browser.eval(() => window.send({ type: 'kubehops:set', version: 1, playing: false }));
    await waitFor(() => document.querySelector('.kh').dataset.playing === 'false', [], 'the frame to pause', 5000, true);

    n = await count();
    await browser.eval(() => window.send({ type: 'kubehops:set', version: 1, step: 99, id: 'bad' }));
    const err = await message('kubehops:error', n);
    check(err.id === 'bad' && /Step 99 does not exist/.test(err.message), `error: ${JSON.stringify(err)}`);

    // Not of the protocol's shape: ignored, no answer, nothing changes.
    n = await count();
    await browser.eval(() => {
      for (const m of [{ type: 'kubehops:set', version: 2, step: 1 }, { type: 'kubehops:set', version: 1, step: '1' }, 'kubehops:get', null]) window.send(m);
    });
    await sleep(500);
    const after = await browser.eval((n) => window.messages.slice(n).filter((m) => m.type !== 'kubehops:height'), n);
    check(after.length === 0, `answers to malformed messages: ${JSON.stringify(after)}`);
    check(await browser.evalFrame(() => document.querySelector('.kh').dataset.step) === '4', 'a malformed message changed the step');
    await clean({ frame: true });
  });

  await test('under the Content-Security-Policy an inline script is refused and the app runs', async () => {
    await open('#/nodeport-loadbalancer/2/end', { base: SUB });
    check(await browser.eval(() => document.querySelectorAll('.kh-node-card').length) === 3, 'the page did not render under the policy');
    await browser.eval(() => { const s = document.createElement('script'); s.textContent = 'window.__ran = 1'; document.head.append(s); });
    await waitFor(() => window.__khCsp.length > 0, [], 'the refusal to be reported', 5000);
    check(await browser.eval(() => window.__ran) == null, 'an inline script ran: the policy is not applied');
    const reported = await browser.eval(() => window.__khCsp.slice());
    check(reported.length === 1 && /^script-src/.test(reported[0]), `reported: ${reported.join(' | ')}`);
    await browser.eval(() => { window.__khCsp.length = 0; });
    browser.drain(); // the console's note of the refused probe
    await click('button[aria-label="Play"]');
    await waitFor(() => document.querySelector('.kh').dataset.playing === 'true' && !!document.querySelector('[data-testid=packet]'), [], 'Play under the policy', 5000);
    await sleep(300);
    await clean();
  });

  // Leaving a page ends the load of its wasm (WebKit: "TypeError: Load
  // failed"), yet WebKit keeps the page, long since loaded, in its
  // back-forward cache: a step back showed it again (pageshow, persisted)
  // on its first frame, "Loading…" for ever (monkey.mjs, seed 3301, about
  // one run in five). The page's wasm is served slowly here (/slow/), so
  // the page is always left while it loads.
  await test('a page left while its wasm loads, then gone back to, starts', async () => {
    const asked = slowWasm();
    lastUrl = `${appOrigin}${SLOW}?probe&load=${++loads}#/local-lab/1`;
    await browser.goto(lastUrl);
    const end = Date.now() + 10000;
    while (slowWasm() === asked && Date.now() < end) await sleep(50);
    check(slowWasm() > asked, 'the page did not ask for its wasm in 10 s');
    await sleep(300);
    await open('#/service-types/1');
    await browser.eval(() => history.back());
    await waitFor((slow) => location.pathname === slow && !!document.querySelector('.kh[data-step] .kh-canvas svg .kh-node-card'), [SLOW], 'the app, back at the page left while its wasm loaded', 20000);
    check(!(await browser.eval(() => document.documentElement.hasAttribute('data-first'))), 'the first frame is still up');
    await clean();
  });

  await browser.quit();
  close();
  if (crashes.length) console.log(`${name}: the web content process crashed ${crashes.length} time(s), each time during a test that then ran once more:\n  ${crashes.join('\n  ')}`);
  console.log(`engines ${name}: ${passed} passed, ${failed} failed, ${loads} loads, ${crashes.length} crash(es), ${notes.length} ResizeObserver note(s), ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  process.exit(failed ? 1 : 0);
}
