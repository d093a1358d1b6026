// Browser checks of the built site, served by `site serve`, in Debian's Chromium.
// Usage: node check.mjs BASE_URL SCREENSHOT_DIR CHECKS_JSON
// CHECKS_JSON lists pages: [{"name", "path", "status"? (default 200), "heatmap_cells"?,
// "looped"?, "over_capacity"?, "svg"?: CSS selector of an SVG that must render with data
// marks, "points_from"?: "prefill" or "decode" (the SVG has one point per valid cell of that
// phase in the page's cells.json.gz), "print"?:
// print the page to PDF and check the measurements table fits the paper}]. Every link on
// each page must answer 200, no page may log a console error, axe-core finds no serious or
// critical violation, and each page is saved at desktop and phone width, in light and dark
// mode.
import { launchChromium, tally } from './common.mjs';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { createRequire } from 'node:module';

const axeSource = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const [base, shots, checksJson] = process.argv.slice(2);
const checks = JSON.parse(checksJson);
fs.mkdirSync(shots, { recursive: true });
const tallied = tally();
const { ok, failures } = tallied;

const browser = await launchChromium();

const views = [
  { label: 'desktop', viewport: { width: 1280, height: 900 }, isMobile: false },
  { label: 'phone', viewport: { width: 390, height: 844 }, isMobile: true },
];
const checkedLinks = new Map();

