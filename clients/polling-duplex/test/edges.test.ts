import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { eventually, noChromium, openPage } from './support/browser.js';
import { FaultProxy, type Fault, type ProxiedRequest } from './support/fault-proxy.js';
import { chromiumFixture } from './support/fixture.js';
import { packageRoot } from './support/host.js';

/**
 * The edges a real page meets (issue 37): every request kind with its answer cut at every point, a random mix of
 * faults across reloads, each way messages can be lost saying so, the page's lifecycle, the served types, and a
 * cross-site form that cannot open a session. One server, one proxy, one browser for the file.
 */

interface Recorded {
  kind: string;
  data?: { n: number };
  code?: string;
  reason?: string;
  resumed?: boolean;
  session?: string;
}

const AWAY_GRACE_MS = 1500;

const faults: Record<string, Fault> = {
  'reset before the headers': { kind: 'lose-response' },
  'cut inside the headers': { kind: 'cut-headers', bytes: 24 },
  'cut inside the body': { kind: 'cut-body', bytes: 6 },
  'reset after the answer': { kind: 'reset-after' },
};

/** Which request of a scenario each kind is: the scenario's requests go in a fixed order (see `scenario`). */
const kinds: Record<string, (r: ProxiedRequest) => boolean> = {
  open: r => r.method === 'POST' && /\/sessions$/.test(r.path),
  subscribe: r => r.method === 'POST' && r.path.endsWith('/messages') && r.nth === 1,
  publish: r => r.method === 'POST' && r.path.endsWith('/messages') && r.nth === 2,
  poll: r => r.method === 'GET' && r.path.endsWith('ack=0'),
  ack: r => r.method === 'GET' && /ack=[1-9]\d*$/.test(r.path),
  close: r => r.method === 'DELETE',
};

function numbers(records: Recorded[]): number[] {
  return records.filter(r => r.kind === 'message').map(r => r.data!.n);
}

