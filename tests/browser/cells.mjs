// Browser checks of the site's cell viewer (cell/#RUN/SLUG), which draws each cell's evidence
// from the run's evidence.js, in Debian's Chromium: every repetition of a repeated cell
// renders, over HTTP and from file://, with no console error and no serious axe violation;
// `#RUN` lists the run's cells; former addresses (runs/ID/cells/NAME/, runs/ID/cell/#NAME)
// reach the cell through the 404 page; with JavaScript off, the run page's tables read and
// the viewer says where the figures are.
// Usage: node cells.mjs BASE_URL SITE_DIR RUN_ID CELL_SLUG REPETITIONS
import { launchChromium, tally } from './common.mjs';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const axeSource = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const [base, siteDir, run, slug, reps] = process.argv.slice(2);
const tallied = tally();
const { ok, failures } = tallied;

const browser = await launchChromium();

async function open(url, options = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, ...options });
  const page = await context.newPage();
  const errors = [];
  page.on('console', (m) => {
    // The 404 page logs its own status before it sends the reader on.
    if (m.type() === 'error' && !m.text().includes('status of 404')) errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(url, { waitUntil: 'load' });
  return { context, page, errors };
}

async function axe(page, what) {
  await page.addScriptTag({ content: axeSource });
  const violations = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ['violations'] });
    return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.nodes.length}x)`);
  });
  ok(violations.length === 0, `${what}: axe: ${violations.join('; ')}`);
}

const fileBase = 'file://' + path.resolve(siteDir);
for (const [scheme, root, page0] of [['http', base, '/cell/'], ['file', fileBase, '/cell/index.html']]) {
  for (let rep = 1; rep <= Number(reps); rep++) {
    const url = `${root}${page0}#${run}/${slug}${rep > 1 ? '/r' + rep : ''}`;
    const what = `${scheme} ${slug} r${rep}`;
    const { context, page, errors } = await open(url);
    // The evidence is unpacked after load.
    await page.waitForSelector('svg.timeline', { timeout: 10000 }).catch(() => {});
    const lanes = await page.locator('svg.timeline g > title').count();
    ok(lanes > 0, `${what}: the timeline draws no request (${url})`);
    const current = await page.locator('nav.reps a[aria-current="page"]').innerText().catch(() => '');
    ok(current.startsWith(String(rep)), `${what}: the repetition shown is ${JSON.stringify(current)}`);
    const formulas = await page.locator('table thead th').allInnerTexts();
    ok(formulas.includes('Formula'), `${what}: no table of how each figure was computed`);
    ok(await page.locator('svg.histogram rect').count() > 0, `${what}: no distribution drawn`);
    const title = await page.title();
    ok(!title.startsWith('Cells'), `${what}: the title does not name the cell: ${title}`);
    // axe reads the styles with XHR, which file:// refuses: it runs over HTTP.
    if (rep === 1 && scheme === 'http') await axe(page, what);
    await page.screenshot({ path: path.join('target/screenshots', `cells-${scheme}-r${rep}.png`), fullPage: true });
    ok(errors.length === 0, `${what}: console errors: ${errors.join(' | ')}`);
    await context.close();
  }
}

// `#RUN` lists the run's cells, each linked to its evidence, from file:// too.
{
  const { context, page, errors } = await open(`${fileBase}/cell/index.html#${run}`);
  await page.waitForSelector('ul.cell-list a', { timeout: 10000 }).catch(() => {});
  ok(await page.locator(`ul.cell-list a[href="#${run}/${slug}"]`).count() === 1, 'run cells: the list does not link the cell');
  ok(await page.locator(`a[href$="runs/${run}/index.html"]`).count() > 0, 'run cells: no link back to the run page');
  ok(errors.length === 0, `run cells: console errors: ${errors.join(' | ')}`);
  await context.close();
}

// Former addresses reach the cell: a cell's own page, and a run's own cells page.
for (const [what, address] of [['old cell page', `/runs/${run}/cells/${slug}/`], ['old cells page', `/runs/${run}/cell/#${slug}`]]) {
  const { context, page, errors } = await open(`${base}${address}`);
  await page.waitForURL((u) => u.hash === `#${run}/${slug}`, { timeout: 10000 }).catch(() => {});
  await page.waitForSelector('svg.timeline', { timeout: 10000 }).catch(() => {});
  ok(page.url().endsWith(`/cell/#${run}/${slug}`), `${what}: landed on ${page.url()}`);
  ok(await page.locator('svg.timeline').count() === 1, `${what}: the cell is not drawn`);
  ok(errors.length === 0, `${what}: console errors: ${errors.join(' | ')}`);
  await context.close();
}

// A path that reads as another host (`//evil.example/...`, `/\\evil.example/...`) stays on
// this site, on `site serve` and from file://.
for (const address of [
  `${base}//evil.example/runs/${run}/cells/${slug}/`,
  `${base}/%5Cevil.example/runs/${run}/cells/${slug}/`,
  `${base}//evil.example/runs/${run}/cells.json`,
  `${fileBase}/404.html`,
]) {
  const { context, page } = await open(address);
  await page.waitForTimeout(500);
  const landed = new URL(page.url());
  const from = new URL(address);
  ok(landed.protocol === from.protocol && landed.host === from.host, `404 from ${address}: sent to ${page.url()}`);
  await context.close();
}

// The former downloads' addresses (runs/ID/cells.json, cells.csv) reach the gzipped ones.
for (const kind of ['json', 'csv']) {
  const context = await browser.newContext({ acceptDownloads: true });
  const page = await context.newPage();
  const download = page.waitForEvent('download', { timeout: 10000 }).catch(() => null);
  await page.goto(`${base}/runs/${run}/cells.${kind}`).catch(() => {});
  const got = await download;
  ok(got !== null && got.url().endsWith(`/runs/${run}/cells.${kind}.gz`), `old ${kind} address: downloaded ${got && got.url()}`);
  await context.close();
}

// With JavaScript off: the run page's tables, and the viewer's note.
{
  const { context, page } = await open(`${base}/runs/${run}/`, { javaScriptEnabled: false });
  const rows = await page.locator('table.measurements tbody tr').count();
  ok(rows > 0, `no script: the run page's measurements table has ${rows} rows`);
  ok(await page.locator('table.heatmap td.cell').count() > 0, 'no script: the run page has no heatmap cells');
  const page2 = await context.newPage();
  await page2.goto(`${base}/cell/#${run}/${slug}`, { waitUntil: 'load' });
  ok((await page2.locator('main').innerText()).includes("run's page"), 'no script: the viewer does not say where the figures are');
  await context.close();
}

await browser.close();
for (const f of failures) console.log(`FAIL ${f}`);
console.log(`cells checks: ${tallied.passed} passed, ${failures.length} failed`);
process.exit(failures.length ? 1 : 0);
