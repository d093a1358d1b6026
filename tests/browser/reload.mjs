// Browser check of `site serve`'s live reload in Debian's Chromium: a run page that is open
// while its run file changes reloads by itself (the server pushes the finished build over a
// WebSocket) and shows the change. Prints how long from the write to the reloaded page.
// Usage: node reload.mjs BASE_URL RUN_ID RUN_JSON (RUN_JSON: that run's file in the data folder)
import { launchChromium, tally } from './common.mjs';
import fs from 'node:fs';

const [base, runId, runJson] = process.argv.slice(2);
const tallied = tally();
const { ok, failures } = tallied;

const browser = await launchChromium();
const page = await browser.newPage();
const errors = [];
page.on('pageerror', (e) => errors.push(String(e)));
// The page's socket hears the current build first: then it is listening.
const heard = new Promise((resolve) => page.on('websocket', (ws) => ws.on('framereceived', resolve)));
await page.goto(`${base}/runs/${runId}/`, { waitUntil: 'load' });
await Promise.race([heard, new Promise((_, reject) => setTimeout(() => reject(new Error('no build number heard in 10 s')), 10000))]);
const before = await page.innerText('main');
ok(before.includes('H100 SXM') && !before.includes('H100 SXM Reloaded'), 'the page before the change');

const reloaded = page.waitForEvent('load', { timeout: 20000 });
const t0 = Date.now();
fs.writeFileSync(runJson, fs.readFileSync(runJson, 'utf8').replace('"H100 SXM"', '"H100 SXM Reloaded"'));
let took = null;
try {
  await reloaded;
  took = Date.now() - t0;
} catch (e) {
  failures.push(`the page did not reload within 20 s of the change: ${e.message}`);
}
if (took !== null) {
  ok((await page.innerText('main')).includes('H100 SXM Reloaded'), 'the reloaded page shows the change');
  console.log(`reload: ${took} ms from the write to the reloaded page`);
}
ok(errors.length === 0, `page errors: ${errors.join('; ')}`);

await browser.close();
for (const f of failures) console.log(`FAIL ${f}`);
console.log(`reload checks: ${tallied.passed} passed, ${failures.length} failed`);
process.exit(failures.length ? 1 : 0);