function seeded(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A harness page's own log: what the application received, kept across reloads in sessionStorage. */
async function pageLog(page: Page): Promise<Recorded[]> {
  return page.evaluate(() => JSON.parse(sessionStorage.getItem('harness:log') ?? '[]') as Recorded[]);
}

describe('the edges a page meets, in Chromium', { skip: noChromium, timeout: 300_000 }, () => {
  const chromium = chromiumFixture({ pollTimeoutMs: 2000, pendingMessages: 1000, awayGraceMs: AWAY_GRACE_MS });
  let proxy: FaultProxy;
  let page: Page;
  before(async () => {
    proxy = await FaultProxy.start(chromium.host.http);
    page = await openPage(chromium.context, proxy.url);
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

  /** Opens a pub/sub client, subscribes, publishes two messages to itself and reads them, and closes. */
  async function scenario(topic: string): Promise<{ heard: unknown[]; events: string[] }> {
    return page.evaluate(async topic => {
      const { PubSubClient } = window.duplex;
      const events: string[] = [];
      const heard: unknown[] = [];
      const client = await PubSubClient.connect('/pubsub', { resume: false, retry: { baseDelayMs: 50, maxDelayMs: 300 }, requestTimeoutMs: 3000, pollGraceMs: 1000 });
      client.addEventListener('message', e => heard.push(e.data));
      client.addEventListener('error', e => events.push(`error ${e.error.code}`));
      client.addEventListener('loss', e => events.push(`loss ${e.reason}`));
      client.addEventListener('reopened', e => events.push(`reopened ${e.error.code}`));
      const until = async (n: number) => {
        const deadline = Date.now() + 10_000;
        while (heard.length < n && Date.now() < deadline) {
          await new Promise(resolve => setTimeout(resolve, 10));
        }
      };
      await client.subscribe(topic);
      await client.publish(topic, 1, { echo: true });
      await until(1);
      // Past the batch window, so message 2 travels on the next poll, the one that acknowledges message 1.
      await new Promise(resolve => setTimeout(resolve, 60));
      await client.publish(topic, 2, { echo: true });
      await until(2);
      await new Promise(resolve => setTimeout(resolve, 100));
      await client.close();
      return { heard, events };
    }, topic);
  }

  for (const [kind, matches] of Object.entries(kinds)) {
    for (const [name, fault] of Object.entries(faults)) {
      if (kind === 'close' && fault.kind === 'cut-body') {
        continue; // A close is answered 204: no body to cut.
      }

      test(`${kind}: its answer ${name}: nothing lost or duplicated, no error, no orphan session`, async () => {
        const before = await chromium.host.sessions();
        let applied = false;
        proxy.rule = request => {
          if (!applied && matches(request)) {
            applied = true;
            return fault;
          }

          return { kind: 'pass' };
        };

        const result = await scenario(`edge-${kind}-${fault.kind}`);

        assert.ok(applied, `the ${kind} request was faulted`);
        assert.deepEqual(result.heard, [1, 2]);
        assert.deepEqual(result.events, []);
        await eventually(async () => (await chromium.host.sessions()) === before, 'the server holds no session of the scenario', 5000, () => before);
      });
    }
  }

  for (const [name, fault] of Object.entries(faults)) {
    test(`resume after a reload: its answer ${name}: the session resumes, nothing lost or duplicated`, async () => {
      const topic = `edge-resume-${fault.kind}`;
      const records: Recorded[] = [];
      const tab = await openPage(chromium.context, `${proxy.url}?auto=pubsub&topic=${topic}&requestTimeoutMs=3000`, records);
      await eventually(() => records.some(r => r.kind === 'ready'), 'the page subscribed');
      await chromium.host.publish(topic, 1);
      await eventually(() => numbers(records).length >= 1, 'message 1 arrived');

      let applied = false;
      proxy.counts.clear();
      proxy.rule = request => {
        // After the reload, the first send is the resume: an empty one.
        if (!applied && request.method === 'POST' && request.path.endsWith('/messages')) {
          applied = true;
          return fault;
        }

        return { kind: 'pass' };
      };
      records.length = 0;
      await tab.reload();
      await eventually(() => records.some(r => r.kind === 'ready'), 'the reloaded page is ready');
      await chromium.host.publish(topic, 1, 0, 2);
      await eventually(async () => numbers(await pageLog(tab)).length >= 2, 'message 2 arrived');
      await new Promise(resolve => setTimeout(resolve, 200));

      const log = await pageLog(tab);
      assert.ok(applied);
      assert.deepEqual(numbers(log), [1, 2]);
      assert.equal(log.filter(r => r.kind === 'ready').at(-1)!.resumed, true, 'the reload resumed its session');
      assert.deepEqual(log.filter(r => ['error', 'loss', 'reopened'].includes(r.kind)), []);
      await tab.close({ runBeforeUnload: true });
    });
  }

  test('a random mix of faults on 7% of requests, across three reloads with a burst during one: every message once, in order', async t => {
    const topic = 'edge-mix';
    const records: Recorded[] = [];
    const tab = await openPage(chromium.context, `${proxy.url}?auto=pubsub&topic=${topic}&mode=single&requestTimeoutMs=3000&pollGraceMs=2000`, records);
    await eventually(() => records.some(r => r.kind === 'ready'), 'the page subscribed');
    const random = seeded(37);
    const kinds = Object.values(faults);
    proxy.rule = () => (random() < 0.07 ? kinds[Math.floor(random() * kinds.length)]! : { kind: 'pass' });

    let next = 1;
    const publishing: Promise<void>[] = [];
    for (let reload = 0; reload < 3; reload++) {
      await chromium.host.publish(topic, 60, 2, next, true);
      next += 60;

      // The second reload happens in the middle of a burst.
      if (reload === 1) {
        publishing.push(chromium.host.publish(topic, 150, 1, next, true));
        next += 150;
      }

      records.length = 0;
      await tab.reload();
      await eventually(() => records.some(r => r.kind === 'ready'), `the page is ready after reload ${reload + 1}`, 30_000);

      // One publisher at a time: the topic's order is the order of publishing.
      await Promise.all(publishing.splice(0));
    }

    await chromium.host.publish(topic, 30, 2, next, true);
    next += 30;
    await eventually(async () => numbers(await pageLog(tab)).length >= next - 1, 'every message arrived', 60_000);
    await new Promise(resolve => setTimeout(resolve, 300));

    const log = await pageLog(tab);
    const byKind = new Map<string, number>();
    proxy.applied.forEach(a => byKind.set(a.fault, (byKind.get(a.fault) ?? 0) + 1));
    t.diagnostic(`${proxy.applied.length} faults: ${JSON.stringify(Object.fromEntries(byKind))}`);
    assert.deepEqual(numbers(log), Array.from({ length: next - 1 }, (_, i) => i + 1));
    assert.ok(proxy.applied.length >= 5, `only ${proxy.applied.length} faults`);
    assert.deepEqual(log.filter(r => ['error', 'loss', 'reopened'].includes(r.kind)), []);
    await tab.close();
  });

  test('a page closed for good frees its session within the grace; a reload keeps it', async () => {
    const topic = 'edge-closed';
    const records: Recorded[] = [];
    const tab = await openPage(chromium.context, `${chromium.host.http}?auto=pubsub&topic=${topic}`, records);
    await eventually(() => records.some(r => r.kind === 'ready'), 'the page subscribed');
    const session = records.find(r => r.kind === 'ready')!.session;

    // A reload sends the away request too, and comes back within the grace.
    records.length = 0;
    await tab.reload();
    await eventually(() => records.some(r => r.kind === 'ready'), 'the reloaded page is ready');
    const ready = records.find(r => r.kind === 'ready')!;
    assert.equal(ready.session, session);
    assert.equal(ready.resumed, true);
    await new Promise(resolve => setTimeout(resolve, AWAY_GRACE_MS * 2));
    assert.equal(await chromium.host.subscribers(topic), 1, 'past the grace, the reloaded page still has its session');

    const closed = Date.now();
    await tab.close({ runBeforeUnload: true });
    await eventually(async () => (await chromium.host.subscribers(topic)) === 0, 'the closed page\'s session ended', AWAY_GRACE_MS + 8000);
    assert.ok(Date.now() - closed >= AWAY_GRACE_MS - 200, 'not before the grace');
  });

  test('a page away longer than the grace comes back to a new session, and says what it lost: loss session-expired', async () => {
    const topic = 'edge-expired';
    const records: Recorded[] = [];
    const before = await chromium.host.sessions();
    const tab = await openPage(chromium.context, `${chromium.host.http}?auto=pubsub&topic=${topic}`, records);
    await eventually(() => records.some(r => r.kind === 'ready'), 'the page subscribed');
    await chromium.host.publish(topic, 1);
    await eventually(() => numbers(records).length >= 1, 'message 1 arrived');

    await tab.goto(`${chromium.host.http}elsewhere.html?no-bfcache`);
    await tab.evaluate(() => undefined);
    await eventually(async () => (await chromium.host.sessions()) === before, 'the session ended after the grace', AWAY_GRACE_MS + 8000);
    await chromium.host.publish(topic, 1, 0, 2);
    await tab.goto(`${chromium.host.http}?auto=pubsub&topic=${topic}`);
    await eventually(async () => (await pageLog(tab)).filter(r => r.kind === 'ready').length === 2, 'the page is back');

    const log = await pageLog(tab);
    const losses = log.filter(r => r.kind === 'loss') as (Recorded & { lostSession: string; afterSeq: number })[];
    assert.equal(losses.length, 1, JSON.stringify(log.filter(r => r.kind !== 'message')));
    assert.equal(losses[0]!.reason, 'session-expired');
    assert.equal(losses[0]!.lostSession, log.find(r => r.kind === 'ready')!.session);
    assert.equal(losses[0]!.afterSeq, 1, 'the last message handed over before the loss');
    assert.deepEqual(numbers(log), [1], 'message 2, published while no session existed, is the loss');
    await tab.close();
  });

  test('a page restored from the back-forward cache resumes: messages published while it was away arrive', async () => {
    const topic = 'edge-bfcache';
    const records: Recorded[] = [];
    const tab = await openPage(chromium.context, `${chromium.host.http}?auto=pubsub&topic=${topic}`, records);
    await eventually(() => records.some(r => r.kind === 'ready'), 'the page subscribed');
    await chromium.host.publish(topic, 1);
    await eventually(() => numbers(records).length >= 1, 'message 1 arrived');

    await tab.goto(`${chromium.host.http}elsewhere.html`);
    await chromium.host.publish(topic, 1, 0, 2);
    await tab.goBack();
    const restored = await tab.evaluate(() => (performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming | undefined)?.type);
    await eventually(async () => numbers(await pageLog(tab)).length >= 2, 'message 2 arrived after the page came back', 15_000);
    const log = await pageLog(tab);
    assert.deepEqual(numbers(log), [1, 2]);
    assert.deepEqual(log.filter(r => ['error', 'loss', 'reopened'].includes(r.kind)), []);
    // From the cache, the page's script did not run again (one 'ready'); otherwise it resumed after a fresh load.
    const readies = log.filter(r => r.kind === 'ready');
    assert.ok(readies.length === 1 || readies.at(-1)!.resumed === true, `navigation ${restored}: ${JSON.stringify(readies)}`);
    await tab.close();
  });

  test('index.d.ts and the source maps are served beside the modules, with types, an ETag, and a 304 for a page that has them', async () => {
    const base = `${chromium.host.http}_channelpool/polling-duplex/`;
    const types = await fetch(`${base}index.d.ts`);
    assert.equal(types.status, 200);
    assert.match(types.headers.get('content-type') ?? '', /^application\/typescript/);
    assert.match(await types.text(), /export \{ PubSubClient/);
    const map = await fetch(`${base}session.js.map`);
    assert.equal(map.status, 200);
    assert.match(map.headers.get('content-type') ?? '', /^application\/json/);
    assert.ok(((await map.json()) as { sourcesContent?: unknown[] }).sourcesContent?.length === 1, 'the map carries its source');
    const module = await fetch(`${base}index.js`);
    const etag = module.headers.get('etag')!;
    assert.match(module.headers.get('content-type') ?? '', /^text\/javascript/);
    assert.equal(module.headers.get('cache-control'), 'no-cache');
    assert.equal((await fetch(`${base}index.js`, { headers: { 'If-None-Match': etag } })).status, 304);
  });

  test('a TypeScript page type-checks against the types the server serves, and a wrong call does not', async () => {
    const base = `${chromium.host.http}_channelpool/polling-duplex/`;
    const dir = await mkdtemp(join(tmpdir(), 'served-types-'));
    try {
      // index.d.ts and every declaration file it reaches, as the server serves them.
      const pending = ['index'];
      const fetched = new Set<string>();
      while (pending.length > 0) {
        const name = pending.pop()!;
        if (fetched.has(name)) {
          continue;
        }

        fetched.add(name);
        const response = await fetch(`${base}${name}.d.ts`);
        assert.equal(response.status, 200, `${name}.d.ts is served`);
        const text = await response.text();
        await writeFile(join(dir, `${name}.d.ts`), text);
        for (const match of text.matchAll(/from '\.\/([\w-]+)\.js'/g)) {
          pending.push(match[1]!);
        }
      }

      const page = (body: string) => `import { PubSubClient, type DuplexLossEvent } from './index.js';\nexport async function run(): Promise<void> {\n${body}\n}\n`;
      await writeFile(join(dir, 'page.ts'), page(`  const chat = await PubSubClient.connect('/pubsub');
  chat.addEventListener('loss', (e: DuplexLossEvent) => console.warn(e.reason, e.afterSeq, e.missed));
  chat.addEventListener('message', e => console.log(e.topic, e.data));
  await chat.publish('room', { text: 'hello' }, { echo: true });`));
      await writeFile(join(dir, 'wrong.ts'), page(`  const chat = await PubSubClient.connect('/pubsub');
  await chat.publish(42);`));
      const tsc = (file: string) => spawnSync(process.execPath, [join(packageRoot, 'node_modules', 'typescript', 'bin', 'tsc'), '--noEmit', '--strict', '--target', 'ES2022', '--module', 'ESNext', '--moduleResolution', 'Bundler', '--lib', 'ES2022,DOM', '--types', '', file], { encoding: 'utf8', cwd: dir });
      const good = tsc('page.ts');
      assert.equal(good.status, 0, good.stdout + good.stderr);
      const wrong = tsc('wrong.ts');
      assert.notEqual(wrong.status, 0, 'a call that does not match the types fails');
      assert.match(wrong.stdout + wrong.stderr, /wrong\.ts/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('a cross-site form POST cannot open a session with the user\'s cookie, while the same-origin page can', async () => {
    const tab = await openPage(chromium.context, chromium.host.http);
    const ownOrigin = await tab.evaluate(async () => {
      await fetch('/login', { method: 'POST' });
      const session = await new window.duplex.PollingDuplexClient('/secure/echo', { resume: false }).open();
      const opened = session.id.length > 0;
      await session.close();
      return opened;
    });
    assert.equal(ownOrigin, true, 'the same-origin page opened a session');

    // The attacker: a page on another origin (another port) whose form posts to the endpoint, where the browser sends
    // the user's cookie (ports do not separate cookies). The form cannot send application/json.
    const target = chromium.host.http;
    const attacker = createServer((_, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end(`<form id="open" method="POST" action="${target}secure/echo/sessions" enctype="text/plain"><input name='{"encoding":"text","x":"' value='"}'></form>
        <form id="who" method="POST" action="${target}whoami"></form>`);
    });
    await new Promise<void>(resolve => attacker.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = attacker.address() as { port: number };
      const evil = await chromium.context.newPage();
      await evil.goto(`http://127.0.0.1:${port}/`);
      await Promise.all([evil.waitForNavigation(), evil.evaluate(() => (document.getElementById('who') as HTMLFormElement).submit())]);
      assert.equal((await evil.textContent('body'))?.trim(), 'signed in as alice', 'the cross-site form carried the cookie');
      await evil.goto(`http://127.0.0.1:${port}/`);
      const [response] = await Promise.all([evil.waitForNavigation(), evil.evaluate(() => (document.getElementById('open') as HTMLFormElement).submit())]);
      assert.equal(response?.status(), 415);
      assert.match((await evil.textContent('body')) ?? '', /open-content-type/);
      await evil.close();
    } finally {
      attacker.close();
      await tab.close();
    }
  });
});
