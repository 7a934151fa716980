// Headless Chromium for the suites that drive a real page (the docs UI, the hosted login page):
// where the browser is, how it starts, and what a page must not do.
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe } from '@jest/globals';
import { itIf } from '@app/testing';
import { chromium, type Browser, type Page } from 'playwright-core';

/** Where this machine's browser is, when not Debian's. */
// eslint-disable-next-line no-restricted-properties -- test support, not the platform: linted from test/, where the test-file exemption does not reach it
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Whether a Chromium can be started here. Suites skip, not fail, only where none can be
 * installed (npm cannot fetch one here; a developer machine may lack Debian's package).
 * `.ci/run` installs `chromium` when it is missing, so in CI they run.
 */
export const hasChromium = () => existsSync(CHROMIUM);

/** --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start. */
export const launchChromium = (): Promise<Browser> => chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });

/** Console errors and warnings, uncaught exceptions and CSP violations of a page, as they happen. */
export async function watchPage(page: Page): Promise<string[]> {
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') problems.push(`console ${message.type()}: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`uncaught: ${error.message}`));
  await page.exposeFunction('reportViolation', (violation: string) => problems.push(`CSP: ${violation}`));
  // Runs in the page, before its own scripts.
  await page.addInitScript({
    content: `document.addEventListener('securitypolicyviolation', (event) =>
      window.reportViolation(event.effectiveDirective + ' blocked ' + event.blockedURI + ' (' + event.sourceFile + ':' + event.lineNumber + ')'));`,
  });
  return problems;
}

/**
 * Declares `suites` with one Chromium for all of them (`browser()` inside a test or hook), or,
 * where none can be started, one skipped test that says why.
 */
export function withChromium(what: string, suites: (browser: () => Browser) => void): void {
  if (!hasChromium()) {
    describe(what, () => {
      // Skipped only on a machine without a browser (`npm run test:all` on a fresh clone):
      // Chromium is a system package, not an npm dependency. CI installs it (.ci/run, step
      // "chromium"), so there these suites always run.
      itIf(false, `needs a Chromium executable at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`)('drives a browser', () => undefined);
    });
    return;
  }
  let browser: Browser | undefined;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });
  suites(() => browser!);
}
