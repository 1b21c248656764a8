import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { eventually, noChromium, openPage } from './support/browser.js';
import { FaultProxy } from './support/fault-proxy.js';
import { chromiumFixture } from './support/fixture.js';

interface Recorded {
  kind: string;
  data?: { n: number };
  code?: string;
}

/** A seeded random source, so a failing run can be replayed with the same cuts. */
function seeded(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function numbers(records: Recorded[]): number[] {
  return records.filter(r => r.kind === 'message').map(r => r.data!.n);
}

describe('faults between Chromium and the server', { skip: noChromium, timeout: 180_000 }, () => {
  // A pending limit well above the default: these tests are about faults, and neither a burst nor a retry on a busy
  // machine may overflow the session (the overflow outcomes have tests of their own in resume.test.ts).
  const chromium = chromiumFixture({ pollTimeoutMs: 3000, pendingMessages: 1000 }, { contextPerTest: true });
  let proxy: FaultProxy;
  before(async () => {
    proxy = await FaultProxy.start(chromium.host.http);
  });
  beforeEach(() => {
    proxy.rule = () => ({ kind: 'pass' });
    proxy.applied.length = 0;
    proxy.counts.clear();
    proxy.bodiesCut = 0;
  });
  after(async () => {
    await proxy?.close();
  });

  for (const encoding of ['text', 'binary'] as const) {
    test(`${encoding}: poll responses cut in the middle of their body lose nothing and duplicate nothing`, async t => {
      const topic = `cut-${encoding}`;
      const records: Recorded[] = [];
      await openPage(chromium.context, `${proxy.url}?auto=pubsub&topic=${topic}&encoding=${encoding}`, records);
      await eventually(() => records.some(r => r.kind === 'ready'), 'the page subscribed');

      // Poll responses are cut after 1 to 400 bytes (mid-header, mid-frame or between frames) until ten were cut.
      const random = seeded(encoding === 'text' ? 22 : 23);
      proxy.rule = request => request.method === 'GET' && proxy.bodiesCut < 10 ? { kind: 'cut-body', bytes: 1 + Math.floor(random() * 400) } : { kind: 'pass' };
      await chromium.host.publish(topic, 300);
      await chromium.host.publish(topic, 200, 5, 301);
      await eventually(() => numbers(records).length >= 500, 'all 500 messages arrived', 60_000, () => numbers(records).length);
      await new Promise(resolve => setTimeout(resolve, 300));

      assert.deepEqual(numbers(records), Array.from({ length: 500 }, (_, i) => i + 1));
      const cuts = proxy.bodiesCut;
      t.diagnostic(`${proxy.counts.get('GET poll')} polls, ${cuts} of them cut mid-body`);
      assert.ok(cuts >= 10, `only ${cuts} responses were cut`);
      assert.ok(records.some(r => r.kind === 'reconnecting'), 'the client reported its retries');
      assert.ok(!records.some(r => r.kind === 'error'), JSON.stringify(records.filter(r => r.kind === 'error')));
    });
  }

  test("a balancer's own 503 with Retry-After, a 502, a rate limiter's 429, a send answer that never comes and a dropped send are each retried, and every message arrives once", async () => {
    proxy.rule = ({ method, path, nth }) => {
      if (method === 'POST' && path.endsWith('/messages') && nth === 1) {
        // The sample server's rate limit answers with a problem body of its own code: still a request to repeat.
        const problem = JSON.stringify({ status: 429, title: 'Too many requests', code: 'rate-limited' });
        return { kind: 'answer', status: 429, headers: { 'Retry-After': '1', 'Content-Type': 'application/problem+json' }, body: problem };
      }

      if (method === 'POST' && path.endsWith('/sessions') && nth === 1) {
        return { kind: 'answer', status: 503, headers: { 'Retry-After': '1', 'Content-Type': 'text/html' }, body: '<h1>Service Unavailable</h1>' };
      }

      if (method === 'GET' && nth === 2) {
        return { kind: 'answer', status: 502, body: 'Bad Gateway' };
      }

      if (method === 'POST' && path.endsWith('/messages') && nth === 2) {
        // The server takes the message; its answer never comes, and the client's request timeout ends the wait.
        return { kind: 'hold-response' };
      }

      return method === 'POST' && path.endsWith('/messages') && nth === 3 ? { kind: 'drop-request' } : { kind: 'pass' };
    };
    const page = await openPage(chromium.context, proxy.url);
    const result = await page.evaluate(async () => {
      const started = performance.now();
      const pubsub = await window.duplex.PubSubClient.connect('/pubsub', { resume: false, retry: { baseDelayMs: 100, maxDelayMs: 1000 }, requestTimeoutMs: 1000 });
      const openedAfter = performance.now() - started;
      const heard: unknown[] = [];
      let retries = 0;
      pubsub.addEventListener('message', e => heard.push(e.data));
      pubsub.addEventListener('reconnecting', () => retries++);
      await pubsub.subscribe('balancer');
      for (const n of [1, 2, 3]) {
        await pubsub.publish('balancer', n, { echo: true });
      }

      const deadline = Date.now() + 10_000;
      while (heard.length < 3 && Date.now() < deadline) {
        await new Promise(resolve => setTimeout(resolve, 20));
      }

      await new Promise(resolve => setTimeout(resolve, 500));
      await pubsub.close();
      return { openedAfter, heard, retries };
    });

    assert.deepEqual(proxy.applied.map(a => a.fault).sort(), ['answer', 'answer', 'answer', 'drop-request', 'hold-response']);
    assert.ok(result.openedAfter >= 1000, `the open waited ${result.openedAfter} ms, less than the balancer's Retry-After of 1 s`);
    assert.deepEqual(result.heard, [1, 2, 3]);
    // The dropped send may never reach this client: Chromium itself sends a request again, POST too, when a reused
    // connection dies before any answer. The 502 and the send that timed out always do.
    assert.ok(result.retries >= 2, `${result.retries} retries reported`);
  });

  test('a broken frame from the server: the frames before it arrive, then one clear error, the session ends, and it does not poll again', async () => {
    const page = await openPage(chromium.context, chromium.host.http);
    const pollsBefore = ((await (await chromium.host.control('broken-polls')).json()) as { count: number }).count;
    const result = await page.evaluate(async () => {
      const { PollingDuplexClient } = window.duplex;
      const outcomes: Record<string, unknown> = {};

      // Text through events.
      const text = await new PollingDuplexClient('/broken', { encoding: 'text', resume: false }).open();
      const textLog: string[] = [];
      text.addEventListener('message', e => textLog.push(`message ${e.seq} ${JSON.stringify(e.data)}`));
      text.addEventListener('error', e => textLog.push(`error ${e.error.name} ${e.error.code}: ${e.error.message}`));
      text.addEventListener('end', e => textLog.push(`end ${e.error?.code}`));
      outcomes['textEnded'] = await Promise.race([text.ended.then(e => e?.code), new Promise(resolve => setTimeout(() => resolve('hung'), 10_000))]);
      outcomes['text'] = textLog;
      outcomes['textState'] = text.state;

      // Binary through the async iterator, which throws the error after the good frame.
      const binary = await new PollingDuplexClient('/broken', { encoding: 'binary', resume: false }).open();
      const binaryLog: string[] = [];
      try {
        for await (const item of binary) {
          binaryLog.push(`item ${item.seq} ${item.kind === 'message' ? new TextDecoder().decode(item.data) : 'gap'}`);
        }
      } catch (error) {
        binaryLog.push(`threw ${(error as Error).name} ${(error as { code: string }).code}`);
      }

      outcomes['binary'] = binaryLog;
      return outcomes;
    });

    assert.equal(result['textEnded'], 'malformed-frame');
    assert.equal(result['textState'], 'failed');
    const text = result['text'] as string[];
    assert.equal(text[0], 'message 1 "ok"');
    assert.match(text[1]!, /^error ProtocolError malformed-frame: The server sent a frame this client cannot read: a line is not JSON/);
    assert.equal(text[2], 'end malformed-frame');
    assert.equal(text.length, 3);
    assert.deepEqual(result['binary'], ['item 1 ok', 'threw ProtocolError malformed-frame']);
    await new Promise(resolve => setTimeout(resolve, 1500));
    const pollsAfter = ((await (await chromium.host.control('broken-polls')).json()) as { count: number }).count;
    assert.equal(pollsAfter - pollsBefore, 2, 'each session polled once, and stopped at the broken frame');
  });
});
