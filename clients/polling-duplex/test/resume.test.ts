import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { eventually, noChromium, openPage } from './support/browser.js';
import { FaultProxy } from './support/fault-proxy.js';
import { chromiumFixture } from './support/fixture.js';
import { Host } from './support/host.js';

interface Recorded {
  kind: string;
  reason?: string;
  session?: string;
  resumed?: boolean;
  resumeFailure?: string;
  resumeFailureDetail?: string;
  data?: { n: number };
  missed?: number;
}

const numbers = (records: Recorded[]) => records.filter(r => r.kind === 'message').map(r => r.data!.n);
const readies = (records: Recorded[]) => records.filter(r => r.kind === 'ready');
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** What the page logged, in its sessionStorage: the application's own record, kept across reloads (test/pages/harness.js). */
async function pageLog(page: Page): Promise<Recorded[]> {
  return page.evaluate(() => JSON.parse(sessionStorage.getItem('harness:log') ?? '[]') as Recorded[]);
}

/** Reloads the page and waits until it has resumed; returns its ready record, and how long it took. */
async function reloadAndWait(page: Page, records: Recorded[]): Promise<Recorded & { tookMs: number }> {
  const before = readies(records).length;
  const started = Date.now();
  await page.reload();
  await eventually(() => readies(records).length > before, 'the reloaded page is ready');
  return { ...readies(records).at(-1)!, tookMs: Date.now() - started };
}

