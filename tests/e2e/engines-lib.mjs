// What tests/e2e/engines.mjs and tests/e2e/monkey.mjs share: the three
// browser engines behind one small driver interface, the test server with
// its error probe and the embedding host page, the parent that runs one
// child process per engine, and polling.
//
// - Chromium: Debian's chromium through playwright-core (never downloads a
//   browser), with run.mjs's flags.
// - Firefox: Debian's firefox-esr through puppeteer-core over WebDriver
//   BiDi (no geckodriver).
// - WebKit: WebKitGTK's MiniBrowser under an Xvfb started on a free
//   display, through WebKitWebDriver and selenium-webdriver. Its WebDriver
//   gives no console and no network events: what the page did wrong is
//   recorded inside the page by the probe script (below).
//
// Every driver gives: version, goto, reload, back, eval (a function and its
// arguments, in the page), evalFrame (in the page's first iframe), press (a
// key), click and type (at a CSS selector, as a user would; click takes
// { force, timeout }, which Chromium's actionability wait reads), clickFrame (in
// the iframe), resize (the viewport, in CSS pixels), reducedMotion (emulate
// prefers-reduced-motion, or say why it cannot), popups (close the other
// windows; say how many), drain (console errors since the last drain),
// requests (failed or foreign requests since the last one, where the
// driver sees the network), screenshot, crashed (whether an error came
// from a crashed content process), restart and quit; and sees, what the
// driver itself can observe.
import { spawn, execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import { readFile, writeFile, mkdir, mkdtemp } from 'node:fs/promises';
import { join, extname, resolve, dirname } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';

export const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/// `p`, or an error named `name` once `ms` have passed without an answer.
export const bounded = (ms, p, what, name = 'Timeout') => {
  let timer;
  const late = new Promise((_, no) => { timer = setTimeout(() => { const e = new Error(`${what}: no answer in ${ms / 1000} s`); e.name = name; no(e); }, ms); });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
};

// ---------------------------------------------------------------- the probe
// Put first in index.html's head when the address has `?probe` (an
// external script, same origin, so the Content-Security-Policy allows it):
// records uncaught errors, unhandled rejections, console.error calls and
// CSP violations in the page itself.
export const PROBE = `(() => {
  const errors = (window.__khErrors = []), csp = (window.__khCsp = []), notes = (window.__khNotes = []);
  const text = (v) => { try { return v instanceof Error ? v.name + ': ' + v.message : typeof v === 'string' ? v : JSON.stringify(v); } catch (e) { return String(v); } };
  addEventListener('error', (e) => {
    if (e.target && e.target !== window) errors.push('failed to load ' + (e.target.src || e.target.href || e.target.tagName));
    // Not an exception: the spec reports, as an error event, resize
    // notifications left for the next frame. Kept apart and printed.
    else if (/^ResizeObserver loop/.test(e.message)) notes.push(e.message);
    // With the error's stack, a wasm trap's names the Rust functions it
    // went through (when the wasm keeps its names).
    else errors.push('uncaught ' + e.message + ' (' + e.filename + ':' + e.lineno + ')' + (e.error && e.error.stack ? '; stack: ' + String(e.error.stack).split('\\n').slice(0, 40).join(' <- ') : ''));
  }, true);
  addEventListener('unhandledrejection', (e) => errors.push('unhandled rejection ' + text(e.reason)));
  const original = console.error;
  console.error = function (...a) { errors.push('console.error ' + a.map(text).join(' ')); return original.apply(this, a); };
  document.addEventListener('securitypolicyviolation', (e) => csp.push(e.violatedDirective + ' ' + e.blockedURI));
})();
`;

// ---------------------------------------------------------------- the servers
// The host page of embed.mjs: an iframe (no `allow`: no clipboard, no full
// screen) sized by the height message, driven by window.send.
const HOST_JS = `
const q = new URLSearchParams(location.search);
const f = document.createElement('iframe');
f.src = q.get('src');
f.title = 'KubeHops';
f.width = q.get('w') ?? '720';
f.height = q.get('h') ?? '200';
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

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.css': 'text/css', '.svg': 'image/svg+xml' };
const listen = (s) => new Promise((ok) => s.listen(0, '127.0.0.1', () => ok(`http://127.0.0.1:${s.address().port}`)));

/// dist/ (`root`) at / and, with the README's Content-Security-Policy,
/// under /kh/ (as a documentation site would host it); with ?probe in the
/// address, index.html gets the probe (and `probeExtra` after it) first in
/// its head. Under /slow/, every wasm sends its first kilobyte and the
/// rest 3 s later (a slow network; `slowWasm()` counts them). Beside it,
/// on another loopback origin, the host page.
/// Resolves to { appOrigin, hostOrigin, SUB, SLOW, slowWasm, close }.
export async function serve(root, { probeExtra = '' } = {}) {
  const SUB = '/kh/', SLOW = '/slow/';
  const CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' blob:";
  let slowWasm = 0;
  const app = createServer(async (req, res) => {
    const url = new URL(req.url, 'http://x');
    let path, slow = false;
    try { path = decodeURIComponent(url.pathname); } catch { res.writeHead(400).end(); return; }
    const headers = {};
    if (path.startsWith(SUB)) { path = path.slice(SUB.length - 1); headers['content-security-policy'] = CSP; }
    if (path.startsWith(SLOW)) { path = path.slice(SLOW.length - 1); slow = extname(path) === '.wasm'; }
    if (path === '/kh-e2e-probe.js') { res.writeHead(200, { ...headers, 'content-type': 'text/javascript' }).end(PROBE + probeExtra); return; }
    const file = join(root, path === '/' ? 'index.html' : path);
    if (!file.startsWith(root)) { res.writeHead(403).end(); return; }
    try {
      let body = await readFile(file);
      if (path === '/' && url.searchParams.has('probe')) {
        body = body.toString('utf8').replace(/<head>/, '<head><script src="kh-e2e-probe.js"></script>');
      }
      res.writeHead(200, { ...headers, 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store' });
      if (slow) {
        slowWasm++;
        res.write(body.subarray(0, 1024));
        await sleep(3000);
        body = body.subarray(1024);
      }
      res.end(body);
    } catch {
      res.writeHead(404).end('not found');
    }
  });
  const host = createServer((req, res) => {
    const path = new URL(req.url, 'http://x').pathname;
    if (path === '/host.js') { res.writeHead(200, { 'content-type': 'text/javascript' }).end(HOST_JS); return; }
    // Firefox asks for it after a history traversal, whatever the page's icon link says.
    if (path === '/favicon.ico') { res.writeHead(204).end(); return; }
    if (path === '/') {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><html><head><title>host</title><link rel="icon" href="data:,"></head><body style="margin:0"><script src="/host.js"></script></body></html>');
      return;
    }
    res.writeHead(404).end();
  });
  const appOrigin = await listen(app);
  const hostOrigin = await listen(host);
  return { appOrigin, hostOrigin, SUB, SLOW, slowWasm: () => slowWasm, close: () => { app.close(); host.close(); } };
}

// ---------------------------------------------------------------- one child per engine
/// Runs `script name ...args` for each engine name at once, each line
/// printed with its engine's name; resolves to each one's exit code, time
/// and its summary line (the last line starting with `${tag} ${name}:`).
/// Runs `script name ...args` for each engine in parallel, its lines
/// prefixed with the engine's name. A child still running after
/// `deadline` seconds is stopped with its whole process group (its
/// browser, Xvfb, WebKitWebDriver): a driver that never answers must fail
/// the run, not hold CI until its own time limit.
export function runChildren(script, names, args, tag, deadline = 1200) {
  return Promise.all(names.map((name) => new Promise((done) => {
    const start = Date.now();
    const p = spawn(process.execPath, [script, name, ...args], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let summary = '', late = false;
    const kill = (sig) => { try { process.kill(-p.pid, sig); } catch {} };
    const timer = setTimeout(() => {
      late = true;
      console.log(`[${name}] STOPPED: still running after ${deadline} s; its process group is killed`);
      kill('SIGTERM');
      setTimeout(() => kill('SIGKILL'), 5000).unref();
    }, deadline * 1000);
    process.on('exit', () => kill('SIGKILL'));
    for (const stream of [p.stdout, p.stderr]) {
      createInterface({ input: stream }).on('line', (line) => {
        if (line.startsWith(`${tag} ${name}:`)) summary = line;
        console.log(`[${name}] ${line}`);
      });
    }
    let ended = false;
    const end = (code, signal) => {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      done({ name, code: late ? 1 : code ?? 1, signal, seconds: (Date.now() - start) / 1000, summary: late ? '' : summary, late });
    };
    p.on('close', end);
    // A browser left behind may hold the pipes open: the child's exit is enough.
    p.on('exit', (code, signal) => setTimeout(() => end(code, signal), 10000).unref());
  })));
}

// ---------------------------------------------------------------- polling
/// Polls `fn` in the page (or its iframe) until it returns something
/// truthy; an error (no frame yet, a document going away) is retried
/// until the time is up, but for a session that is gone.
export async function waitFor(browser, fn, fnArgs = [], what = 'condition', timeout = 20000, inFrame = false) {
  const end = Date.now() + timeout;
  let last, error;
  for (;;) {
    try { last = await (inFrame ? browser.evalFrame(fn, ...fnArgs) : browser.eval(fn, ...fnArgs)); error = undefined; }
    catch (e) {
      if (e.name === 'NoSuchSessionError') throw e;
      last = undefined; error = e;
    }
    if (last) return last;
    if (Date.now() > end) {
      const err = new Error(`timed out after ${timeout} ms waiting for ${what} (${error ? `last error: ${error.message}` : `last: ${JSON.stringify(last)}`})`);
      if (error) err.name = error.name;
      throw err;
    }
    await sleep(100);
  }
}

// ---------------------------------------------------------------- the drivers
export const ENGINES = ['chromium', 'firefox', 'webkit'];

/// Starts `name`'s browser. Options: viewport ({width, height}), screen
/// (Xvfb's, for WebKit: the largest window it can have).
export function launch(name, opts = {}) {
  const o = { viewport: { width: 1600, height: 1000 }, screen: '1920x1200', ...opts };
  return { chromium, firefox, webkit }[name](o);
}

function which(cmd) {
  try { return execFileSync('sh', ['-c', `command -v ${cmd}`]).toString().trim(); } catch { return ''; }
}

/// In a string, for the drivers that evaluate one: `fn` applied to `a`.
const applied = (fn, a) => `(${fn}).apply(null, ${JSON.stringify(a)})`;

/// Network events as the monkey counts them: HTTP >= 400, a failure
/// (an abort by a navigation is kept apart: not the server's nor the
/// page's doing) and any request to an origin not in `allowed`.
function netLog() {
  let list = [];
  const allowed = new Set();
  const foreign = (url) => /^https?:/.test(url) && !allowed.has(new URL(url).origin);
  return {
    allow: (...origins) => origins.forEach((o) => allowed.add(o)),
    request: (url) => { if (foreign(url)) list.push(`request to another origin: ${url}`); },
    status: (url, status) => { if (status >= 400) list.push(`HTTP ${status} ${url}`); },
    failed: (url, why) => list.push(`${/abort|cancel/i.test(why) ? 'aborted' : 'failed'}: ${url.slice(0, 300)} (${why})`),
    drain: () => { const l = list; list = []; return l; },
  };
}

/// A page's console errors and uncaught errors (into `errors`) and its
/// requests (into `net`): Playwright and Puppeteer name the events alike.
function watchPage(p, errors, net) {
  p.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  p.on('pageerror', (e) => errors.push(String(e)));
  p.on('request', (r) => net.request(r.url()));
  p.on('response', (r) => net.status(r.url(), r.status()));
  p.on('requestfailed', (r) => { if (!/^(blob|data):/.test(r.url())) net.failed(r.url(), r.failure()?.errorText ?? '?'); });
}

async function chromium(o) {
  const { chromium: pw } = await import('playwright-core');
  const executablePath = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';
  const args = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'];
  let context, page, crash = '';
  const errors = [];
  const net = netLog();
  const watch = (p) => {
    watchPage(p, errors, net);
    p.on('crash', () => { crash = 'the page crashed (playwright\'s crash event)'; });
  };
  const start = async () => {
    context = await pw.launchPersistentContext(await mkdtemp(join(tmpdir(), 'kubehops-chromium-')), {
      executablePath, headless: true, args, viewport: o.viewport, acceptDownloads: true,
    });
    context.on('page', watch);
    page = context.pages()[0];
    if (page) watch(page);
    else page = await context.newPage();
  };
  await start();
  const frame = () => page.frames().find((f) => f !== page.mainFrame());
  return {
    name: 'chromium',
    sees: { console: true, network: true },
    version: `${execFileSync(executablePath, ['--version']).toString().trim()} (${executablePath}, playwright-core)`,
    goto: (url) => page.goto(url, { waitUntil: 'load' }),
    reload: () => page.reload({ waitUntil: 'load' }),
    back: () => page.goBack(),
    eval: (fn, ...a) => page.evaluate(applied(fn, a)),
    evalFrame: (fn, ...a) => frame().evaluate(applied(fn, a)),
    press: (key) => page.keyboard.press(key),
    // force: no wait for the element to stand still (the monkey has checked in
    // the page that the pointer reaches it; a reader clicks a moving control).
    click: (sel, { force = false, timeout = 2000 } = {}) => page.click(sel, { timeout, force }),
    clickFrame: (sel, { force = false, timeout = 5000 } = {}) => frame().click(sel, { timeout, force }),
    type: (sel, text) => page.type(sel, text, { timeout: 2000 }),
    resize: (w, h) => page.setViewportSize({ width: w, height: h }),
    reducedMotion: async (on) => { await page.emulateMedia({ reducedMotion: on ? 'reduce' : 'no-preference' }); return 'emulated (playwright emulateMedia)'; },
    popups: async () => { const others = context.pages().filter((p) => p !== page); for (const p of others) await p.close(); return others.length; },
    screenshot: (path) => page.screenshot({ path }),
    drain: () => errors.splice(0),
    requests: () => net.drain(),
    allow: net.allow,
    crashed: async () => { const c = crash; crash = ''; return c; },
    restart: async () => { try { await bounded(15000, context.close(), 'close'); } catch {} await start(); },
    quit: () => context.close(),
  };
}

async function firefox(o) {
  const { default: puppeteer } = await import('puppeteer-core');
  const executablePath = process.env.FIREFOX_BIN ?? which('firefox-esr');
  if (!executablePath) throw new Error('firefox-esr is not on PATH (scripts/setup installs it)');
  const downloads = await mkdtemp(join(tmpdir(), 'kubehops-firefox-downloads-'));
  let browser, page, reduced = false, size = o.viewport;
  const errors = [];
  const net = netLog();
  const watch = (p) => watchPage(p, errors, net);
  // prefers-reduced-motion has no emulation over BiDi: it is Firefox's
  // preference ui.prefersReducedMotion, set when the browser starts.
  const start = async () => {
    browser = await puppeteer.launch({
      browser: 'firefox', headless: true, executablePath, defaultViewport: size,
      extraPrefsFirefox: {
        'ui.prefersReducedMotion': reduced ? 1 : 0,
        'browser.download.folderList': 2, 'browser.download.dir': downloads, 'browser.download.useDownloadDir': true,
        'browser.download.always_ask_before_handling_new_types': false,
      },
    });
    browser.on('targetcreated', async (t) => { const p = await t.page().catch(() => null); if (p && p !== page) watch(p); });
    page = (await browser.pages())[0] ?? await browser.newPage();
    await page.setViewport(size);
    watch(page);
  };
  await start();
  const frame = () => page.frames().find((f) => f !== page.mainFrame());
  const version = `Firefox ${(await browser.version()).replace(/^firefox\//, '')} (${executablePath}, puppeteer-core over WebDriver BiDi)`;
  return {
    name: 'firefox',
    sees: { console: true, network: true },
    version,
    goto: (url) => page.goto(url, { waitUntil: 'load' }),
    reload: () => page.reload({ waitUntil: 'load' }),
    back: () => page.goBack(),
    eval: (fn, ...a) => page.evaluate(fn, ...a),
    evalFrame: (fn, ...a) => frame().evaluate(fn, ...a),
    press: (key) => page.keyboard.press(key),
    click: (sel) => page.click(sel),
    clickFrame: (sel) => frame().click(sel),
    type: (sel, text) => page.type(sel, text),
    resize: async (w, h) => { size = { width: w, height: h }; await page.setViewport(size); },
    reducedMotion: async (on) => {
      reduced = on;
      try { await bounded(15000, browser.close(), 'close'); } catch { browser.process()?.kill('SIGKILL'); }
      await start();
      return 'Firefox restarted with ui.prefersReducedMotion (no emulation over BiDi)';
    },
    popups: async () => { const others = (await browser.pages()).filter((p) => p !== page); for (const p of others) await p.close(); return others.length; },
    screenshot: (path) => page.screenshot({ path }),
    drain: () => errors.splice(0),
    requests: () => net.drain(),
    allow: net.allow,
    crashed: async () => '',
    restart: async () => { try { await bounded(15000, browser.close(), 'close'); } catch { browser.process()?.kill('SIGKILL'); } await start(); },
    quit: () => browser.close(),
  };
}

async function webkit(o) {
  const { Builder, Capabilities, Key, By } = (await import('selenium-webdriver')).default;
  const miniBrowser = process.env.MINIBROWSER_BIN ??
    execFileSync('dpkg', ['-L', 'libwebkit2gtk-4.1-0']).toString().split('\n').find((l) => l.endsWith('/MiniBrowser'));
  if (!miniBrowser) throw new Error('no MiniBrowser in libwebkit2gtk-4.1-0 (scripts/setup installs webkit2gtk-driver)');
  const children = [];
  const stop = () => { for (const c of children) if (c.exitCode === null) c.kill(); };
  process.on('exit', stop);

  // Xvfb on a display it finds free itself (-displayfd writes its number).
  const xvfb = spawn('Xvfb', ['-displayfd', '3', '-screen', '0', `${o.screen}x24`, '-nolisten', 'tcp'], { stdio: ['ignore', 'ignore', 'pipe', 'pipe'] });
  children.push(xvfb);
  const display = await new Promise((ok, fail) => {
    let got = '';
    xvfb.stdio[3].on('data', (d) => { got += d; if (got.includes('\n')) ok(`:${got.trim()}`); });
    xvfb.on('exit', (c) => fail(new Error(`Xvfb exited with ${c}`)));
    setTimeout(() => fail(new Error('Xvfb did not start in 10 s')), 10000);
  });

  // prefers-reduced-motion in WebKitGTK is GTK's gtk-enable-animations,
  // read from $XDG_CONFIG_HOME/gtk-3.0/settings.ini when MiniBrowser
  // starts: a new session reads the file as it is then.
  const config = await mkdtemp(join(tmpdir(), 'kubehops-webkit-config-'));
  await mkdir(join(config, 'gtk-3.0'));
  const motion = (on) => writeFile(join(config, 'gtk-3.0', 'settings.ini'), `[Settings]\ngtk-enable-animations=${on ? 0 : 1}\n`);
  await motion(false);

  // WebKitWebDriver on a free port; its output (and MiniBrowser's) is kept,
  // to tell a crashed content process ("WebProcess CRASHED") from a failure.
  let driver, server, log = '';
  const startDriver = async () => {
    const port = await new Promise((ok) => { const s = createServer(); s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => ok(p)); }); });
    driver = spawn('WebKitWebDriver', [`--port=${port}`], { env: { ...process.env, DISPLAY: display, XDG_CONFIG_HOME: config }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(driver);
    for (const s of [driver.stdout, driver.stderr]) s.on('data', (d) => { log += d; });
    server = `http://127.0.0.1:${port}`;
    for (let i = 0; ; i++) {
      try { if ((await fetch(`${server}/status`)).ok) break; } catch {}
      if (i > 100) throw new Error(`WebKitWebDriver did not answer on ${server}: ${log}`);
      await sleep(100);
    }
  };
  // The driver and the MiniBrowser it started, gone for good.
  const killDriver = () => {
    try { execFileSync('pkill', ['-KILL', '-P', String(driver.pid)]); } catch {}
    driver.kill('SIGKILL');
  };
  await startDriver();
  const caps = new Capabilities({ browserName: 'MiniBrowser', 'webkitgtk:browserOptions': { binary: miniBrowser, args: ['--automation'] } });
  let d, main, size = o.viewport;
  // The window's outer size that gives the viewport asked for (the
  // window's frame and toolbar, measured once per size).
  const resize = async (w, h) => {
    size = { width: w, height: h };
    await d.manage().window().setRect({ width: w, height: h });
    const inner = await d.executeScript('return [innerWidth, innerHeight]');
    if (inner[0] !== w || inner[1] !== h) await d.manage().window().setRect({ width: 2 * w - inner[0], height: 2 * h - inner[1] });
  };
  const session = async () => {
    d = await new Builder().usingServer(server).withCapabilities(caps).build();
    await d.manage().setTimeouts({ script: 30000, pageLoad: 60000 });
    main = await d.getWindowHandle();
    await resize(size.width, size.height);
  };
  await session();
  // A new session. A quit or a start that never answers (seen once in CI,
  // after a framed page) costs the driver: a new WebKitWebDriver is started.
  const renew = async () => {
    try { await bounded(15000, d.quit(), 'quit'); } catch {}
    try { await bounded(60000, session(), 'a new session'); return; } catch (e) { log += `\n(a new session failed: ${e.message}; a new WebKitWebDriver)\n`; }
    killDriver();
    await startDriver();
    await bounded(60000, session(), 'a new session on a new WebKitWebDriver');
  };
  const version = (await d.getCapabilities()).get('browserVersion');
  const keys = { ArrowRight: Key.ARROW_RIGHT, ArrowLeft: Key.ARROW_LEFT, ArrowUp: Key.ARROW_UP, ArrowDown: Key.ARROW_DOWN, End: Key.END, Home: Key.HOME,
    Escape: Key.ESCAPE, Tab: Key.TAB, Enter: Key.ENTER, PageUp: Key.PAGE_UP, PageDown: Key.PAGE_DOWN, Backspace: Key.BACK_SPACE };
  const run = (fn, a) => d.executeScript(`return (${fn}).apply(null, arguments)`, ...a);
  const inFrame = async (f) => {
    await d.switchTo().frame(d.findElement(By.css('iframe')));
    try { return await f(); } finally { await d.switchTo().defaultContent(); }
  };
  let crashesSeen = 0;
  return {
    name: 'webkit',
    sees: { console: false, network: false },
    version: `WebKitGTK ${version} (${miniBrowser} under Xvfb ${display}, WebKitWebDriver, selenium-webdriver)`,
    goto: (url) => d.get(url),
    reload: () => d.navigate().refresh(),
    back: () => d.navigate().back(),
    eval: (fn, ...a) => run(fn, a),
    evalFrame: (fn, ...a) => inFrame(() => run(fn, a)),
    press: (key) => d.actions().sendKeys(keys[key] ?? key).perform(),
    click: async (sel) => (await d.findElement(By.css(sel))).click(),
    clickFrame: (sel) => inFrame(async () => (await d.findElement(By.css(sel))).click()),
    type: async (sel, text) => (await d.findElement(By.css(sel))).sendKeys(text),
    resize,
    reducedMotion: async (on) => {
      await motion(on);
      await renew();
      return 'new MiniBrowser session with GTK\'s gtk-enable-animations (no emulation over WebDriver)';
    },
    popups: async () => {
      const others = (await d.getAllWindowHandles()).filter((h) => h !== main);
      for (const h of others) { await d.switchTo().window(h); await d.close(); }
      await d.switchTo().window(main);
      return others.length;
    },
    screenshot: async (path) => writeFile(path, await d.takeScreenshot(), 'base64'),
    drain: () => [],
    requests: () => [],
    allow: () => {},
    // A crash is what MiniBrowser says ("WebProcess CRASHED"), or the
    // session it ends ("session deleted because of page crash or hang").
    crashed: async (e) => {
      const said = () => {
        const now = (log.match(/WebProcess CRASHED/g) ?? []).length;
        if (now === crashesSeen) return '';
        crashesSeen = now;
        return `MiniBrowser said "WebProcess CRASHED"; the test saw ${e?.name}: ${String(e?.message).split('\n')[0]}`;
      };
      let alive = '';
      try { await d.executeScript('return 1'); alive = 'yes'; } catch (x) { alive = `${x.name}: ${x.message}`; }
      if (alive !== 'yes' && /crash/i.test(alive)) { await sleep(300); return said() || alive; }
      return said();
    },
    restart: renew,
    quit: async () => { try { await bounded(15000, d.quit(), 'quit'); } catch {} finally { stop(); } },
  };
}
