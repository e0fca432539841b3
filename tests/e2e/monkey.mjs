// A seeded random reader: the release build (dist/) in Chromium, Firefox
// and WebKit at once, each driven through a long run of random actions of
// every kind a reader has, while everything the page does wrong is counted.
//
//   node tests/e2e/monkey.mjs [chromium|firefox|webkit ...] [DIST]
//
//   MONKEY_SEED=N      run this seed only (any integer, or a word: it is hashed)
//   MONKEY_ACTIONS=N   actions per engine and seed (default 1000)
//   MONKEY_FRESH=0     without MONKEY_SEED: the fixed seed only, no fresh one
//   MONKEY_VERBOSE=1   print every action
//
// Without MONKEY_SEED each engine runs the fixed seed (the same in every
// run, so CI always covers it) and then a fresh one drawn for this run;
// both are printed first. The engines run in parallel, one child process
// each (engines-lib.mjs's runChildren), and each seed starts in a fresh
// browser, so `MONKEY_SEED=<seed> node tests/e2e/monkey.mjs <engine>`
// replays it. Each action draws from its own generator (the seed and the
// action's number), so the choices of action N do not depend on how many
// numbers the actions before it drew; what the page answers (which
// controls are on screen) still depends on timing, so a replay walks the
// same way as far as the page lets it.
//
// The actions: a click on any visible control (a real click through the
// driver: buttons, links, tabs, switches, summaries, the canvas's
// focusable parts), a choice in a menu, keys (the step, hop and play
// shortcuts, P, H, N, Esc, Tab, Enter, letters), scrolling, waiting, links
// (valid, garbled and huge; as a hash change in the page or as a new
// load, at / or under /kh/ with the Content-Security-Policy), window sizes
// from a phone to 4K, the manifest editor and the paste box (valid text,
// broken text, huge text; pasted, typed, dropped as a file), the embed
// protocol from a host page on another origin (valid and invalid
// postMessage, and messages from an origin not listed), reload, back, and
// the reduced-motion setting (Firefox and WebKit read it at start: their
// browser starts again). Print is replaced in the page by a stub that
// fires beforeprint and afterprint (the native dialog would stop the
// driver); a presenter-view window is closed after it opens; downloads go
// to a temporary folder.
//
// What is counted, as findings: uncaught errors, unhandled rejections and
// console.error calls (recorded in the page by engines-lib.mjs's probe in
// every engine, and by the driver's console where it has one), CSP
// violations, failed requests (HTTP >= 400, a network failure, a request
// to another origin; a request aborted by a navigation is counted apart),
// a crashed content process, an action that never ends (30 s), and every
// 25 actions a page that does not answer within 5 s (a frame and a task)
// or no longer draws its canvas (a scenario's nodes; the paste box on Your
// cluster before a paste; the transcript's pictures). Each finding is
// printed with the seed, the action's number and words, and the link the
// page was at, and the actions before it.
//
// Before the random run, each engine checks one fixed thing: framed by a
// host page on another origin that gives no clipboard-write, an Evidence
// Copy button (the lab, #/local-lab/1) never says Copied when the
// clipboard refused (and says Copied when it took the text).
//
// The last line is `monkey: N passed, M failed` (one per engine and seed,
// and one per engine's copy check); the exit code is 1 on any finding.
import { readFile, readdir, mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { randomInt } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { repo, serve, runChildren, launch, sleep, bounded, ENGINES } from './engines-lib.mjs';

const FIXED_SEED = 3301;
const args = process.argv.slice(2);
const CHILD = args.includes('--child');
const names = args.filter((a) => ENGINES.includes(a));
const seedArg = args.find((a) => a.startsWith('--seeds='));
const root = resolve(args.find((a) => !ENGINES.includes(a) && !a.startsWith('--')) ?? join(repo, 'dist'));
const ACTIONS = Number(process.env.MONKEY_ACTIONS ?? 1000);
const VERBOSE = process.env.MONKEY_VERBOSE === '1';


// ---------------------------------------------------------------- seeds and numbers
/// A seed as a 32-bit number: an integer as it is, anything else hashed.
function seedOf(text) {
  const s = String(text).trim();
  if (/^\d+$/.test(s) && Number(s) < 2 ** 32) return Number(s);
  let h = 0x811c9dc5;
  for (const c of Buffer.from(s)) h = Math.imul(h ^ c, 0x01000193) >>> 0;
  return h;
}

/// sfc32, started from a seed and a stream number (the action's).
function rng(seed, stream = 0) {
  let a = seed >>> 0, b = Math.imul(stream + 1, 0x9e3779b9) >>> 0, c = 0x243f6a88, d = 0xb7e15162;
  const next = () => {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0;
    c = (c + t) >>> 0;
    return t / 4294967296;
  };
  for (let i = 0; i < 16; i++) next();
  const r = {
    next,
    int: (n) => Math.floor(next() * n),
    range: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: (xs) => xs[Math.floor(next() * xs.length)],
    chance: (p) => next() < p,
    /// [[weight, value], ...]
    weighted: (table) => {
      let x = next() * table.reduce((s, [w]) => s + w, 0);
      for (const [w, v] of table) { if ((x -= w) < 0) return v; }
      return table.at(-1)[1];
    },
  };
  return r;
}

// ---------------------------------------------------------------- the parent
async function parent() {
  const t0 = Date.now();
  const engines = names.length ? names : ENGINES;
  let seeds;
  if (process.env.MONKEY_SEED) seeds = [seedOf(process.env.MONKEY_SEED)];
  else if (process.env.MONKEY_FRESH === '0') seeds = [FIXED_SEED];
  else seeds = [FIXED_SEED, randomInt(1, 2 ** 31)];
  console.log(`monkey: seeds ${seeds.map((s, i) => `${s}${i === 0 && s === FIXED_SEED ? ' (fixed)' : ' (fresh)'}`).join(', ')}; ${ACTIONS} actions per engine and seed; engines ${engines.join(', ')} in parallel`);
  console.log(`monkey: replay one with MONKEY_SEED=<seed> MONKEY_ACTIONS=${ACTIONS} node tests/e2e/monkey.mjs <engine>`);
  // About 0.3 s an action in each engine, with room for restarts and a slow machine.
  const deadline = 180 + Math.ceil(seeds.length * ACTIONS * 1.5);
  const results = await runChildren(fileURLToPath(import.meta.url), engines, ['--child', `--seeds=${seeds.join(',')}`, root], 'monkey', deadline);
  let passed = 0, failed = 0;
  for (const r of results) {
    const m = /(\d+) passed, (\d+) failed/.exec(r.summary);
    if (m) { passed += Number(m[1]); failed += Number(m[2]); }
    if (!m || r.code !== 0) failed += m ? 0 : 1;
    console.log(`monkey: ${r.name} took ${r.seconds.toFixed(1)} s, exit ${r.signal ?? r.code}${r.summary ? ` (${r.summary.replace(/^monkey \w+: /, '')})` : (r.late ? ` (stopped at the deadline of ${deadline} s: a driver or page that never answered)` : ' (no summary: the child died)')}`);
  }
  console.log(`monkey: seeds ${seeds.join(', ')}; the engines in parallel took ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  console.log(`monkey: ${passed} passed, ${failed} failed`);
  process.exit(failed || results.some((r) => r.code !== 0) ? 1 : 0);
}

// ---------------------------------------------------------------- what the reader uses
/// What Chromium itself prints (as a console error) when a frame's
/// permissions policy refuses the page the clipboard or full screen: the
/// browser's report of a refusal that the page handles and says, not an
/// error of the page. Counted apart, and printed.
const REFUSAL = /^Permissions policy violation: (The Clipboard API has been blocked|fullscreen is not allowed)/;
const NAV_ABORT = /^Error: (TypeError: NetworkError when attempting to fetch resource\.|AbortError: The operation was aborted\. ?)$/;
const SCENARIOS = { 'nodeport-loadbalancer': 5, 'service-types': 4, 'local-lab': 10, 'your-cluster': 3 };
const PARAMS = {
  any: ['mode=iptables', 'mode=nftables', 'network=routed', 'network=vxlan', 'handshake=1', 'handshake=0', 'seed=#', 'theme=dark', 'theme=light',
    'theme=auto', 'view=transcript', 'view=animation', 'notes=1', 'embed=1', 'controls=minimal', 'controls=none', 'controls=full', 'autoplay=1'],
  'service-types': ['tab=from-pod', 'tab=from-outside', 'tab=nodeport', 'tab=loadbalancer', 'tab=externalname', 'tab=headless', 'client=laptop',
    'client=pod-web', 'local=1', 'via=node-2', 'notready=api-m3n9q', 'notready=api-r8t6w', 'notready=api-m3n9q,api-r8t6w'],
  'your-cluster': ['service=default/web', 'client=pod:default/shop-1', 'service=kube-system/kube-dns'],
};
const JUNK = ['%', '%%', '%ZZ', '%E2%82', '%00', '&&', '==', '?', '#', '/', '//', '..', '\u202e', '😀', '<script>', '"', "'", '\\', ' ', '-1',
  '99999999999999999999', 'NaN', 'end', '/end/end', '\t', 'Ω', '%F0%9F', '+', ';', 'javascript:alert(1)', '\u0000'];
const WORDS = ['kubectl', 'Service', 'NodePort', 'api', 'web', '---', ':', '- ', '{', '}', '[', ']', '\n', '  ', '"', '&a', '*a', '!!binary', '~', '0x1F', '1e400'];
const SIZES = [[320, 568], [360, 640], [375, 667], [390, 844], [412, 915], [600, 960], [768, 1024], [1024, 768], [1280, 720], [1366, 768],
  [1440, 900], [1600, 1000], [1920, 1080], [2560, 1440], [3840, 2160]];
const KEYS = ['ArrowRight', 'ArrowRight', 'ArrowLeft', 'PageDown', 'PageUp', ' ', '.', ',', '[', ']', 'Home', 'End', 'Escape', 'Tab', 'Tab',
  'Enter', 'p', 'h', 'n', 'P', '?', 'a', 'Backspace', 'ArrowUp', 'ArrowDown'];

/// A link's hash: valid, garbled or huge.
function link(r) {
  const kind = r.weighted([[60, 'valid'], [28, 'garbled'], [12, 'huge']]);
  const scenario = r.chance(0.05) ? r.pick(['no-such-thing', '', 'NODEPORT-LOADBALANCER', 'local-lab/../service-types']) : r.pick(Object.keys(SCENARIOS));
  const steps = SCENARIOS[scenario] ?? 3;
  let h = `#/${scenario}/${r.range(1, steps + (r.chance(0.1) ? 3 : 0))}`;
  if (r.chance(0.5)) h += `/${r.chance(0.5) ? 'end' : r.range(0, 8)}`;
  const pool = [...PARAMS.any, ...(PARAMS[scenario] ?? [])];
  const pairs = [];
  for (let n = r.weighted([[40, 0], [30, 1], [20, 2], [10, 4]]); n > 0; n--) pairs.push(r.pick(pool).replace('#', String(r.int(2 ** 32))));
  if (pairs.length) h += `?${pairs.join('&')}`;
  if (kind === 'garbled') {
    for (let n = r.range(1, 4); n > 0; n--) {
      const at = r.int(h.length + 1);
      const how = r.int(3);
      if (how === 0) h = h.slice(0, at) + r.pick(JUNK) + h.slice(at);
      else if (how === 1) h = h.slice(0, at) + h.slice(at + r.range(1, 6));
      else h = h.slice(0, at) + h.slice(at).toUpperCase();
    }
    if (!h.startsWith('#')) h = `#${h}`;
  } else if (kind === 'huge') {
    const n = r.pick([2000, 20000, 60000]);
    h = r.pick([
      () => `#/${'a'.repeat(n)}`,
      () => `#/nodeport-loadbalancer/${'9'.repeat(n)}`,
      () => `#/service-types/1?notready=${'api-m3n9q,'.repeat(n / 10)}`,
      () => `#/nodeport-loadbalancer/1?seed=${'7'.repeat(n)}`,
      () => `#/service-types/1?${Array.from({ length: n / 10 }, (_, i) => `k${i}=${i}`).join('&')}`,
      () => `#/service-types/1?manifest=${'x'.repeat(n)}`,
      () => `#/local-lab/1?origins=${'http://a.example,'.repeat(n / 20)}&embed=1`,
      () => `#/${'/'.repeat(n)}`,
    ])();
  }
  return h;
}

/// Mutations of a text: spans deleted, junk put in, the end cut.
function mutate(r, text) {
  let t = text;
  for (let n = r.range(1, 6); n > 0; n--) {
    const at = r.int(t.length + 1);
    const how = r.int(4);
    if (how === 0) t = t.slice(0, at) + t.slice(at + r.range(1, 40));
    else if (how === 1) t = t.slice(0, at) + r.pick([...WORDS, ...JUNK]) + t.slice(at);
    else if (how === 2) t = t.slice(0, at);
    else t = t.slice(0, at) + t.slice(at, at + r.range(1, 80)).repeat(r.range(2, 5)) + t.slice(at);
  }
  return t;
}

/// A big or odd text; runs in the page (as window.__khBig, put there with
/// the probe), so it names nothing outside itself.
const BIG = ['nested-lists', 'nested-maps', 'long-line', 'many-docs', 'anchors', 'binary', 'over-limit'];
function bigText(kind, n) {
  switch (kind) {
    case 'nested-lists': return '['.repeat(n) + ']'.repeat(n);
    // Indented a space more each line: n²/2 characters, so n is kept to 2,000.
    case 'nested-maps': return Array.from({ length: Math.min(n, 2000) }, (_, i) => `${' '.repeat(i)}k${i}:`).join('\n');
    case 'long-line': return `apiVersion: v1\nkind: Service\nmetadata:\n  name: ${'a'.repeat(n * 100)}\n`;
    case 'many-docs': return Array.from({ length: n }, (_, i) => `apiVersion: v1\nkind: Service\nmetadata:\n  name: s${i}\nspec:\n  ports:\n  - port: ${i % 65536}\n`).join('---\n');
    case 'anchors': return `a: &a ["x","x","x","x","x","x","x","x","x"]\n${Array.from({ length: 9 }, (_, i) => `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)},*${String.fromCharCode(97 + i)}]`).join('\n')}\n`;
    case 'binary': return Array.from({ length: n * 10 }, (_, i) => String.fromCharCode((i * 7919) % 0xd7ff)).join('');
    case 'over-limit': return 'kind: List\nitems:\n' + '- {}\n'.repeat(1100000);
  }
  return '';
}

