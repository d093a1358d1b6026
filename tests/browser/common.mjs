// What every browser check shares: Debian's Chromium, headless and quiet, and a tally of
// checks that keeps each failure's words.
import { chromium } from 'playwright-core';

export function launchChromium() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
  });
}

/// `ok(cond, what)` counts a check; `tally.failures` holds the words of each that failed.
export function tally() {
  const t = { passed: 0, failures: [] };
  t.ok = (cond, what) => { if (cond) t.passed++; else t.failures.push(what); };
  return t;
}
