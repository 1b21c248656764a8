import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { eventually, launchChromium, noChromium, openPage } from './support/browser.js';
import { freePort, Host } from './support/host.js';

interface Recorded {
  kind: string;
  session?: string;
  previous?: string;
  code?: string;
  data?: { n: number };
}

const numbers = (records: Recorded[]) => records.filter(r => r.kind === 'message').map(r => r.data!.n);
const reopenings = (records: Recorded[]) => records.filter(r => r.kind === 'reopened');

describe('a server restart, seen from Chromium', { skip: noChromium, timeout: 180_000 }, () => {
  let port: number;
  let host: Host;
  let browser: Browser;
  let page: Page;
  const records: Recorded[] = [];
  before(async () => {
    port = await freePort();
    host = await Host.start({ httpPort: port, pollTimeoutMs: 3000 });
    browser = await launchChromium();
    page = await openPage(await browser.newContext(), `${host.http}?auto=pubsub&topic=restart`, records);
    await eventually(() => records.some(r => r.kind === 'ready'), 'the page subscribed');
    await host.publish('restart', 5);
    await eventually(() => numbers(records).length === 5, 'the first messages arrived');
  });
  after(async () => {
    await browser?.close();
    await host?.stop();
  });

  // Sessions live in the server's memory: a restart loses them, and the documents say the client opens a new
  // session, subscribes again, and reports it; what was published in between is not received.
  test('killed (connections reset): the client retries until the server is back, finds its session unknown, and reopens with its subscriptions', async () => {
    await host.kill();
    await new Promise(resolve => setTimeout(resolve, 1500));
    host = await Host.start({ httpPort: port, pollTimeoutMs: 3000 });
    await eventually(() => reopenings(records).length === 1, 'the client opened a new session', 30_000);
    await eventually(async () => (await host.subscribers('restart')) === 1, 'the new session subscribed again');
    await host.publish('restart', 5, 0, 6);
    await eventually(() => numbers(records).length === 10, 'messages after the restart arrived');

    const reopened = reopenings(records)[0]!;
    assert.equal(reopened.code, 'unknown-session');
    assert.notEqual(reopened.session, reopened.previous);
    assert.ok(records.some(r => r.kind === 'reconnecting'), 'it retried while the server was down');
  });

  test('stopped gracefully (held polls answered 410 session-faulted): the client reopens once the server is back', async () => {
    await host.stop();
    await new Promise(resolve => setTimeout(resolve, 1500));
    host = await Host.start({ httpPort: port, pollTimeoutMs: 3000 });
    await eventually(() => reopenings(records).length === 2, 'the client opened a new session', 30_000);
    await eventually(async () => (await host.subscribers('restart')) === 1, 'the new session subscribed again');
    await host.publish('restart', 5, 0, 11);
    await eventually(() => numbers(records).length === 15, 'messages after the restart arrived');

    assert.equal(reopenings(records)[1]!.code, 'session-faulted');
    assert.deepEqual(numbers(records), Array.from({ length: 15 }, (_, i) => i + 1));
    assert.ok(!records.some(r => r.kind === 'error'), JSON.stringify(records.filter(r => r.kind === 'error')));
    const state = await page.evaluate(() => window.pubsub!.state);
    assert.equal(state, 'open');
  });
});