// ---------------------------------------------------------------- one engine
async function child(name, seeds) {
  const t0 = Date.now();
  // Print opens no dialog: beforeprint and afterprint, and a count.
  // And the builder of big texts, made in the page rather than sent over
  // the driver's wire (an external script, so the CSP allows it).
  const probeExtra = `window.print = function () { window.__khPrinted = (window.__khPrinted || 0) + 1; dispatchEvent(new Event('beforeprint')); setTimeout(() => dispatchEvent(new Event('afterprint')), 50); };
window.__khBig = ${bigText};
window.__khLife = [];
for (const e of ['load', 'pagehide', 'pageshow']) addEventListener(e, (ev) => window.__khLife.push(\`\${e}\${ev.persisted ? ' (persisted)' : ''}@\${Math.round(performance.now())}\`));
`;
  const { appOrigin, hostOrigin, SUB, close } = await serve(root, { probeExtra });
  const out = join(repo, '.e2e-out');
  await mkdir(out, { recursive: true });

  // The texts of the editor and the paste box.
  const fixtures = join(repo, 'crates/kubehops-cli/tests/fixtures');
  const read = (p) => readFile(join(fixtures, p), 'utf8');
  const cluster = `${await read('cluster/cluster.yaml')}\n---\n${await read('cluster/shop.json')}`;
  const goodPastes = [cluster, cluster, await read('kube-proxy.yaml'), await read('with-deployment.yaml'), await read('stored-conflicts.yaml'),
    await read('upstream/overall.yaml'), await read('upstream/test-node.yaml'), await read('upstream/kubectl-print-service.yaml')];
  const badPastes = await Promise.all((await readdir(join(fixtures, 'bad'))).sort().map((f) => read(`bad/${f}`)));
  const MANIFEST = 'apiVersion: v1\nkind: Service\nmetadata:\n  name: api\nspec:\n  type: NodePort\n  selector:\n    app: api\n  ports:\n  - port: 80\n    targetPort: 8080\n    nodePort: 31234\n';
  const goodManifests = [MANIFEST, MANIFEST.replace('NodePort', 'ClusterIP').replace(/\n {4}nodePort.*\n/, '\n'), MANIFEST.replace('NodePort', 'LoadBalancer'),
    MANIFEST.replace(/ {2}type: NodePort\n/, '  clusterIP: None\n').replace(/\n {4}nodePort.*\n/, '\n'), MANIFEST.replace('port: 80', 'port: 443').replace('8080', 'http')];

  const browser = await launch(name, { screen: '4000x2400' });
  browser.allow(appOrigin, hostOrigin);
  console.log(`${name}: ${browser.version} (started in ${((Date.now() - t0) / 1000).toFixed(1)} s)`);

  let passed = 0, failed = 0;
  const lines = [];

  // ------------------------------------------------------------ the copy check
  {
    const t = Date.now();
    try {
      const what = await copyCheck();
      passed++;
      console.log(`ok   framed by another origin without clipboard-write, an Evidence Copy button says what happened: ${what} (${Date.now() - t} ms)`);
    } catch (e) {
      failed++;
      console.log(`FAIL framed by another origin without clipboard-write, an Evidence Copy button says what happened (${Date.now() - t} ms)\n     ${String(e.message ?? e).split('\n').join('\n     ')}`);
    }
  }

  for (const seed of seeds) {
    const res = await run(seed);
    lines.push(res.line);
    if (res.findings) failed++;
    else passed++;
  }
  try { await browser.quit(); } catch {}
  close();
  for (const l of lines) console.log(l);
  console.log(`monkey ${name}: ${passed} passed, ${failed} failed, ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  process.exit(failed ? 1 : 0);

  // ------------------------------------------------------------ helpers
  // A step that does not answer in time is a MonkeyTimeout: a hang.
  function within(ms, p, what) { return bounded(ms, p, what, 'MonkeyTimeout'); }

  async function copyCheck() {
    const src = `${appOrigin}/?probe&load=copy#/local-lab/1`;
    // A frame no taller than the window: WebKitWebDriver does not scroll
    // the page to a frame's element below the fold, and the click is lost.
    await browser.goto(`${hostOrigin}/?w=1200&h=900&src=${encodeURIComponent(src)}`);
    const inFrame = async (fn, ...a) => browser.evalFrame(fn, ...a);
    const until = async (fn, what, ms = 20000) => {
      const end = Date.now() + ms;
      for (;;) {
        try { const v = await inFrame(fn); if (v) return v; } catch {}
        if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
        await sleep(100);
      }
    };
    await until(() => !!document.querySelector('[data-testid=evidence] button[aria-label^="Copy:"]'), 'the Evidence panel in the frame');
    // What the clipboard answered, seen beside the app (not changed).
    await inFrame(() => {
      window.__khClip = 'not called';
      const c = navigator.clipboard;
      if (!c || !c.writeText) { window.__khClip = 'no clipboard'; return; }
      const write = c.writeText.bind(c);
      c.writeText = (t) => { window.__khClip = 'pending'; const p = write(t); p.then(() => { window.__khClip = 'took'; }, (e) => { window.__khClip = `refused (${e && e.name})`; }); return p; };
    });
    await inFrame(() => document.querySelector('[data-testid=evidence] button[aria-label^="Copy:"]').scrollIntoView({ block: 'center' }));
    await browser.clickFrame('[data-testid=evidence] button[aria-label^="Copy:"]');
    const clip = await until(() => window.__khClip !== 'pending' && window.__khClip !== 'not called' && window.__khClip, 'the clipboard to answer', 10000).catch(() => inFrame(() => window.__khClip));
    if (clip === 'not called') throw new Error('the click on Copy did not call the clipboard');
    await sleep(300);
    const shown = await inFrame(() => {
      const item = document.querySelector('[data-testid=evidence] .kh-evidence-item');
      return { label: item.querySelector('button').textContent.trim(), note: item.querySelector('.kh-copy-note').textContent.trim(),
        selected: String(getSelection()).slice(0, 60), errors: (window.__khErrors || []).slice() };
    });
    const said = `the clipboard ${clip}; the button says "${shown.label}"${shown.note ? `, the note "${shown.note}"` : ''}`;
    if (/took/.test(clip)) {
      if (shown.label !== 'Copied') throw new Error(`${said}: the clipboard took the text, but the button does not say Copied`);
    } else {
      if (/Copied/.test(shown.label)) throw new Error(`${said}: it says Copied though the clipboard ${clip}`);
      if (!/Ctrl\+C/.test(shown.note)) throw new Error(`${said}: no note saying to copy it by hand`);
      if (!shown.selected.includes('kubectl') && !shown.selected.includes('$')) throw new Error(`${said}: the command is not selected (selection "${shown.selected}")`);
    }
    if (shown.errors.length) throw new Error(`${said}; errors in the frame: ${shown.errors.join(' | ')}`);
    const console_ = browser.drain().filter((c) => !REFUSAL.test(c)), net = browser.requests().filter((x) => !x.startsWith('aborted'));
    if (console_.length || net.length) throw new Error(`${said}; console: ${console_.join(' | ')}; requests: ${net.join(' | ')}`);
    return said;
  }

  // ------------------------------------------------------------ one seed
  async function run(seed) {
    const started = Date.now();
    // Each seed starts as a new reader: a new browser, the default size,
    // motion as the system has it.
    const fresh = async () => {
      if (name === 'chromium') { await browser.restart(); await browser.reducedMotion(false); }
      else await browser.reducedMotion(false); // starts the browser again, as it was at first
      await browser.resize(1600, 1000);
    };
    try { await within(150000, fresh(), 'a new browser'); } catch (e) {
      console.log(`FINDING seed ${seed}, before action 1: the browser could not start: ${e.message}`);
      return { line: `${name}: seed ${seed}: not run (the browser could not start: ${e.message})`, findings: 1 };
    }
    browser.drain(); browser.requests();
    const st = { framed: false, href: '', loads: 0, motion: false, editorDone: 0 };
    const findings = [], recent = [];
    const counts = { refusals: 0, actions: 0, missed: 0, aborted: 0, notes: 0, printed: 0, popups: 0, loads: 0, restarts: 0, checks: 0 };
    const kinds = {};
    const E = (fn, ...a) => (st.framed ? browser.evalFrame(fn, ...a) : browser.eval(fn, ...a));
    const click = (sel, o) => (st.framed ? browser.clickFrame(sel, o) : browser.click(sel, o));
    const finding = (i, action, what) => {
      findings.push({ i, action, what });
      console.log(`FINDING seed ${seed}, action ${i} (${action}) at ${short(st.href)}: ${what}`);
      if (recent.length) console.log(`     the actions before it: ${recent.map((x) => `${x.i} ${x.action}`).join('; ')}`);
    };
    const short = (s) => (s.length > 300 ? `${s.slice(0, 300)}… (${s.length} characters)` : s);

    // Opens a new document of the app, top level.
    const openApp = async (hash, base = '/') => {
      st.framed = false;
      st.navigated = true;
      const url = `${appOrigin}${base}?probe&load=${++st.loads}${hash}`;
      st.href = url;
      counts.loads++;
      await browser.goto(url);
      await waitApp(15000);
    };
    // Opens the host page framing the app.
    const openHost = async (hash) => {
      st.navigated = true;
      const src = `${appOrigin}${SUB}?probe&load=${++st.loads}${hash}`;
      // The frame's size as the Embed button's snippet gives it (720×560);
      // a listed host then takes the height the page asks for.
      const url = `${hostOrigin}/?w=${[480, 720, 1000][st.loads % 3]}&h=560&src=${encodeURIComponent(src)}`;
      st.framed = true;
      st.href = src;
      counts.loads++;
      await browser.goto(url);
      await waitApp(15000);
    };
    // The app has started: its root, or a transcript, or the paste box.
    const waitApp = async (ms) => {
      const end = Date.now() + ms;
      for (;;) {
        try { if (await within(5000, E(() => !!document.querySelector('.kh, .kh-main-transcript, #kh-paste-text')), 'ready')) return true; } catch {}
        if (Date.now() > end) return false;
        await sleep(100);
      }
    };

    // What went wrong since the last look: in the page (the probe) and
    // through the driver (console, network).
    const collect = async (i, action) => {
      let page = null;
      for (let attempt = 0; attempt < 2 && !page; attempt++) {
        try {
          page = await within(5000, E(() => ({
            errors: window.__khErrors ? window.__khErrors.splice(0) : null, csp: window.__khCsp ? window.__khCsp.splice(0) : [],
            notes: window.__khNotes ? window.__khNotes.splice(0).length : 0, printed: window.__khPrinted ? (window.__khPrinted = 0, 1) : 0,
            href: location.href,
          })), 'reading the errors');
        } catch { await sleep(200); }
      }
      if (!page) {
        // The driver's idea of where it is may be stale (a back out of the
        // host page, a frame gone): the top document says.
        const top = await within(5000, browser.eval(() => location.href), 'where').catch(() => '');
        if (top.startsWith(hostOrigin) !== st.framed || (!st.framed && top)) {
          st.framed = top.startsWith(hostOrigin);
          if (!st.framed) st.href = top;
        }
      }
      if (page) {
        st.href = page.href;
        counts.notes += page.notes;
        counts.printed += page.printed;
      }
      const inPage = page?.errors ?? [];
      for (const e of inPage) finding(i, action, e.startsWith('unhandled rejection') ? e : e.startsWith('console.error') ? e : `page error: ${e}`);
      for (const c of page?.csp ?? []) finding(i, action, `CSP violation: ${c}`);
      for (const c of browser.drain()) {
        // The probe already recorded console.error calls made by the page.
        if (inPage.some((e) => e.includes(c.slice(0, 80)))) continue;
        if (REFUSAL.test(c)) { counts.refusals++; continue; }
        // Firefox rejects the fetches of a page left while it loads (the
        // wasm, the worker) and logs it: the same as a request aborted by
        // a navigation, only when this action navigated.
        if (st.navigated && NAV_ABORT.test(c)) { counts.aborted++; continue; }
        finding(i, action, `console: ${c}`);
      }
      for (const q of browser.requests()) {
        // Firefox ends a fetch of the page being left (its worker's wasm)
        // with NS_BASE_STREAM_CLOSED: an abort by this action's navigation.
        if (q.startsWith('aborted') || (st.navigated && /\((Browsing context already closed\.|NS_BASE_STREAM_CLOSED)\)$/.test(q))) { counts.aborted++; continue; }
        finding(i, action, `request: ${q}`);
      }
    };

    // Every 25 actions: the page answers (a frame, then a task) within
    // 5 s, and draws what it should.
    const checkpoint = async (i, action) => {
      counts.checks++;
      const t = Date.now();
      try {
        await within(5000, E(() => new Promise((ok) => requestAnimationFrame(() => setTimeout(() => ok(true), 0)))), 'a frame and a task');
      } catch (e) {
        finding(i, action, `hang: the page did not answer within 5 s (${e.name}: ${String(e.message).split('\n')[0]})`);
        await recover(i, action);
        return;
      }
      const answered = Date.now() - t;
      const drawn = () => {
        const svg = document.querySelector('.kh-canvas svg');
        if (svg) {
          const box = svg.getBoundingClientRect();
          const cards = svg.querySelectorAll('.kh-node-card').length;
          if (box.width > 0 && box.height > 0 && cards > 0) return 'canvas';
        }
        if (document.querySelector('.kh-main-transcript') && document.querySelector('.kh-main-transcript svg')) return 'transcript';
        // The presenter view (notes=1) has no canvas: its notes.
        if (document.querySelector('.kh-notes [data-testid=notes-current]')) return 'presenter view';
        // Your cluster: its paste box, or what the paste made (a cluster
        // may have no node to draw a card for).
        if (/^#\/your-cluster\b/.test(location.hash)) {
          if (svg && svg.getBoundingClientRect().width > 0 && svg.childElementCount > 0) return 'canvas of the paste';
          if (document.querySelector('#kh-paste-text, .kh-paste-error, .kh-paste-status')) return 'paste box';
        }
        return '';
      };
      const end = Date.now() + 10000;
      let what = '';
      for (;;) {
        try { what = await within(5000, E(drawn), 'drawn'); } catch { what = ''; }
        if (what || Date.now() > end) break;
        await sleep(200);
      }
      if (!what) {
        // What tells where start-up stopped: the first frame still up, the
        // page's wasm started (Trunk's wasmBindings), the page's life (a
        // pagehide and pageshow, persisted: out of and back from the
        // back-forward cache), the worker's loader fetched (and when), the
        // builds asked for.
        const seen = await E(() => ({ title: document.title, kh: !!document.querySelector('.kh'), canvas: !!document.querySelector('.kh-canvas'),
          svg: document.querySelector('.kh-canvas svg')?.getBoundingClientRect().toJSON(), first: document.documentElement.hasAttribute('data-first'),
          ready: document.readyState, at: Math.round(performance.now()), nav: performance.getEntriesByType('navigation')[0]?.type,
          wasm: typeof window.wasmBindings, life: window.__khLife,
          worker: performance.getEntriesByType('resource').filter((e) => /worker|_bg\.wasm/.test(e.name)).map((e) => `${e.name.split('/').pop().replace(/-[0-9a-f]{8,}/, '')}@${Math.round(e.startTime)}-${Math.round(e.responseEnd)}`),
          builds: performance.getEntriesByName('kh-build-start').length, built: performance.getEntriesByName('kh-build').length,
          text: document.body.innerText.slice(0, 200) })).catch((e) => e.message);
        finding(i, action, `lost canvas: nothing drawn 10 s after action ${i} (${JSON.stringify(seen)})`);
        const shot = join(out, `monkey-${name}-${seed}-${i}.png`);
        await browser.screenshot(shot).then(() => console.log(`     screenshot ${shot}`), () => {});
      }
      counts.popups += await browser.popups().catch(() => 0);
      if (VERBOSE) console.log(`     check at ${i}: answered in ${answered} ms, ${what || 'nothing drawn'}`);
    };

    // Whether the page evaluates a script within `ms`, asked again while
    // it has no context (in the middle of a navigation).
    const answers = async (ms) => {
      const end = Date.now() + ms;
      while (Date.now() < end) {
        try {
          await within(Math.max(250, end - Date.now()), browser.eval(() => 1), 'alive');
          return true;
        } catch (e) {
          if (e.name === 'MonkeyTimeout') return false;
          await sleep(200);
        }
      }
      return false;
    };
    // After a hang or a crash: a new browser, and the link it was at.
    const recover = async (i, action) => {
      counts.restarts++;
      try { await within(60000, browser.restart(), 'restart'); } catch (e) {
        console.log(`     restart failed: ${e.message}`);
        throw Object.assign(new Error(`the browser could not be started again after action ${i}: ${e.message}`), { name: 'MonkeyGone' });
      }
      st.framed = false;
      browser.drain(); browser.requests();
      await within(30000, openApp('#/nodeport-loadbalancer/1'), 'open').catch(() => {});
    };

    // ---------------------------------------------------------- the actions
    const act = {
      // A real click on a visible control, chosen in the page.
      async click(r) {
        const got = await E((x) => {
          for (const el of document.querySelectorAll('[data-monkey]')) el.removeAttribute('data-monkey');
          const all = [...document.querySelectorAll('button, a[href], summary, input[type=checkbox], input[type=radio], [role=tab], [role=button], [role=switch], [tabindex]:not([tabindex="-1"])')];
          const seen = all.filter((el) => {
            if (el.disabled || el.closest('[hidden], [inert]') || el.matches('input[type=file], select, textarea')) return false;
            const b = el.getBoundingClientRect();
            if (b.width < 1 || b.height < 1) return false;
            const s = getComputedStyle(el);
            return s.visibility !== 'hidden' && s.display !== 'none';
          });
          if (!seen.length) return null;
          // One the pointer can reach (not under a bar or a card): the
          // chosen one, or the next few after it.
          const reachable = (el) => {
            el.scrollIntoView({ block: 'center', inline: 'center' });
            const b = el.getBoundingClientRect();
            const hit = document.elementFromPoint(b.left + b.width / 2, b.top + b.height / 2);
            return hit && (el === hit || el.contains(hit) || hit.contains(el) || (el.labels && [...el.labels].some((l) => l.contains(hit))));
          };
          const first = Math.floor(x * seen.length);
          let el = seen[first];
          for (let k = 0; k < Math.min(6, seen.length); k++) {
            const c = seen[(first + k) % seen.length];
            if (reachable(c)) { el = c; break; }
          }
          el.setAttribute('data-monkey', '');
          const words = (el.getAttribute('aria-label') || el.textContent || el.getAttribute('title') || '').replace(/\s+/g, ' ').trim().slice(0, 50);
          return `${el.tagName.toLowerCase()}${el.getAttribute('role') ? `[role=${el.getAttribute('role')}]` : ''} "${words}"`;
        }, r.next());
        if (!got) return 'click: no visible control';
        st.doing = `click ${got}`;
        // Reachable was checked above: a reader clicks a control that moves.
        // A click that cannot land in 1.5 s is a miss (a frame that will not
        // scroll its control into view): waiting longer finds nothing more.
        await click('[data-monkey]', { force: true, timeout: 1500 });
        if (/Presenter view/.test(got)) counts.popups += await browser.popups();
        return `click ${got}`;
      },
      // A choice in a menu, as the browser's menu makes it.
      async select(r) {
        const got = await E((x, y) => {
          const all = [...document.querySelectorAll('select')].filter((s) => !s.disabled && s.getBoundingClientRect().width > 0 && s.options.length);
          if (!all.length) return null;
          const s = all[Math.floor(x * all.length)];
          const o = s.options[Math.floor(y * s.options.length)];
          s.focus();
          s.value = o.value;
          s.dispatchEvent(new Event('input', { bubbles: true }));
          s.dispatchEvent(new Event('change', { bubbles: true }));
          return `${s.id || s.getAttribute('aria-label') || 'select'} = ${o.value}`;
        }, r.next(), r.next());
        return got ? `choose ${got}` : 'choose: no menu';
      },
      async key(r) {
        const k = r.pick(KEYS);
        const n = k === 'Tab' ? r.range(1, 6) : 1;
        for (let j = 0; j < n; j++) await browser.press(k);
        if (k === 'n' || k === 'Enter') counts.popups += await browser.popups();
        return `key ${JSON.stringify(k)}${n > 1 ? ` ×${n}` : ''}`;
      },
      async scroll(r) {
        const [x, y] = [r.next(), r.next()];
        await E((x, y) => scrollTo(x * document.documentElement.scrollWidth, y * document.documentElement.scrollHeight), x, y);
        return `scroll to ${Math.round(x * 100)}%, ${Math.round(y * 100)}%`;
      },
      async wait(r) {
        const ms = r.pick([100, 300, 800]);
        await sleep(ms);
        return `wait ${ms} ms`;
      },
      // A link put in the address bar of the same document.
      async hash(r) {
        const h = link(r);
        if (!st.href.startsWith(appOrigin)) { await openApp(h); return `load (no app to change) ${short(h)}`; }
        await E((h) => { location.hash = h; }, h);
        return `hash ${short(h)}`;
      },
      // A link opened as a new document.
      async load(r) {
        const h = link(r);
        const base = r.chance(0.3) ? SUB : '/';
        await openApp(h, base);
        return `load ${base}…${short(h)}`;
      },
      async resize(r) {
        const [w, h] = r.chance(0.7) ? r.pick(SIZES) : [r.range(320, 3840), r.range(480, 2160)];
        await browser.resize(w, h);
        return `window ${w}×${h}`;
      },
      async reload() {
        st.navigated = true;
        await browser.reload();
        await waitApp(15000);
        return 'reload';
      },
      async back() {
        st.navigated = true;
        if (st.framed) {
          // Back from the top page: it may take only the frame back (the
          // session history is joint), so no top-level navigation to wait for.
          await browser.eval(() => history.back());
          await sleep(500);
          const top = await browser.eval(() => location.href).catch(() => '');
          if (!top.startsWith(hostOrigin)) { st.framed = false; st.href = top; }
        } else await E(() => history.back());
        await sleep(300);
        const where = await E(() => location.href).catch(() => '');
        if (!where.startsWith(appOrigin)) await openApp('#/nodeport-loadbalancer/1');
        else await waitApp(15000);
        return `back${where.startsWith(appOrigin) ? '' : ' (left the app; opened it again)'}`;
      },
      async motion() {
        st.motion = !st.motion;
        const [where, framed] = [st.href, st.framed];
        const how = await browser.reducedMotion(st.motion);
        if (name !== 'chromium') {
          // The browser started again: the same link.
          const hash = where.includes('#') ? where.slice(where.indexOf('#')) : '#/nodeport-loadbalancer/1';
          if (framed) await openHost(hash);
          else await openApp(hash);
        }
        return `reduced motion ${st.motion ? 'on' : 'off'} (${how})`;
      },
      // The manifest editor: valid, broken or huge text, typed or set.
      async editor(r) {
        if (st.framed) await openApp('#/service-types/1/end?client=laptop');
        const toggle = '.kh-manifest .kh-card-head button[aria-pressed]';
        let there = await E((t) => !!document.querySelector(t), toggle).catch(() => false);
        if (!there) {
          const h = `#/service-types/${r.range(1, 4)}/end?${r.pick(['client=laptop', 'tab=nodeport', 'tab=headless', 'tab=loadbalancer&client=laptop'])}`;
          await E((h) => { location.hash = h; }, h);
          const end = Date.now() + 5000;
          while (!there && Date.now() < end) { await sleep(100); there = await E((t) => !!document.querySelector(t), toggle).catch(() => false); }
          if (!there) return `editor: no manifest card at ${h}`;
        }
        if (!(await E(() => !!document.querySelector('.kh-editor-text')))) {
          st.doing = 'editor: open it';
          await click(toggle);
          const end = Date.now() + 3000;
          while (!(await E(() => !!document.querySelector('.kh-editor-text'))) && Date.now() < end) await sleep(100);
        }
        const kind = r.weighted([[30, 'valid'], [40, 'mutated'], [10, 'bad paste'], [10, 'big'], [10, 'junk']]);
        let text = null, big = null;
        if (kind === 'valid') text = r.pick(goodManifests);
        else if (kind === 'mutated') text = mutate(r, r.pick(goodManifests));
        else if (kind === 'bad paste') text = r.pick(badPastes);
        else if (kind === 'big') big = [r.pick(BIG.filter((b) => b !== 'over-limit')), r.pick([100, 1000, 10000])];
        else text = Array.from({ length: r.range(1, 200) }, () => r.pick([...WORDS, ...JUNK])).join('');
        const done = await E((text, big) => {
          const a = document.querySelector('.kh-editor-text');
          if (!a) return false;
          const t = big ? window.__khBig(...big) : text;
          a.focus();
          a.value = t;
          a.dispatchEvent(new InputEvent('input', { bubbles: true, inputType: 'insertFromPaste' }));
          a.setSelectionRange(t.length, t.length);
          return true;
        }, text, big);
        let typed = '';
        if (done && r.chance(0.3)) {
          typed = Array.from({ length: r.range(1, 5) }, () => r.pick(['4', '0', 'a', ' ', '\n', ':', '-'])).join('');
          await browser.type('.kh-editor-text', typed);
        }
        if (r.chance(0.15)) await browser.press('Escape');
        return `editor ${kind}${big ? ` ${big[0]}×${big[1]}` : ` (${text.length} characters)`}${typed ? ` then typed ${JSON.stringify(typed)}` : ''}${done ? '' : ' (no editor open)'}`;
      },
      // The paste box: pasted, typed, dropped as a file; valid, broken, huge.
      async paste(r) {
        const here = !st.framed && /#\/your-cluster\b/.test(st.href);
        if (!here) {
          if (st.framed) await openApp('#/your-cluster/1');
          else await E(() => { location.hash = '#/your-cluster/1'; });
          const end = Date.now() + 5000;
          while (!(await E(() => !!document.querySelector('#kh-paste-text')).catch(() => false)) && Date.now() < end) await sleep(100);
        }
        const kind = r.weighted([[35, 'valid'], [25, 'mutated'], [15, 'bad'], [10, 'big'], [5, 'over-limit'], [10, 'junk']]);
        const how = r.weighted([[50, 'paste'], [25, 'input'], [25, 'drop']]);
        let text = null, big = null;
        if (kind === 'valid') text = r.pick(goodPastes);
        else if (kind === 'mutated') text = mutate(r, r.pick(goodPastes));
        else if (kind === 'bad') text = r.pick(badPastes);
        else if (kind === 'big') big = [r.pick(BIG.filter((b) => b !== 'over-limit')), r.pick([100, 1000, 20000])];
        else if (kind === 'over-limit') big = ['over-limit', 0];
        else text = Array.from({ length: r.range(1, 300) }, () => r.pick([...WORDS, ...JUNK])).join('');
        const done = await E((text, big, how) => {
          const area = document.querySelector('#kh-paste-text');
          if (!area) return false;
          const t = big ? window.__khBig(...big) : text;
          area.focus();
          if (how === 'drop') {
            const dt = new DataTransfer();
            dt.items.add(new File([t], 'cluster.yaml', { type: 'text/yaml' }));
            area.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
            area.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
          } else if (how === 'paste') {
            const dt = new DataTransfer();
            dt.setData('text/plain', t);
            if (area.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }))) {
              area.value = t;
              area.dispatchEvent(new InputEvent('input', { bubbles: true, inputType: 'insertFromPaste' }));
            }
          } else {
            area.value = t;
            area.dispatchEvent(new InputEvent('input', { bubbles: true, inputType: 'insertText' }));
          }
          return true;
        }, text, big, how);
        return `paste box ${how} ${kind}${big ? ` ${big[0]}${big[1] ? `×${big[1]}` : ''}` : ` (${text.length} characters)`}${done ? '' : ' (no paste box)'}`;
      },
      // The embed protocol: a host page on another origin frames the app
      // and sends valid and invalid messages; or the app's own window
      // posts to itself (an origin not listed).
      async embed(r) {
        if (!st.framed) {
          const pairs = ['embed=1'];
          if (r.chance(0.85)) pairs.push(`origins=${r.chance(0.9) ? hostOrigin : 'http://127.0.0.1:1'}`);
          if (r.chance(0.3)) pairs.push(r.pick(['controls=minimal', 'controls=none', 'controls=full', 'autoplay=1', 'theme=dark', 'notes=1']));
          const scenario = r.pick(Object.keys(SCENARIOS).filter((s) => s !== 'your-cluster'));
          const h = `#/${scenario}/${r.range(1, SCENARIOS[scenario])}${r.chance(0.5) ? '/end' : ''}?${pairs.join('&')}`;
          await openHost(h);
          return `embed: a host page frames ${h}`;
        }
        const n = r.range(1, 4);
        const msgs = Array.from({ length: n }, () => message(r));
        const self = r.chance(0.15);
        await (self ? browser.evalFrame : browser.eval)((ms, self) => {
          const special = {
            date: () => new Date(0), map: () => new Map([[1, 2]]), bytes: () => new Uint8Array(16), nan: () => ({ type: 'kubehops:set', version: 1, step: NaN }),
            inf: () => ({ type: 'kubehops:set', version: 1, step: Infinity }), neg0: () => ({ type: 'kubehops:set', version: 1, step: -0 }),
            big: () => ({ type: 'kubehops:set', version: 1, scenario: 'x'.repeat(1 << 20) }), deep: () => { let o = {}; const top = o; for (let i = 0; i < 5000; i++) { o.a = {}; o = o.a; } return top; },
            cycle: () => { const o = { type: 'kubehops:get', version: 1 }; o.id = o; return o; }, undef: () => undefined, sparse: () => [, , 1],
            wide: () => Object.fromEntries(Array.from({ length: 10000 }, (_, i) => [`k${i}`, i])),
          };
          for (const m of ms) {
            const data = m && m.$special ? special[m.$special]() : m;
            if (self) window.postMessage(data, '*');
            else window.send(data);
          }
        }, msgs, self);
        await sleep(r.pick([0, 100, 400]));
        return `embed: ${self ? 'the app posts to itself' : 'the host sends'} ${msgs.map((m) => short(JSON.stringify(m) ?? String(m))).join(', ')}`;
      },
    };

    // A protocol message, valid or not.
    function message(r) {
      const v = () => r.weighted([[85, 1], [5, 2], [5, '1'], [5, undefined]]);
      const id = () => r.pick([undefined, r.int(1000), `q${r.int(100)}`, null, [1], { x: 1 }]);
      const step = () => r.weighted([[70, r.range(1, 10)], [10, 0], [5, -1], [5, 1.5], [5, '2'], [5, 1e300]]);
      const valid = () => r.weighted([
        [20, { type: 'kubehops:get', version: v(), id: id() }],
        [15, { type: 'kubehops:next', version: v() }],
        [15, { type: 'kubehops:previous', version: v() }],
        [15, { type: 'kubehops:set', version: v(), id: id(), step: step() }],
        [10, { type: 'kubehops:set', version: v(), hop: r.pick(['end', 0, 1, 2, 5, 99, -1, 'start']) }],
        [10, { type: 'kubehops:set', version: v(), playing: r.pick([true, false, 'yes', 1]) }],
        [8, { type: 'kubehops:set', version: v(), scenario: r.pick([...Object.keys(SCENARIOS), 'nope', '']), step: r.chance(0.5) ? step() : undefined }],
        [5, { type: 'kubehops:set', version: v(), mode: r.pick(['iptables', 'nftables', 'ipvs', '']), network: r.pick(['routed', 'vxlan', 'geneve', undefined]) }],
        [5, { type: 'kubehops:set', version: v(), handshake: r.pick([true, false, 'true']) }],
        [3, { type: 'kubehops:set', version: v() }],
      ]);
      return r.weighted([
        [70, () => JSON.parse(JSON.stringify(valid()))],
        [10, () => ({ ...valid(), extra: 1 })],
        [8, () => r.pick([null, 'kubehops:get', 42, true, [], {}, { type: 'other-lib', version: 1 }, { type: 'KUBEHOPS:GET', version: 1 }])],
        [12, () => ({ $special: r.pick(['date', 'map', 'bytes', 'nan', 'inf', 'neg0', 'big', 'deep', 'cycle', 'undef', 'sparse', 'wide']) })],
      ])();
    }

    const TABLE = [[300, 'click'], [170, 'key'], [45, 'select'], [30, 'scroll'], [30, 'wait'], [90, 'hash'], [45, 'load'], [50, 'resize'],
      [60, 'editor'], [50, 'paste'], [70, 'embed'], [25, 'reload'], [15, 'back'], [4, 'motion']];

    console.log(`${name}: seed ${seed}: ${ACTIONS} actions`);
    await openApp('#/nodeport-loadbalancer/1');
    try {
    for (let i = 1; i <= ACTIONS; i++) {
      const r = rng(seed, i);
      const kind = r.weighted(TABLE);
      kinds[kind] = (kinds[kind] ?? 0) + 1;
      counts.actions++;
      const t = Date.now();
      let action = kind;
      st.doing = '';
      st.navigated = false;
      try {
        action = await within(kind === 'motion' ? 90000 : 30000, act[kind](r), kind);
      } catch (e) {
        if (e.name === 'MonkeyTimeout') {
          finding(i, action, `hang: the action did not finish in ${kind === 'motion' ? 90 : 30} s`);
          await recover(i, action);
        } else {
          // The driver could not do it (a control that moved or went,
          // a document going away): a miss, unless the browser is gone.
          counts.missed++;
          const why = String(e.message ?? e).split('\n');
          action = `${st.doing || kind} (missed: ${why[0].slice(0, 120)}${VERBOSE ? ` ${why.slice(1, 6).join(' / ').slice(0, 400)}` : ''})`;
          const crash = await browser.crashed(e).catch(() => '');
          // A page in the middle of a navigation (a step back) has no
          // context to evaluate in for a moment: it is asked again until
          // it answers, for up to 5 s.
          const alive = await answers(5000);
          if (crash || !alive) {
            finding(i, action, crash ? `crash: ${crash}` : `the page stopped answering after the driver failed: ${e.name}: ${String(e.message).split('\n')[0]}`);
            await recover(i, action);
          }
        }
      }
      await collect(i, action);
      if (VERBOSE) console.log(`${i} ${action} (${Date.now() - t} ms) ${short(st.href)}`);
      recent.push({ i, action: short(action) });
      if (recent.length > 8) recent.shift();
      if (i % 25 === 0) { await checkpoint(i, action); await collect(i, action); }
      if (i % 100 === 0) console.log(`${name}: seed ${seed}: ${i} actions, ${findings.length} finding(s), ${((Date.now() - started) / 1000).toFixed(0)} s`);
    }
    } catch (e) {
      if (e.name !== 'MonkeyGone') throw e;
      finding(counts.actions, 'restart', `browser gone: ${e.message}; the rest of this seed is not run`);
    }
    const seconds = (Date.now() - started) / 1000;
    const kindsText = Object.entries(kinds).sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${n}`).join(', ');
    const sum = {};
    for (const f of findings) { const k = f.what.split(':')[0]; sum[k] = (sum[k] ?? 0) + 1; }
    const line = `${name}: seed ${seed}: ${counts.actions} actions in ${seconds.toFixed(1)} s, ${findings.length} finding(s)${findings.length ? ` (${Object.entries(sum).map(([k, n]) => `${k} ${n}`).join(', ')})` : ''}; ` +
      `${counts.checks} checks, ${counts.loads} loads, ${counts.missed} missed, ${counts.restarts} restarts, ${counts.aborted} aborted requests, ` +
      `${counts.popups} windows closed, ${counts.printed} prints, ${counts.refusals} refusals said by the browser, ${counts.notes} ResizeObserver notes; ${kindsText}`;
    return { line, findings: findings.length };
  }
}

// ---------------------------------------------------------------- start (after every declaration above)
if (!CHILD) await parent();
else await child(names[0], seedArg.slice('--seeds='.length).split(',').map(Number));