describe('resuming across page reloads in Chromium', { skip: noChromium, timeout: 180_000 }, () => {
  const chromium = chromiumFixture({}, { contextPerTest: true });

  for (const [encoding, mode] of [['text', 'multiple'], ['binary', 'single']] as const) {
    test(`${encoding}, ${mode}: reloads mid-stream resume the same session, and every message arrives exactly once, in order`, async t => {
      const topic = `reload-${encoding}-${mode}`;
      const records: Recorded[] = [];
      const page = await openPage(chromium.context, `${chromium.host.http}?auto=pubsub&topic=${topic}&encoding=${encoding}&mode=${mode}`, records);
      await eventually(() => readies(records).length === 1, 'the page subscribed');

      // 25 messages a second for 8 s, as the example: the pending limit of 64 gives a page 2.56 s to come back.
      await chromium.host.publish(topic, 200, 40);
      await eventually(() => numbers(records).length >= 40, 'the stream is under way');
      const first = await reloadAndWait(page, records);
      await eventually(() => numbers(records).length >= 120, 'the stream goes on after the first reload', 20_000, () => numbers(records).length);
      const second = await reloadAndWait(page, records);
      await eventually(async () => numbers(await pageLog(page)).length >= 200, 'every message arrived', 20_000, () => numbers(records).length);
      await new Promise(resolve => setTimeout(resolve, 300));

      t.diagnostic(`from reload to resumed and polling: ${first.tookMs} ms and ${second.tookMs} ms`);
      const logged = await pageLog(page);
      assert.deepEqual(numbers(logged), range(1, 200));
      const original = readies(logged)[0]!;
      assert.equal(original.resumed, false);
      for (const ready of [first, second]) {
        assert.equal(ready.resumed, true, JSON.stringify(ready));
        assert.equal(ready.session, original.session, 'a reload resumes the same session');
      }
    });
  }

  test('a send whose answer never came is sent again after the reload, with its number, and delivered once; one that never left is delivered once too', async () => {
    const proxy = await FaultProxy.start(chromium.host.http);
    try {
      const records: Recorded[] = [];
      const page = await openPage(chromium.context, `${proxy.url}?auto=pubsub&topic=unconfirmed`, records);
      await eventually(() => readies(records).length === 1, 'the page subscribed');

      // 1: the server takes the publish, the answer never comes. The page is reloaded while it waits.
      proxy.rule = ({ method, path }) => method === 'POST' && path.endsWith('/messages') ? { kind: 'hold-response' } : { kind: 'pass' };
      void page.evaluate(() => { void window.pubsub!.publish('unconfirmed', { n: 1 }, { echo: true }).catch(() => undefined); });
      await eventually(() => proxy.applied.some(a => a.fault === 'hold-response'), 'the publish is held');
      proxy.rule = () => ({ kind: 'pass' });
      const afterFirst = await reloadAndWait(page, records);
      await eventually(async () => numbers(await pageLog(page)).includes(1), 'the first publish arrived');

      // 2: the publish never reaches the server. The page is reloaded while it waits.
      proxy.rule = ({ method, path }) => method === 'POST' && path.endsWith('/messages') ? { kind: 'stall' } : { kind: 'pass' };
      void page.evaluate(() => { void window.pubsub!.publish('unconfirmed', { n: 2 }, { echo: true }).catch(() => undefined); });
      await eventually(() => proxy.applied.some(a => a.fault === 'stall'), 'the publish is stalled');
      proxy.rule = () => ({ kind: 'pass' });
      const afterSecond = await reloadAndWait(page, records);
      await eventually(async () => numbers(await pageLog(page)).includes(2), 'the second publish arrived');
      await new Promise(resolve => setTimeout(resolve, 1000));

      assert.deepEqual(numbers(await pageLog(page)), [1, 2]);
      assert.equal(afterFirst.resumed, true);
      assert.equal(afterSecond.resumed, true);
    } finally {
      await proxy.close();
    }
  });

  test('a tab opened with a copy of the session storage runs a session of its own: the Web Lock keeps two tabs off one session', async () => {
    const records = new Map<unknown, Recorded[]>();
    await chromium.context.exposeBinding('record', ({ page }, entry: Recorded) => {
      records.set(page, [...(records.get(page) ?? []), entry]);
    });
    const first = await chromium.context.newPage();
    await first.goto(`${chromium.host.http}?auto=pubsub&topic=duplicate&lockWaitMs=500`);
    await eventually(() => readies(records.get(first) ?? []).length === 1, 'the first tab subscribed');

    // window.open from the page copies its sessionStorage into the new tab, saved session and all.
    const opened = chromium.context.waitForEvent('page');
    await first.evaluate(() => { window.open(location.href); });
    const second = await opened;
    await eventually(() => readies(records.get(second) ?? []).length === 1, 'the second tab subscribed');
    await chromium.host.publish('duplicate', 20);
    await eventually(() => numbers(records.get(first)!).length === 20 && numbers(records.get(second)!).length === 20, 'both tabs received every message');
    await new Promise(resolve => setTimeout(resolve, 500));

    const [a, b] = [readies(records.get(first)!)[0]!, readies(records.get(second)!)[0]!];
    assert.notEqual(a.session, b.session);
    assert.equal(b.resumed, false);
    assert.equal(b.resumeFailure, 'session-shared');
    assert.ok(b.resumeFailureDetail?.includes(a.session!), 'the copy held the first tab\'s session');
    assert.deepEqual(numbers(records.get(first)!), range(1, 20));
    assert.deepEqual(numbers(records.get(second)!), range(1, 20));
    assert.ok([...records.values()].flat().every(r => r.kind !== 'error'));
    assert.deepEqual(records.get(second)!.filter(r => r.kind === 'loss').map(r => r.reason), ['session-shared'], 'the duplicated tab says it did not get the first tab\'s session');
    assert.deepEqual(records.get(first)!.filter(r => r.kind === 'loss'), []);
  });

  for (const policy of ['FaultSession', 'GapMarker'] as const) {
    test(`away longer than the pending limit allows, with ${policy}: ${policy === 'FaultSession' ? 'the session is faulted and a new one subscribes again' : 'a gap frame says how many were dropped'}`, async () => {
      // 8 pending messages at 10 a second: a page may be away 0.8 s. It stays away 2.5 s; a busy machine's gaps
      // between polls stay well under 0.8 s.
      const small = await Host.start({ pendingMessages: 8, overflowPolicy: policy });
      try {
        const topic = `away-${policy}`;
        const records: Recorded[] = [];
        const page = await openPage(chromium.context, `${small.http}?auto=pubsub&topic=${topic}`, records);
        await eventually(() => readies(records).length === 1, 'the page subscribed');
        // Settles when the server has published the 60th: on a busy machine the stream runs past its nominal 6 s, and
        // a second stream started by the clock interleaved with its tail on the server, which read as out of order.
        const streamOver = small.publish(topic, 60, 100, 1, true);
        streamOver.catch(() => undefined); // Awaited below; a failure before that must not surface as unhandled.
        await eventually(() => numbers(records).length >= 10, 'the stream is under way');
        await page.goto(`${small.http}elsewhere.html`);
        await new Promise(resolve => setTimeout(resolve, 2500));
        await page.goto(`${small.http}?auto=pubsub&topic=${topic}`);
        await eventually(() => readies(records).length === 2, 'the page is back');
        await streamOver;
        if (policy === 'GapMarker') {
          await eventually(() => numbers(records).at(-1) === 60, 'the stream ended', 20_000, () => numbers(records).at(-1));
        }

        // Published once the page is back and the server has published the whole stream: these come after it.
        await small.publish(topic, 5, 100, 1001);
        await eventually(async () => numbers(await pageLog(page)).at(-1) === 1005, 'the later messages arrived', 20_000, () => numbers(records).at(-1));

        const logged = await pageLog(page);
        const back = readies(logged)[1]!;
        const n = numbers(logged);
        assert.deepEqual(n, [...n].sort((x, y) => x - y), 'in order');
        assert.equal(new Set(n).size, n.length, 'no duplicates');
        assert.deepEqual(n.slice(-5), range(1001, 1005));
        const stream = n.filter(x => x <= 60);
        if (policy === 'FaultSession') {
          assert.equal(back.resumed, false);
          assert.equal(back.resumeFailure, 'session-faulted');
          assert.match(back.resumeFailureDetail!, /overflow/);
          assert.ok(stream.length < 60, 'what was published while no session existed is lost, as documented');
          // ...and said: one loss event on the page, naming the saved session and where it stopped.
          const losses = logged.filter(r => r.kind === 'loss');
          assert.deepEqual(losses.map(r => r.reason), ['session-faulted']);
        } else {
          assert.equal(back.resumed, true);
          const gaps = logged.filter(r => r.kind === 'gap');
          assert.ok(gaps.length >= 1, 'the time away left a gap');
          // Every message is either received or counted in a gap: loss is never silent.
          assert.equal(stream.length + gaps.reduce((sum, gap) => sum + gap.missed!, 0), 60, JSON.stringify(gaps));
          const losses = logged.filter(r => r.kind === 'loss');
          assert.deepEqual(losses.map(r => [r.reason, r.missed]), gaps.map(gap => ['gap', gap.missed]), 'each gap is a loss event too');
        }
      } finally {
        await small.stop();
      }
    });
  }
});
