// Browser checks of the runs listing's script in Debian's Chromium: sort, filter, search,
// date range, the filter state in the URL, "Show more", the plain pages without script, a
// leaderboard's sortable table, an entity page's preset, and the same listing from file://.
// Usage: node listing.mjs BASE_URL SITE_DIR (SITE_DIR: the built folder, for file://)
// The site is the series fixture plus 223 copies of one run (230 runs in all).
import { launchChromium, tally } from './common.mjs';
import path from 'node:path';

const [base, siteDir] = process.argv.slice(2);
const tallied = tally();
const { ok, failures } = tallied;
const eq = (got, want, what) => ok(JSON.stringify(got) === JSON.stringify(want), `${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);

const browser = await launchChromium();

async function open(url, options = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, ...options });
  const page = await context.newPage();
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(url, { waitUntil: 'load' });
  return { context, page, errors };
}

const rows = (page) => page.locator('table.runs tbody tr').count();
const firstCells = (page, col, n) => page.$$eval(`table.runs tbody tr`, (trs, [col, n]) => trs.slice(0, n).map((tr) => (tr.cells[col].querySelector('a') || tr.cells[col]).textContent.trim()), [col, n]);
const count = (page) => page.locator('.listing-count').innerText();
const live = (page) => page.waitForSelector('.runs-listing.live', { timeout: 10000 });

// Over HTTP, with script.
{
  const { context, page, errors } = await open(base + '/');
  await live(page);
  eq(await rows(page), 100, 'index: rows shown at first');
  eq(await count(page), '230 of 230 runs, first 100 shown', 'index: count line');
  ok(await page.locator('nav.pager').isHidden(), 'index: the plain pager is hidden once the script runs');
  // Newest first: the 0.11.0 run started last.
  eq((await firstCells(page, 0, 1))[0], '0.11.0 · 2× · 2026-05-01', 'index: newest first (the name says what the columns do not)');
  // Sort by peak total tok/s: highest first, then lowest first.
  await page.click('th[data-key=peak] button');
  eq(await firstCells(page, 5, 2), ['480.0 at 8K ×4', '480.0 at 8K ×4'], 'sort by peak, descending');
  eq(await page.getAttribute('th[data-key=peak]', 'aria-sort'), 'descending', 'aria-sort on the sorted column');
  await page.click('th[data-key=peak] button');
  eq((await firstCells(page, 5, 1))[0], '80.0 at 8K ×1', 'sort by peak, ascending (the looped run peaks at 1 request)');
  ok(page.url().includes('sort=peak') && page.url().includes('dir=asc'), `sort in the URL: ${page.url()}`);
  // Search.
  await page.fill('input[name=q]', 'sglang');
  eq(await rows(page), 2, 'search "sglang"');
  ok(page.url().includes('q=sglang'), `search in the URL: ${page.url()}`);
  await page.fill('input[name=q]', '');
  // A model id that plain objects hold specially is an option like any other.
  ok(await page.locator('select[name=model_id] option[value="__proto__"]').count() === 1, 'model filter: the __proto__ model is an option');
  await page.selectOption('select[name=model_id]', '__proto__');
  eq(await rows(page), 1, 'model filter: __proto__');
  await page.selectOption('select[name=model_id]', '');
  // Filter by engine through its select.
  await page.selectOption('select[name=engine]', 'sglang');
  eq(await rows(page), 2, 'engine filter');
  await page.selectOption('select[name=engine]', '');
  // Date range: the runs of 2026 (the copies are dated 2025; the undated run is left out).
  await page.fill('input[name=from]', '2026-01-01');
  await page.dispatchEvent('input[name=from]', 'change');
  eq(await rows(page), 6, 'date from 2026-01-01');
  await page.fill('input[name=from]', '');
  await page.dispatchEvent('input[name=from]', 'change');
  // Show more.
  await page.click('button.more');
  eq(await rows(page), 200, 'show more');
  eq(errors, [], 'index over HTTP: console errors');
  await context.close();
}

// A filter value from the address that no run has: the select says so, the list is empty.
{
  const { context, page, errors } = await open(base + '/?model_id=nobody%2Fnothing');
  await live(page);
  eq(await page.inputValue('select[name=model_id]'), 'nobody/nothing', 'an unknown filter value from the URL is shown, not "Any"');
  eq(await rows(page), 0, 'an unknown filter value lists no run');
  eq(errors, [], 'unknown filter value: console errors');
  await context.close();
}

// A shared view: the filter and sort come from the URL.
{
  const { context, page, errors } = await open(base + '/?engine=vllm&q=0.10.0&sort=peak&dir=asc');
  await live(page);
  eq(await page.inputValue('select[name=engine]'), 'vllm', 'URL state: engine select');
  eq(await page.inputValue('input[name=q]'), '0.10.0', 'URL state: search box');
  eq(await firstCells(page, 5, 2), ['470.0 at 8K ×4', '480.0 at 8K ×4'], 'URL state: filtered and sorted');
  eq(errors, [], 'shared view: console errors');
  await context.close();
}

// An entity page lists only its own runs; a leaderboard sorts by any column.
{
  const { context, page, errors } = await open(base + '/engines/sglang/');
  await live(page);
  eq(await rows(page), 2, 'engine page: its runs only');
  ok(await page.locator('select[name=engine]').count() === 0, 'engine page: no engine filter');
  await page.goto(base + '/leaderboards/8k-x4/', { waitUntil: 'load' });
  const ranks = () => page.$$eval('table.board tbody tr', (trs) => trs.map((tr) => tr.cells[0].textContent.trim()));
  eq((await ranks()).slice(0, 3), ['=1', '=1', '3'], 'leaderboard: ranked order, equal single measurements sharing a place');
  await page.click('table.board th:nth-child(8) button'); // per request tok/s, ascending
  const perRequest = await page.$$eval('table.board tbody tr', (trs) => trs.map((tr) => parseFloat(tr.cells[7].getAttribute('data-v'))));
  eq(perRequest, [...perRequest].sort((a, b) => a - b), 'leaderboard: sorted by per-request tok/s');
  eq(errors, [], 'entity and leaderboard: console errors');
  await context.close();
}

// Without script: plain pages.
{
  const { context, page } = await open(base + '/', { javaScriptEnabled: false });
  eq(await rows(page), 100, 'no script: first page');
  ok(await page.locator('nav.pager').isVisible(), 'no script: pager visible');
  // A click starts the navigation without waiting for it: count the rows of the new page.
  await Promise.all([page.waitForURL('**/list/3/index.html', { waitUntil: 'load' }), page.click('nav.pager a:text-is("3")')]);
  eq(await rows(page), 30, 'no script: page 3');
  ok(page.url().endsWith('/list/3/index.html'), `no script: page 3 address ${page.url()}`);
  await context.close();
}

// From file://: the index arrives as a script, the listing works the same.
{
  const url = 'file://' + path.resolve(siteDir, 'index.html');
  const { context, page, errors } = await open(url);
  await live(page);
  eq(await count(page), '230 of 230 runs, first 100 shown', 'file://: count line');
  await page.fill('input[name=q]', 'rerun');
  eq(await rows(page), 1, 'file://: search');
  eq(errors, [], 'file://: console errors');
  await context.close();
}

await browser.close();
for (const f of failures) console.log(`FAIL ${f}`);
console.log(`listing checks: ${tallied.passed} passed, ${failures.length} failed`);
process.exit(failures.length ? 1 : 0);
