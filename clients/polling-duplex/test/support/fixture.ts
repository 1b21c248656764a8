import { after, before, beforeEach } from 'node:test';
import type { Browser, BrowserContext } from 'playwright-core';
import { launchChromium } from './browser.js';
import { Host, type HostOptions } from './host.js';

export interface ChromiumFixture {
  readonly host: Host;
  readonly browser: Browser;
  /** A browser context (a fresh profile's cookies and storage): one for the suite, or a new one for each test. */
  readonly context: BrowserContext;
}

/**
 * Registers a suite's hooks: the test server started with `hostOptions`, a Chromium (trusting the server's own
 * certificate when `trustServerCertificate`), and a browser context; all stopped after the suite.
 */
export function chromiumFixture(hostOptions: HostOptions = {}, options: { contextPerTest?: boolean; trustServerCertificate?: boolean } = {}): ChromiumFixture {
  const fixture = {} as { host: Host; browser: Browser; context: BrowserContext };
  before(async () => {
    fixture.host = await Host.start(hostOptions);
    fixture.browser = await launchChromium({ trustSpki: options.trustServerCertificate ? fixture.host.spki : undefined });
    if (!options.contextPerTest) {
      fixture.context = await fixture.browser.newContext();
    }
  });
  if (options.contextPerTest) {
    beforeEach(async () => {
      await fixture.context?.close();
      fixture.context = await fixture.browser.newContext();
    });
  }

  after(async () => {
    await fixture.browser?.close();
    await fixture.host?.stop();
  });
  return fixture;
}
