import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/**
 * Debian's Chromium, driven by Playwright with no browser download (`CHROMIUM_PATH` points elsewhere). `test.sh`
 * and `.ci/run` install it with apt-get; without it, the browser tests are skipped with this reason.
 */
export const chromiumPath = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
export const noChromium: string | false = existsSync(chromiumPath) ? false : `Chromium is not installed at ${chromiumPath} (apt-get install chromium, or set CHROMIUM_PATH).`;

// The background-networking switches keep Chromium from calling out to the internet, which this network refuses.
const flags = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/**
 * Launches Chromium. Playwright gives every launch a fresh, temporary --user-data-dir. With `trustSpki`, Chromium
 * trusts exactly the certificate whose public key has that SHA-256 hash (the test server's, made in memory for this
 * run), never every certificate; the switch is honoured because a user data dir is given.
 */
export async function launchChromium(options: { trustSpki?: string | undefined; extraArgs?: readonly string[] } = {}): Promise<Browser> {
  const args = [...flags, ...(options.extraArgs ?? [])];
  if (options.trustSpki !== undefined) {
    args.push(`--ignore-certificate-errors-spki-list=${options.trustSpki}`);
  }

  return chromium.launch({ executablePath: chromiumPath, args });
}

/**
 * A page of the test server with its console and errors forwarded to the test's output, and a `record` binding the
 * page calls with what it received (kept across reloads, since Playwright binds it to every navigation).
 */
export async function openPage(context: BrowserContext, url: string, records?: unknown[]): Promise<Page> {
  const page = await context.newPage();
  page.on('pageerror', error => console.error(`[page error] ${error.message}`));
  page.on('console', message => {
    if (message.type() === 'error' || message.type() === 'warning') {
      console.error(`[page console ${message.type()}] ${message.text()}`);
    }
  });
  if (records !== undefined) {
    await page.exposeFunction('record', (entry: unknown) => { records.push(entry); });
  }

  await page.goto(url);
  await page.waitForFunction(() => window.duplex !== undefined);
  return page;
}

/** Waits until `check` holds, polling, or fails with `message` and what was last seen. */
export async function eventually(check: () => boolean | Promise<boolean>, message: string, timeoutMs = 20_000, seen?: () => unknown): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) {
      throw new Error(`${message} (within ${timeoutMs} ms)${seen === undefined ? '' : `; last seen: ${JSON.stringify(seen())}`}`);
    }

    await new Promise(resolve => setTimeout(resolve, 50));
  }
}
