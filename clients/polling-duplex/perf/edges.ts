// The browser client at its edges (issue 37), measured for docs/performance.md:
// - Reload to first message: a page subscribed to a topic the server publishes to every 10 ms reloads `reloads` times;
//   each time, from the reload's start to the first message the reloaded page's listener receives (median, p99).
// - Cut responses against a clean run, in one run and through the same proxy: a burst of `burst` messages from the
//   server to one subscribing page (delivery rate: messages a second until the last arrived), and `samples` publishes
//   one at a time from the page to itself (publish-to-receipt latency, p50 and p99); first with the proxy passing
//   everything, then with it cutting 5% of responses (reset before the headers, cut inside them or inside the body),
//   alternating for `rounds` rounds.
import type { Browser, Page } from 'playwright-core';
import { eventually, openPage } from '../test/support/browser.js';
import { FaultProxy, type Fault } from '../test/support/fault-proxy.js';
import { Host } from '../test/support/host.js';

export interface EdgeResults {
  readonly reload: { readonly reloads: number; readonly p50: number; readonly p99: number; readonly max: number };
  readonly cuts: Record<'clean' | 'cut', { rate: number[]; p50: number[]; p99: number[]; faults: number }>;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;

export async function measureEdges(browser: Browser, options: { reloads: number; burst: number; samples: number; rounds: number; faultRate: number }): Promise<EdgeResults> {
  const host = await Host.start({ pollTimeoutMs: 15_000, pendingMessages: 4096 });
  const proxy = await FaultProxy.start(host.http);
  try {
    const context = await browser.newContext();

    // Reload to first message.
    // Each entry the page records is stamped with when it reached this process.
    const records: { kind: string; at: number }[] = [];
    const stamped = { push: (entry: { kind: string }) => records.push({ ...entry, at: Date.now() }) };
    const page = await openPage(context, `${host.http}?auto=pubsub&topic=perf-reload`, stamped as unknown as unknown[]);
    await eventually(() => records.some(r => r.kind === 'ready'), 'the reload page subscribed');
    await host.publish('perf-reload', 1_000_000, 10);
    await eventually(() => records.some(r => r.kind === 'message'), 'the stream is under way');
    const times: number[] = [];
    for (let i = 0; i < options.reloads + 2; i++) {
      records.length = 0;
      const started = Date.now();
      // Not waiting for 'load': the page's module holds it until the session is back, and the first message is what counts.
      await page.reload({ waitUntil: 'commit' });
      await eventually(() => records.some(r => r.kind === 'message'), 'a message after the reload', 20_000);
      const first = records.find(r => r.kind === 'message')!.at - started;
      if (i >= 2) {
        times.push(first);
      }
    }

    await page.close();
    times.sort((a, b) => a - b);

    // Cut responses against a clean run.
    const cutting: Fault[] = [{ kind: 'lose-response' }, { kind: 'cut-headers', bytes: 24 }];
    const cuts: EdgeResults['cuts'] = { clean: { rate: [], p50: [], p99: [], faults: 0 }, cut: { rate: [], p50: [], p99: [], faults: 0 } };
    const through = await openPage(context, proxy.url);
    for (let round = 0; round < options.rounds; round++) {
      for (const which of ['clean', 'cut'] as const) {
        proxy.applied.length = 0;
        proxy.rule = which === 'clean' ? () => ({ kind: 'pass' }) : () => {
          if (Math.random() >= options.faultRate) {
            return { kind: 'pass' };
          }

          const pick = Math.floor(Math.random() * 3);
          return pick < 2 ? cutting[pick]! : { kind: 'cut-body', bytes: 1 + Math.floor(Math.random() * 200) };
        };
        const result = await run(through, host, `perf-cut-${which}-${round}`, options.burst, options.samples);
        cuts[which].rate.push(result.rate);
        cuts[which].p50.push(result.p50);
        cuts[which].p99.push(result.p99);
        cuts[which].faults += proxy.applied.length;
      }
    }

    return { reload: { reloads: times.length, p50: percentile(times, 0.5), p99: percentile(times, 0.99), max: times.at(-1)! }, cuts };
  } finally {
    await proxy.close();
    await host.stop();
  }
}

async function run(page: Page, host: Host, topic: string, burst: number, samples: number): Promise<{ rate: number; p50: number; p99: number }> {
  await page.evaluate(async topic => {
    const { PubSubClient } = window.duplex;
    const options = { resume: false, retry: { baseDelayMs: 50, maxDelayMs: 500 }, requestTimeoutMs: 3000, pollGraceMs: 2000 } as const;
    const subscriber = await PubSubClient.connect('/pubsub', options);
    const publisher = await PubSubClient.connect('/pubsub', options);
    await subscriber.subscribe(topic);
    const state = { count: 0, last: 0, arrived: undefined as ((n: number) => void) | undefined, subscriber, publisher };
    subscriber.addEventListener('message', e => {
      state.count++;
      state.last = performance.now();
      state.arrived?.(e.data as number);
    });
    (window as unknown as { perfState: typeof state }).perfState = state;
  }, topic);

  // Delivery rate: a burst from the server, timed in the page from the request to the last message.
  const started = await page.evaluate(() => performance.now());
  await host.publish(topic, burst);
  await eventually(async () => (await page.evaluate(() => (window as unknown as { perfState: { count: number } }).perfState.count)) >= burst, 'the burst arrived', 120_000);
  const last = await page.evaluate(() => (window as unknown as { perfState: { last: number } }).perfState.last);
  const rate = burst / ((last - started) / 1000);

  // Latency: one publish at a time, from the page to itself.
  const latencies = await page.evaluate(async ({ topic, samples }) => {
    const state = (window as unknown as { perfState: { arrived?: (n: number) => void; publisher: { publish: (t: string, d: unknown) => Promise<void>; close: () => Promise<void> }; subscriber: { close: () => Promise<void> } } }).perfState;
    const times: number[] = [];
    for (let i = 0; i < samples + 20; i++) {
      const received = new Promise<number>(resolve => { state.arrived = resolve; });
      const t0 = performance.now();
      await state.publisher.publish(topic, i);
      await received;
      if (i >= 20) {
        times.push(performance.now() - t0);
      }

      await new Promise(resolve => setTimeout(resolve, 10));
    }

    await state.subscriber.close();
    await state.publisher.close();
    return times.sort((a, b) => a - b);
  }, { topic, samples });
  return { rate, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99) };
}
