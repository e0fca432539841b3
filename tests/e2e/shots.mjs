// Screenshots for looking at the canvas as a reader would: every link
// given (or a default set) at the sizes a reader meets it: embedded at
// 480×360, 720×560 and 1280×720, a 390×844 phone, the page at 1280×800
// and 1920×1080 (and 720 px wide, on request), and
// present mode at 1920×1080. Not a test: it asserts nothing and writes
// PNGs to .e2e-out/shots/ (or the folder in SHOTS_OUT).
//
//   node tests/e2e/shots.mjs ['#/nodeport-loadbalancer/2/end' ...]
//   SIZES=embed720,page720 node tests/e2e/shots.mjs ...
import { chromium } from 'playwright-core';
import { mkdir, mkdtemp } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { serveDist } from './serve.mjs';

const out = resolve(process.env.SHOTS_OUT ?? '.e2e-out/shots');
const links = process.argv.slice(2).length ? process.argv.slice(2) : ['#/nodeport-loadbalancer/2/end', '#/service-types/3/end?tab=nodeport&client=laptop', '#/local-lab/6/end'];
const SIZES = {
  embed480: { w: 480, h: 360, embed: true },
  embed720: { w: 720, h: 560, embed: true },
  embed1280: { w: 1280, h: 720, embed: true },
  page720: { w: 720, h: 900 },
  phone: { w: 390, h: 844 },
  page1280: { w: 1280, h: 800 },
  page1920: { w: 1920, h: 1080 },
  present1080: { w: 1920, h: 1080, present: true },
  present4k: { w: 3840, h: 2160, present: true },
};
const wanted = (process.env.SIZES ?? 'embed480,embed720,embed1280,phone,page1280,page1920,present1080').split(',');

const { server, origin } = await serveDist(resolve('dist'));
const profile = await mkdtemp(join(tmpdir(), 'kubehops-shots-'));
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM_BIN ?? '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
await mkdir(out, { recursive: true });
const name = (link, size) => `${size}-${link.replace(/^#\//, '').replace(/[^a-z0-9]+/gi, '_')}.png`;
for (const link of links) {
  for (const size of wanted) {
    const s = SIZES[size];
    if (!s) { console.log(`unknown size ${size}`); continue; }
    const page = await browser.newPage();
    await page.setViewportSize({ width: s.w, height: s.h });
    await page.emulateMedia({ reducedMotion: 'reduce' });
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    const sep = link.includes('?') ? '&' : '?';
    await page.goto(`${origin}/${s.embed ? link + sep + 'embed=1' : link}`);
    await page.waitForSelector('.kh-canvas svg', { timeout: 15000 });
    if (s.present) { await page.keyboard.press('p'); await page.waitForTimeout(300); }
    await page.waitForTimeout(250);
    // The smallest canvas text shown, in CSS px.
    const min = await page.evaluate(() => {
      const svg = document.querySelector('.kh-canvas svg');
      const box = svg.getBoundingClientRect();
      let m = Infinity, which = '';
      for (const t of svg.querySelectorAll('text')) {
        const r = t.getBoundingClientRect();
        if (!t.textContent.trim() || r.width === 0 || r.right < box.left || r.left > box.right || r.bottom < box.top || r.top > box.bottom) continue;
        const px = parseFloat(getComputedStyle(t).fontSize) * (svg.getScreenCTM()?.a ?? 1);
        if (px < m) { m = px; which = t.textContent.trim().slice(0, 40); }
      }
      return { px: Math.round(m * 10) / 10, which };
    });
    const file = join(out, name(link, size));
    await page.screenshot({ path: file });
    console.log(`${file}  smallest text ${min.px}px ("${min.which}")${errors.length ? '  ERRORS: ' + errors.join(' | ') : ''}`);
    await page.close();
  }
}
await browser.close();
server.close();
