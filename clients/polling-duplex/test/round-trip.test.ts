import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { noChromium, openPage } from './support/browser.js';
import { FaultProxy } from './support/fault-proxy.js';
import { chromiumFixture } from './support/fixture.js';

interface LoggedRequest {
  method: string;
  path: string;
  appToken: string;
  cookie: string | null;
  authorization: string;
  hasSessionToken: boolean;
}

describe('round trips in Chromium', { skip: noChromium, timeout: 120_000 }, () => {
  const chromium = chromiumFixture();

  for (const encoding of ['text', 'binary'] as const) {
    for (const mode of ['single', 'multiple'] as const) {
      test(`${encoding}, ${mode}: the echo endpoint sends every message back once, in order, unchanged`, async () => {
        const page = await openPage(chromium.context, chromium.host.http);
        const result = await page.evaluate(async ({ encoding, mode }) => {
          const { PollingDuplexClient } = window.duplex;
          const client = new PollingDuplexClient<'text' | 'binary'>('/echo', { encoding, mode, resume: false });
          const session = await client.open();
          const random = new Uint8Array(1000);
          crypto.getRandomValues(random);
          const sent: unknown[] = encoding === 'binary'
            ? [Uint8Array.from({ length: 256 }, (_, i) => i), new Uint8Array(0), new Uint8Array(60_000).fill(7), random]
            : [{ text: 'héllo ✓ 😀', nested: [1, null, true, { deep: 'x' }] }, 'a line\nbreak and "quotes"', 42, null, [], 1.5e300];
          const received: unknown[] = [];
          const seqs: number[] = [];
          // Events in one mode, the async iterator in the other: both hand over the same stream.
          const reading = (async () => {
            if (mode === 'single') {
              await new Promise<void>(resolve => session.addEventListener('message', e => {
                seqs.push(e.seq);
                received.push(e.data);
                if (received.length === sent.length) {
                  resolve();
                }
              }));
              return;
            }

            for await (const item of session.messages()) {
              if (item.kind === 'message') {
                seqs.push(item.seq);
                received.push(item.data);
              }

              if (received.length === sent.length) {
                break;
              }
            }
          })();
          for (const message of sent) {
            await session.send(message as never);
          }

          await reading;
          await session.close();
          const same = sent.map((message, i) => {
            const got = received[i];
            if (message instanceof Uint8Array) {
              const bytes = new Uint8Array(got as ArrayBuffer);
              return got instanceof ArrayBuffer && bytes.length === message.length && bytes.every((b, j) => b === message[j]);
            }

            return JSON.stringify(got) === JSON.stringify(message);
          });
          return { seqs, same, state: session.state };
        }, { encoding, mode });

        assert.deepEqual(result.seqs, result.seqs.map((_, i) => i + 1));
        assert.deepEqual(result.same, result.same.map(() => true));
        assert.equal(result.state, 'closed');
        await page.close();
      });

      test(`${encoding}, ${mode}: pub/sub clients hear each other's publishes, each once and in order`, async () => {
        const page = await openPage(chromium.context, chromium.host.http);
        const heard = await page.evaluate(async ({ encoding, mode }) => {
          const { PubSubClient } = window.duplex;
          const options = { encoding, mode, resume: false } as const;
          const alice = await PubSubClient.connect<'text' | 'binary'>('/pubsub', options);
          const bob = await PubSubClient.connect<'text' | 'binary'>('/pubsub', options);
          const topic = `room-${encoding}-${mode}`;
          await alice.subscribe(topic);
          await bob.subscribe(topic);
          const log = { alice: [] as unknown[], bob: [] as unknown[] };
          alice.addEventListener('message', e => log.alice.push(e.data));
          bob.addEventListener('message', e => log.bob.push(e.data));
          await Promise.all([
            ...[1, 2, 3].map(n => alice.publish(topic, { from: 'alice', n }, { echo: true })),
            ...[1, 2].map(n => bob.publish(topic, { from: 'bob', n })),
          ]);
          const deadline = Date.now() + 10_000;
          while ((log.alice.length < 5 || log.bob.length < 3) && Date.now() < deadline) {
            await new Promise(resolve => setTimeout(resolve, 20));
          }

          await alice.close();
          await bob.close();
          return log;
        }, { encoding, mode });

        const from = (log: unknown[], who: string) => log.filter(m => (m as { from: string }).from === who).map(m => (m as { n: number }).n);
        assert.deepEqual(from(heard.alice, 'alice'), [1, 2, 3], 'alice hears her own publishes (echo) in order');
        assert.deepEqual(from(heard.alice, 'bob'), [1, 2], 'alice hears bob');
        assert.deepEqual(from(heard.bob, 'alice'), [1, 2, 3], 'bob hears alice');
        assert.deepEqual(from(heard.bob, 'bob'), [], 'bob does not hear himself without echo');
        await page.close();
      });

      test(`${encoding}, ${mode}: a burst of 40 echoes takes ${mode === 'single' ? 'one poll per message' : 'a few polls in all'}`, async () => {
        const page = await openPage(chromium.context, chromium.host.http);
        const polls = await page.evaluate(async ({ encoding, mode }) => {
          performance.setResourceTimingBufferSize(10_000);
          const { PollingDuplexClient } = window.duplex;
          const session = await new PollingDuplexClient<'text' | 'binary'>('/echo', { encoding, mode, resume: false }).open();
          let count = 0;
          const all = new Promise<void>(resolve => session.addEventListener('message', () => { if (++count === 40) resolve(); }));
          const pollsBefore = performance.getEntriesByType('resource').filter(e => e.name.includes(`/sessions/${session.id}/poll`)).length;
          await Promise.all(Array.from({ length: 40 }, (_, i) => session.send((encoding === 'binary' ? new Uint8Array([i]) : i) as never)));
          await all;
          // A request joins the resource timeline when its response ends, just after its last message was handed over.
          await new Promise(resolve => setTimeout(resolve, 300));
          const pollsAfter = performance.getEntriesByType('resource').filter(e => e.name.includes(`/sessions/${session.id}/poll`)).length;
          await session.close();
          return pollsAfter - pollsBefore;
        }, { encoding, mode });

        if (mode === 'single') {
          assert.ok(polls >= 40, `single mode answered 40 messages with ${polls} polls`);
        } else {
          assert.ok(polls <= 10, `multiple mode answered 40 messages with ${polls} polls`);
        }

        await page.close();
      });
    }
  }

  test('batches(): a flood arrives once and in order, many messages a step; then a message listener hears what follows, and removing it by another capture flag removes nothing', async () => {
    const page = await openPage(chromium.context, chromium.host.http);
    const result = await page.evaluate(async () => {
      const { PollingDuplexClient } = window.duplex;
      const session = await new PollingDuplexClient<'binary'>('/flood', { encoding: 'binary', mode: 'multiple', resume: false }).open();
      await session.send(new TextEncoder().encode(JSON.stringify({ size: 32 })));
      const seqs: number[] = [];
      let largest = 0;
      for await (const batch of session.batches()) {
        largest = Math.max(largest, batch.length);
        seqs.push(...batch.map(item => item.seq));
        if (seqs.length >= 3000) {
          break;
        }
      }

      const heard: number[] = [];
      const listener = (e: { seq: number }) => { heard.push(e.seq); };
      session.addEventListener('message', listener);
      session.removeEventListener('message', listener, { capture: true });
      await new Promise<void>(resolve => {
        const check = () => heard.length >= 500 ? resolve() : setTimeout(check, 10);
        check();
      });
      session.removeEventListener('message', listener);
      const lastHeard = heard.length;
      await new Promise(resolve => setTimeout(resolve, 200));
      const heardAfterRemoval = heard.length - lastHeard;
      await session.close();
      return { seqs, largest, heard: heard.slice(0, lastHeard), heardAfterRemoval, lastReceived: session.lastReceived };
    });

    assert.deepEqual(result.seqs, result.seqs.map((_, i) => i + 1), 'batches hand over 1, 2, 3, … with nothing missing or repeated');
    assert.ok(result.largest > 1, `the largest batch held ${result.largest} messages`);
    assert.ok(result.heard[0]! > result.seqs.at(-1)!, 'the listener hears what came after the iterator');
    assert.deepEqual(result.heard, result.heard.map((_, i) => result.heard[0]! + i), 'the listener hears every message after its first, in order');
    assert.equal(result.heardAfterRemoval, 0, 'a removed listener hears nothing more');
    assert.ok(result.lastReceived >= result.heard.at(-1)!, 'messages nobody listens to are still handed over and acknowledged');
    await page.close();
  });

  test('sends: a refused message rejects alone with its problem code, the ones around it arrive, and a failing handler is reported', async () => {
    const page = await openPage(chromium.context, chromium.host.http);
    const result = await page.evaluate(async () => {
      const { PollingDuplexClient, MessageRejectedError } = window.duplex;
      const session = await new PollingDuplexClient('/echo', { resume: false }).open();
      const echoed: unknown[] = [];
      session.addEventListener('message', e => echoed.push(e.data));
      const outcome = (p: Promise<void>) => p.then(() => 'ok', (e: { name: string; code: string; status?: number }) => `${e.name} ${e.code} ${e.status ?? ''}`.trim());
      // Sent together, so they travel in one request: the server refuses the middle one and takes the others.
      const together = await Promise.all([outcome(session.send('a')), outcome(session.send('reject me')), outcome(session.send('b'))]);
      const failing = await outcome(session.send('fail me'));
      const after = await outcome(session.send('c'));
      const tooLarge = await outcome(session.send('x'.repeat(70_000)));
      const aborted = new AbortController();
      aborted.abort(new DOMException('changed my mind', 'AbortError'));
      const abortedBefore = await session.send('never', { signal: aborted.signal }).then(() => 'sent', (e: Error) => e.name);
      const deadline = Date.now() + 5000;
      while (echoed.length < 3 && Date.now() < deadline) {
        await new Promise(resolve => setTimeout(resolve, 20));
      }

      await session.close();
      const afterClose = await outcome(session.send('late'));
      return { together, failing, after, tooLarge, abortedBefore, echoed, afterClose, rejectedIsTyped: MessageRejectedError.name };
    });

    assert.deepEqual(result.together, ['ok', 'MessageRejectedError message-rejected 422', 'ok']);
    assert.equal(result.failing, 'DuplexError handler-failed 500');
    assert.equal(result.after, 'ok');
    assert.equal(result.tooLarge, 'DuplexError message-too-large');
    assert.equal(result.abortedBefore, 'AbortError');
    assert.deepEqual(result.echoed, ['a', 'b', 'c']);
    assert.equal(result.afterClose, 'DuplexError closed');
    await page.close();
  });

  test('misuse is refused clearly: two resumable sessions under one key, two iterators at once; an aborted iterator makes way for another', async () => {
    const page = await openPage(chromium.context, chromium.host.http);
    const result = await page.evaluate(async () => {
      const { PollingDuplexClient } = window.duplex;
      const first = await new PollingDuplexClient('/echo').open();
      const second = await new PollingDuplexClient('/echo').open().then(() => 'opened', (e: Error) => e.message);
      const own = await new PollingDuplexClient('/echo', { resume: { key: 'another' } }).open();
      const stop = new AbortController();
      const iterator = first.messages({ signal: stop.signal });
      const twice = (() => {
        try {
          first.messages();
          return 'allowed';
        } catch (e) {
          return (e as Error).message;
        }
      })();
      const reading = iterator.next().then(() => 'read', (e: Error) => e.name);
      stop.abort(new DOMException('enough', 'AbortError'));
      const aborted = await reading;
      const next = first.messages();
      await first.send('after the abort');
      const item = await next.next();
      await Promise.all([first.close(), own.close()]);
      const afterClose = await new PollingDuplexClient('/echo').open().then(async s => { await s.close(); return 'opened'; });
      return { second, twice, aborted, item: item.value, afterClose };
    });

    assert.match(result.second, /already keeps its state under 'channelpool-duplex:http:\/\/127\.0\.0\.1:\d+\/echo\/'/);
    assert.match(result.twice, /already has an open iterator/);
    assert.equal(result.aborted, 'AbortError');
    assert.deepEqual(result.item, { kind: 'message', seq: 1, data: 'after the abort' });
    assert.equal(result.afterClose, 'opened', 'a closed session gives its key back');
    await page.close();
  });

  test("credentials: every request carries the page's cookies and the app's headers, its own Authorization too, asked for again each time so they can change", async () => {
    await chromium.host.control('requests', { method: 'DELETE' });
    const page = await openPage(chromium.context, chromium.host.http);
    await page.evaluate(async () => {
      await fetch('/control/cookie');
      let appToken = 'v1';
      // The app's own bearer token travels in Authorization on every request: the session token has a header of its own.
      const client = new window.duplex.PollingDuplexClient('/echo', { resume: false, headers: () => ({ 'X-App-Token': appToken, Authorization: `Bearer ${appToken}` }) });
      const session = await client.open();
      // Both echoes come back on polls, so polls are in the log too, not only the sends (a close right after the sends
      // could beat the first poll).
      let echoed = 0;
      const bothEchoed = new Promise<void>(resolve => session.addEventListener('message', () => { if (++echoed === 2) resolve(); }));
      await session.send('with v1');
      appToken = 'v2';
      await session.send('with v2');
      await bothEchoed;
      await session.close();
    });

    const log = await (await chromium.host.control('requests')).json() as LoggedRequest[];
    const open = log.find(r => r.method === 'POST' && r.path === '/echo/sessions')!;
    const sends = log.filter(r => r.path.endsWith('/messages'));
    const close = log.find(r => r.method === 'DELETE')!;
    assert.ok(log.every(r => r.cookie === 'cookie-from-the-app'), `a request went without the cookie: ${JSON.stringify(log)}`);
    assert.ok(log.every(r => r.authorization === `Bearer ${r.appToken}`), `a request went without the app's Authorization: ${JSON.stringify(log)}`);
    assert.ok(log.some(r => r.method === 'GET'), 'the session polled');
    assert.ok(log.filter(r => r !== open).every(r => r.hasSessionToken), `a session request went without Duplex-Session-Token: ${JSON.stringify(log)}`);
    assert.equal(open.appToken, 'v1');
    assert.equal(open.hasSessionToken, false);
    assert.deepEqual(sends.map(r => [r.appToken, r.hasSessionToken]), [['v1', true], ['v2', true]]);
    assert.equal(close.appToken, 'v2');
    assert.equal(close.hasSessionToken, true);
    await page.close();
  });

  test('a page on another origin: with the CORS policy the documents show, cookies, the app\'s header and the session token all get through', async t => {
    // The proxy is another origin (another port) for the same server: the page comes from it, the endpoint does not.
    const proxy = await FaultProxy.start(chromium.host.http);
    try {
      await chromium.host.control('requests', { method: 'DELETE' });
      const page = await openPage(chromium.context, proxy.url);
      const echoed = await page.evaluate(async endpoint => {
        await fetch('/control/cookie');
        const client = new window.duplex.PollingDuplexClient(endpoint, { resume: false, headers: () => ({ 'X-App-Token': 'cross', Authorization: 'Bearer cross' }) });
        const session = await client.open();
        const received: unknown[] = [];
        const got = new Promise(resolve => session.addEventListener('message', e => {
          received.push(e.data);
          if (received.length === 3) {
            resolve(received);
          }
        }));
        for (const n of [1, 2, 3]) {
          await session.send({ from: location.origin, n });
          await new Promise(resolve => setTimeout(resolve, 100));
        }

        const data = await got;
        await session.close();
        return data;
      }, `${chromium.host.http}cors/echo`);

      const origin = proxy.url.replace(/\/$/, '');
      assert.deepEqual(echoed, [1, 2, 3].map(n => ({ from: origin, n })));
      const log = await (await chromium.host.control('requests')).json() as LoggedRequest[];
      const preflights = log.filter(r => r.method === 'OPTIONS');
      const requests = log.filter(r => r.method !== 'OPTIONS');
      t.diagnostic(`${requests.length} requests took ${preflights.length} preflights, ${preflights.filter(r => r.path.endsWith('/poll')).length} of them for polls`);
      assert.ok(preflights.length >= 1, 'the requests were cross-origin');
      assert.ok(requests.length >= 6, JSON.stringify(log));
      assert.ok(requests.every(r => r.cookie === 'cookie-from-the-app' && r.appToken === 'cross' && r.authorization === 'Bearer cross'), JSON.stringify(requests));
      assert.ok(requests.filter(r => r.path !== '/cors/echo/sessions').every(r => r.hasSessionToken));
    } finally {
      await proxy.close();
    }
  });
  test("the server's topic rule: a forbidden topic rejects with topic-forbidden, a rule that throws with topic-authorization-failed, a bad name before it is sent, and the session goes on", async () => {
    const page = await openPage(chromium.context, chromium.host.http);
    const result = await page.evaluate(async () => {
      const pubsub = await window.duplex.PubSubClient.connect('/pubsub', { resume: false });
      const sessionId = pubsub.session.id;
      const outcome = async (call: () => Promise<void>) => {
        try {
          await call();
          return 'ok';
        } catch (error) {
          const e = error as { name: string; code?: string; status?: number };
          return `${e.name} ${e.code ?? ''} ${e.status ?? ''}`.trim();
        }
      };
      const heard: unknown[] = [];
      pubsub.addEventListener('message', e => heard.push(e.data));
      const forbidden = await outcome(() => pubsub.subscribe('forbidden/a'));
      const publish = await outcome(() => pubsub.publish('forbidden/a', 1));
      const broken = await outcome(() => pubsub.subscribe('broken/a'));
      const control = await outcome(() => pubsub.subscribe('a\u0007b'));
      // Three subscribes at once travel in one or two requests: the forbidden one in the middle is refused alone, and
      // the one after it is sent again and taken.
      const batch = await Promise.all(['room-1', 'forbidden/b', 'room-2'].map(topic => outcome(() => pubsub.subscribe(topic))));
      await pubsub.publish('room-2', 'after', { echo: true });
      const deadline = Date.now() + 10_000;
      while (heard.length < 1 && Date.now() < deadline) {
        await new Promise(resolve => setTimeout(resolve, 20));
      }

      const state = { forbidden, publish, broken, control, batch, heard, topics: [...pubsub.topics].sort(), sameSession: pubsub.session.id === sessionId, state: pubsub.state };
      await pubsub.close();
      return state;
    });

    assert.equal(result.forbidden, 'MessageRejectedError topic-forbidden 403');
    assert.equal(result.publish, 'MessageRejectedError topic-forbidden 403');
    assert.equal(result.broken, 'DuplexError topic-authorization-failed 500');
    assert.equal(result.control, 'RangeError');
    assert.deepEqual(result.batch, ['ok', 'MessageRejectedError topic-forbidden 403', 'ok']);
    assert.deepEqual(result.heard, ['after']);
    assert.deepEqual(result.topics, ['room-1', 'room-2'], 'refused topics are not kept for a resubscribe');
    assert.equal(result.sameSession, true);
    assert.equal(result.state, 'open');
    await page.close();
  });
});
