import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { eventually, noChromium } from './support/browser.js';
import { chromiumFixture } from './support/fixture.js';

interface Recorded {
  kind: string;
  session?: string;
  data?: { from: number };
}

/**
 * Two tabs of one origin share the browser's connections to it. Over HTTP/1.1 Chromium opens at most six per origin
 * (per profile), and every open session holds one for its poll; over HTTP/2 every request is a stream on one
 * connection. The server's poll timeout here is 30 s, so held polls do not end on their own during a test.
 */
describe('two tabs of one origin, over HTTP/1.1 and HTTP/2', { skip: noChromium, timeout: 180_000 }, () => {
  const chromium = chromiumFixture({ https: true, pollTimeoutMs: 30_000 }, { trustServerCertificate: true });

  for (const protocol of ['http/1.1', 'h2'] as const) {
    test(`${protocol}: two tabs each run a session and hear each other; ${protocol === 'h2' ? 'more sessions block nothing' : 'with six polls held, the next request waits until one ends'}`, async t => {
      const origin = protocol === 'h2' ? chromium.host.https! : chromium.host.http;
      const topic = `tabs-${protocol}`;
      const context: BrowserContext = await chromium.browser.newContext();
      const records = new Map<Page, Recorded[]>();
      await context.exposeBinding('record', ({ page }, entry: Recorded) => {
        records.set(page, [...(records.get(page) ?? []), entry]);
      });
      const tabs = [await context.newPage(), await context.newPage()];
      for (const tab of tabs) {
        await tab.goto(`${origin}?auto=pubsub&topic=${topic}`);
      }

      await eventually(() => tabs.every(tab => (records.get(tab) ?? []).some(r => r.kind === 'ready')), 'both tabs subscribed');
      for (const [i, tab] of tabs.entries()) {
        await tab.evaluate(from => window.pubsub!.publish(new URLSearchParams(location.search).get('topic')!, { from }, { echo: true }), i + 1);
      }

      const heard = (tab: Page) => (records.get(tab) ?? []).filter(r => r.kind === 'message').map(r => r.data!.from);
      await eventually(() => tabs.every(tab => heard(tab).length === 2), 'both tabs heard both publishes');
      assert.deepEqual(tabs.map(heard), [[1, 2], [1, 2]]);
      const sessions = tabs.map(tab => records.get(tab)!.find(r => r.kind === 'ready')!.session);
      assert.notEqual(sessions[0], sessions[1], 'each tab has a session of its own');
      const used = await tabs[0]!.evaluate(() => [...new Set(performance.getEntriesByType('resource')
        .filter(e => e.name.includes('/pubsub/sessions')).map(e => (e as PerformanceResourceTiming).nextHopProtocol))]);
      assert.deepEqual(used, [protocol]);

      // Four more sessions in the second tab: six polls held in all.
      await tabs[1]!.evaluate(async () => {
        const extra = await Promise.all([1, 2, 3, 4].map(() => new window.duplex.PollingDuplexClient('/pubsub', { resume: false }).open()));
        (window as unknown as { extra: unknown[] }).extra = extra;
        await new Promise(resolve => setTimeout(resolve, 500));
      });
      const blocked = await tabs[0]!.evaluate(async () => {
        const started = performance.now();
        const publish = window.pubsub!.publish(new URLSearchParams(location.search).get('topic')!, { from: 3 }, { echo: true });
        const waited = await Promise.race([publish.then(() => 'sent'), new Promise(resolve => setTimeout(() => resolve('waiting'), 2000))]);
        return { waited, ms: performance.now() - started };
      });

      // Closing one extra session ends its poll, which frees a connection for whatever waits.
      const freed = await tabs[1]!.evaluate(async () => {
        const started = performance.now();
        const extra = (window as unknown as { extra: { close(): Promise<void> }[] }).extra;
        await extra[0]!.close();
        return performance.now() - started;
      });
      await eventually(() => tabs.every(tab => heard(tab).length === 3), 'the third publish arrived in both tabs');
      await tabs[1]!.evaluate(async () => {
        await Promise.all((window as unknown as { extra: { close(): Promise<void> }[] }).extra.slice(1).map(s => s.close()));
      });

      t.diagnostic(`${protocol}: a publish with six polls held: ${blocked.waited} after ${Math.round(blocked.ms)} ms; closing a session to free a connection took ${Math.round(freed)} ms`);
      if (protocol === 'h2') {
        assert.equal(blocked.waited, 'sent', `over HTTP/2 a publish with six polls held took ${blocked.ms} ms`);
      } else {
        assert.equal(blocked.waited, 'waiting', `over HTTP/1.1 a publish with six polls held went through in ${blocked.ms} ms`);
      }

      assert.ok(freed < 5000, `closing a session took ${freed} ms`);
      await context.close();
    });
  }
});