for (const c of checks) {
  for (const scheme of ['light', 'dark']) {
    for (const v of views) {
      const context = await browser.newContext({ viewport: v.viewport, isMobile: v.isMobile, colorScheme: scheme });
      const page = await context.newPage();
      const errors = [];
      // A page checked for its 404 logs that 404 itself; nothing else may fail.
      page.on('console', (m) => {
        if (m.type() === 'error' && !(c.status === 404 && m.text().includes('status of 404'))) errors.push(m.text());
      });
      page.on('pageerror', (e) => errors.push(String(e)));
      const resp = await page.goto(base + c.path, { waitUntil: 'load' });
      const status = c.status || 200;
      ok(resp && resp.status() === status, `${c.name}: ${c.path} answered ${resp && resp.status()}, want ${status}`);
      // Accessibility: no serious or critical violation, in this scheme at this width.
      await page.addScriptTag({ content: axeSource });
      const violations = await page.evaluate(async () => {
        const r = await window.axe.run(document, { resultTypes: ['violations'] });
        return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
          .map((v) => `${v.id} (${v.impact}, ${v.nodes.length}x): ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(' | ')}`);
      });
      ok(violations.length === 0, `${c.name} (${v.label}, ${scheme}): axe: ${violations.join('; ')}`);
      const first = scheme === 'light' && v.label === 'desktop';
      if (first) {
        if (c.heatmap_cells !== undefined) {
          const table = page.locator('table.heatmap').first();
          ok(await table.isVisible(), `${c.name}: heatmap not visible`);
          const n = await table.locator('td.cell').count();
          ok(n === c.heatmap_cells, `${c.name}: ${n} heatmap cells, want ${c.heatmap_cells}`);
          const bg = async (sel) => page.locator(sel).first().evaluate((e) => getComputedStyle(e).backgroundImage + '|' + getComputedStyle(e).backgroundColor);
          const valid = await bg('table.heatmap td.cell.valid');
          for (const [cls, want] of [['looped', c.looped], ['over-capacity', c.over_capacity]]) {
            if (want === undefined) continue;
            const cells = table.locator(`td.cell.${cls}`);
            ok(await cells.count() === want, `${c.name}: ${await cells.count()} ${cls} cells, want ${want}`);
            if (want > 0) {
              ok(await bg(`table.heatmap td.cell.${cls}`) !== valid, `${c.name}: ${cls} cells look like valid ones`);
              const text = (await cells.first().innerText()).trim();
              ok(text === (cls === 'looped' ? 'Looped' : 'Over capacity'), `${c.name}: ${cls} cell reads ${JSON.stringify(text)}`);
            }
          }
        }
        if (c.svg) {
          const svg = page.locator(c.svg).first();
          const box = await svg.boundingBox();
          ok(box && box.width > 200 && box.height > 100, `${c.name}: SVG ${c.svg} not rendered (${JSON.stringify(box)})`);
          // Data marks only: a chart's points and a timeline's request lanes. Gridlines and
          // axes are drawn for a chart with no data too, so they do not count.
          // A series' markers are one path of class point, a subpath ("M") a point.
          const points = await svg.locator('.point').evaluateAll((ps) => ps.reduce((n, p) => n + (p.tagName === 'path' ? (p.getAttribute('d').match(/M/g) || []).length : 1), 0));
          const lanes = await svg.locator('g > title').evaluateAll((ts) => ts.filter((t) => /^requests? \d/.test(t.textContent)).length);
          if (c.points_from) {
            // One point per valid cell of the phase with its figure, as the run's JSON download says.
            const gz = await (await context.request.get(new URL('cells.json.gz', base + c.path).href)).body();
            const cells = JSON.parse(zlib.gunzipSync(gz).toString('utf8')).cells;
            const figure = c.points_from === 'prefill' ? 'prompt_tps' : 'total_tps';
            const want = cells.filter((x) => x.phase === c.points_from && x.status === 'valid' && x.figures && x.figures[figure] != null).length;
            ok(want > 0 && points === want, `${c.name}: ${points} points in ${c.svg}, want ${want} (its valid ${c.points_from} cells)`);
          } else {
            ok(points + lanes > 0, `${c.name}: SVG ${c.svg} has no data marks (points or request lanes)`);
          }
        }
        // SVG links (chart points) have an SVGAnimatedString `href`: resolve the attribute.
        const hrefs = await page.$$eval('a[href]', (as) => as.map((a) => new URL(a.getAttribute('href'), document.baseURI).href));
        for (const href of hrefs) {
          if (!href.startsWith(base) || checkedLinks.has(href)) continue;
          const r = await context.request.get(href);
          checkedLinks.set(href, r.status());
          ok(r.status() === 200, `${c.name}: link ${href} answered ${r.status()}`);
        }
      }
      // The page must not scroll sideways as a whole on a phone (tables scroll inside).
      if (v.label === 'phone') {
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        ok(overflow <= 1, `${c.name}: page is ${overflow}px wider than a phone screen`);
      }
      await page.screenshot({ path: path.join(shots, `${c.name}-${v.label}-${scheme}.png`), fullPage: true });
      if (c.print && first) await printCheck(page, c);
      ok(errors.length === 0, `${c.name} (${v.label}, ${scheme}): console errors: ${errors.join(' | ')}`);
      await context.close();
    }
  }
}
/// Prints the page to A4 landscape (a PDF beside the screenshots) and checks, in the print
/// layout, that the measurements table's last column is inside the page box.
async function printCheck(page, c) {
  await page.pdf({ path: path.join(shots, `${c.name}-print.pdf`), format: 'A4', landscape: true, printBackground: true });
  // A4 landscape less 10 mm margins: 277 mm = 1047 CSS px wide.
  await page.setViewportSize({ width: 1047, height: 740 });
  await page.emulateMedia({ media: 'print' });
  const fit = await page.evaluate(() => {
    const table = document.querySelector('table.measurements');
    const last = table && table.querySelector('thead th:last-child');
    if (!last) return null;
    return { right: last.getBoundingClientRect().right, text: last.textContent, visible: last.offsetParent !== null };
  });
  ok(fit !== null && fit.visible, `${c.name}: printed, the measurements table has no visible last column`);
  ok(fit !== null && fit.right <= 1047, `${c.name}: printed, the last column (${fit && fit.text}) ends at ${fit && fit.right}px, past the page (1047px)`);
  await page.emulateMedia({ media: 'screen' });
}

await browser.close();
console.log(`browser checks: ${checkedLinks.size} links answered`);
for (const f of failures) console.log(`FAIL ${f}`);
console.log(`${tallied.passed} passed, ${failures.length} failed`);
process.exit(failures.length ? 1 : 0);
