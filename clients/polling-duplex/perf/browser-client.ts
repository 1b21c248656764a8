// The browser client's measurements, against the .NET client in the same run (docs/perf/browser-client.md):
//   npm run perf -- [--rounds 3] [--seconds 5] [--streams 4] [--size 256] [--window 256] [--samples 500] [--h2] [--cells …]
// Throughput: the flood endpoint sends `size`-byte JSON messages as fast as each of `streams` MultipleMessagesPerPoll
// sessions takes them, in binary and in text; the browser client in Chromium and the .NET client, each from a process
// of its own, take turns against one server, round after round; each figure is the median round. The browser reads
// through `message` events and through `batches()`, in turns too. With --h2 the page talks HTTP/2 over TLS (the
// server's certificate, made in memory, trusted by its SPKI hash alone); the .NET client stays on plain HTTP/1.1.
// The floor: the same page fetches the server's floor endpoint (a body of exactly the bytes a full-window response
// carries) in `streams` loops and reads it with the stream reader, with no session and no parsing, and once more handing
// each chunk to the client's frame reader; so the client reads as a fraction of what Chromium itself can move here.
// --cells picks what runs (events,batches,dotnet,floor,parse,edges), for quick passes.
// Edges (perf/edges.ts): reload to the first message after the reload (--reloads), and delivery rate and latency
// through a proxy cutting 5% of responses against a clean run through the same proxy (--burst, --edge-samples).
// Latency: one subscriber and one publisher session on the pub/sub service, one publish at a time every 20 ms; the time
// from the publish call to the subscriber's receipt, p50 and p99, in the browser and in .NET.
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import type { Page } from 'playwright-core';
import { launchChromium, noChromium, openPage } from '../test/support/browser.js';
import { builtApp, Host, repositoryRoot } from '../test/support/host.js';
import { measureEdges, type EdgeResults } from './edges.js';
import { browserFloor, browserFlood, type Encoding, type FloorResult, type ReadApi } from './flood.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '5' },
    streams: { type: 'string', default: '4' },
    size: { type: 'string', default: '256' },
    window: { type: 'string', default: '256' },
    samples: { type: 'string', default: '500' },
    h2: { type: 'boolean', default: false },
    cells: { type: 'string', default: 'floor,parse,events,batches,dotnet,edges' },
    reloads: { type: 'string', default: '30' },
    burst: { type: 'string', default: '2000' },
    'edge-samples': { type: 'string', default: '300' },
  },
});
const allCells = ['floor', 'parse', 'events', 'batches', 'dotnet'] as const;
type Cell = typeof allCells[number];
const cells = values.cells.split(',').map(c => c.trim());
const unknownCell = cells.find(c => !(allCells as readonly string[]).includes(c) && c !== 'edges');
if (unknownCell !== undefined) {
  console.error(`--cells takes a comma-separated list of ${allCells.join(', ')}, edges; got '${unknownCell}'.`);
  process.exit(2);
}

const runs = (cell: Cell) => cells.includes(cell);
const rounds = Number(values.rounds);
const seconds = Number(values.seconds);
const streams = Number(values.streams);
const size = Number(values.size);
const responseWindow = Number(values.window);
const samples = Number(values.samples);
const h2 = values.h2;
const encodings: readonly Encoding[] = ['binary', 'text'];
const browserThroughput = (page: Page, encoding: Encoding, api: ReadApi) => browserFlood(page, { encoding, api, seconds, streams, size });
const floorThroughput = (page: Page, encoding: Encoding, parse: boolean, s = seconds) => browserFloor(page, { encoding, seconds: s, streams, size, frames: responseWindow, parse });

async function dotnet(mode: 'measure' | 'latency', args: string[]): Promise<Record<string, number>> {
  const { stdout } = await promisify(execFile)('dotnet', [builtApp('tests/ChannelPool.PollingDuplex.BrowserHost'), mode, ...args]);
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, number>;
}

async function browserLatency(page: Page, encoding: Encoding): Promise<{ p50: number; p99: number; mean: number }> {
  return page.evaluate(async ({ encoding, samples }) => {
    const { PubSubClient } = window.duplex;
    const options = { encoding, mode: 'multiple', resume: false } as const;
    const subscriber = await PubSubClient.connect<'text' | 'binary'>('/pubsub', options);
    const publisher = await PubSubClient.connect<'text' | 'binary'>('/pubsub', options);
    const topic = `latency-${Math.random()}`;
    await subscriber.subscribe(topic);
    let arrived: ((n: number) => void) | undefined;
    subscriber.addEventListener('message', e => arrived?.(e.data as number));
    const latencies: number[] = [];
    for (let i = 0; i < samples + 20; i++) {
      const received = new Promise<number>(resolve => { arrived = resolve; });
      const started = performance.now();
      await publisher.publish(topic, i);
      await received;
      const ms = performance.now() - started;
      if (i >= 20) {
        latencies.push(ms);
      }

      await new Promise(resolve => setTimeout(resolve, 20));
    }

    await subscriber.close();
    await publisher.close();
    latencies.sort((a, b) => a - b);
    const at = (p: number) => latencies[Math.min(latencies.length - 1, Math.ceil(p * latencies.length) - 1)]!;
    return { p50: at(0.5), p99: at(0.99), mean: latencies.reduce((a, b) => a + b, 0) / latencies.length };
  }, { encoding, samples });
}

/** The floor under the browser's figures: a bare fetch round trip to the same server from the same page. */
async function fetchFloor(page: Page): Promise<{ p50: number; p99: number }> {
  return page.evaluate(async () => {
    const times: number[] = [];
    for (let i = 0; i < 320; i++) {
      const started = performance.now();
      await (await fetch('/control/subscribers?topic=floor')).text();
      if (i >= 20) {
        times.push(performance.now() - started);
      }
    }

    times.sort((a, b) => a - b);
    return { p50: times[Math.ceil(0.5 * times.length) - 1]!, p99: times[Math.ceil(0.99 * times.length) - 1]! };
  });
}

interface PollSizes { polls: number; messages: number; p10: number; p50: number; p90: number; max: number; buckets: Record<string, number> }

/** Messages per flood poll response since the last call, from the server's view of the acknowledgements. */
async function pollSizes(host: Host): Promise<PollSizes> {
  const sizes = await (await host.control('poll-sizes')).json() as PollSizes;
  await host.control('poll-sizes', { method: 'DELETE' });
  return sizes;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const n0 = (x: number) => Math.round(x).toLocaleString('en-US');
const ms = (x: number) => x.toFixed(1);

if (noChromium) {
  console.error(noChromium);
  process.exit(1);
}

const loadAtStart = loadavg();
const host = await Host.start({ pollTimeoutMs: 15_000, floodWindow: responseWindow, https: h2 });
const browser = await launchChromium({ trustSpki: h2 ? host.spki : undefined });
try {
  const page = await openPage(await browser.newContext(), h2 ? host.https! : host.http);
  const throughput: Record<string, number[]> = {};
  const record = (key: string, value: number) => { (throughput[key] ??= []).push(value); };
  const perResponse: Record<string, PollSizes> = {};

  // One unrecorded pass first, so that JITs and connections settle before anything counts.
  for (const encoding of encodings) {
    if (runs('floor') || runs('parse')) {
      await floorThroughput(page, encoding, runs('parse'), 1);
    }

    for (const api of (['events', 'batches'] as const).filter(runs)) {
      await browserThroughput(page, encoding, api);
    }

    if (runs('dotnet')) {
      await dotnet('measure', [`--Url=${host.http}`, `--Encoding=${encoding}`, '--Seconds=1', `--Streams=${streams}`, `--Size=${size}`]);
    }
  }

  const floorDetail: Record<string, FloorResult> = {};

  for (let round = 1; round <= rounds; round++) {
    for (const encoding of encodings) {
      const said: string[] = [];
      if (runs('floor')) {
        const floor = floorDetail[`floor ${encoding}`] = await floorThroughput(page, encoding, false);
        record(`floor ${encoding}`, floor.messagesPerSecond);
        said.push(`floor ${n0(floor.messagesPerSecond)} msg/s (${floor.readsPerResponse.toFixed(1)} reads a response, ${n0(floor.bytesPerRead)} B a read, ${ms(floor.cycleMs)} ms a cycle)`);
      }

      if (runs('parse')) {
        const parsed = floorDetail[`parse ${encoding}`] = await floorThroughput(page, encoding, true);
        record(`parse ${encoding}`, parsed.messagesPerSecond);
        said.push(`floor + frame reader ${n0(parsed.messagesPerSecond)} msg/s (${ms(parsed.cycleMs)} ms a cycle)`);
      }

      for (const api of (['events', 'batches'] as const).filter(runs)) {
        await pollSizes(host);
        const inBrowser = await browserThroughput(page, encoding, api);
        const sizes = perResponse[`${api} ${encoding}`] = await pollSizes(host);
        record(`${api} ${encoding}`, inBrowser);
        said.push(`${api} ${n0(inBrowser)} msg/s (${sizes.polls} responses)`);
      }

      if (runs('dotnet')) {
        await pollSizes(host);
        const inDotnet = (await dotnet('measure', [`--Url=${host.http}`, `--Encoding=${encoding}`, `--Seconds=${seconds}`, `--Streams=${streams}`, `--Size=${size}`]))['messagesPerSecond']!;
        perResponse[`dotnet ${encoding}`] = await pollSizes(host);
        record(`dotnet ${encoding}`, inDotnet);
        said.push(`.NET ${n0(inDotnet)} msg/s`);
      }

      console.log(`round ${round}/${rounds}, ${encoding}, load ${loadavg()[0]!.toFixed(1)}: ${said.join('; ')}`);
    }
  }

  const latency: Record<string, { p50: number; p99: number; mean: number }> = {};
  // --samples 0 skips the latency loop, for quick throughput passes.
  for (const encoding of samples > 0 ? encodings : []) {
    latency[`browser ${encoding}`] = await browserLatency(page, encoding);
    const net = await dotnet('latency', [`--Url=${host.http}`, `--Encoding=${encoding}`, `--Samples=${samples}`, '--IntervalMs=20']);
    latency[`dotnet ${encoding}`] = { p50: net['p50']!, p99: net['p99']!, mean: net['mean']! };
    console.log(`latency ${encoding}: browser p50 ${ms(latency[`browser ${encoding}`]!.p50)} ms, p99 ${ms(latency[`browser ${encoding}`]!.p99)} ms; .NET p50 ${ms(net['p50']!)} ms, p99 ${ms(net['p99']!)} ms`);
  }

  let edges: EdgeResults | undefined;
  if (cells.includes('edges')) {
    edges = await measureEdges(browser, { reloads: Number(values.reloads), burst: Number(values.burst), samples: Number(values['edge-samples']), rounds, faultRate: 0.05 });
  }

  const floor = await fetchFloor(page);
  const protocol = await page.evaluate(async () => {
    // The polls have filled the resource timing buffer: clear it, so this request's entry is kept.
    performance.clearResourceTimings();
    await (await fetch('/control/subscribers?topic=protocol')).text();
    return (performance.getEntriesByType('resource') as PerformanceResourceTiming[]).find(e => e.name.includes('topic=protocol'))?.nextHopProtocol || 'unknown';
  });
  console.log(`a bare fetch from the page: p50 ${ms(floor.p50)} ms, p99 ${ms(floor.p99)} ms`);
  const names: Record<Cell, string> = { floor: 'Floor', parse: 'Floor + frame reader', events: 'Browser, events', batches: 'Browser, batches()', dotnet: '.NET client' };
  const columns = allCells.filter(runs);
  const ratios = ([['batches', 'floor'], ['events', 'floor'], ['floor', 'dotnet'], ['batches', 'dotnet'], ['events', 'dotnet']] as const).filter(([a, b]) => runs(a) && runs(b));
  const lines = [
    `Chromium ${browser.version()}, ${streams} MultipleMessagesPerPoll sessions, ${size}-byte messages, at most ${responseWindow} per response, ${seconds} s per cell, median of ${rounds} interleaved rounds; the page on ${protocol} (${h2 ? 'TLS' : 'plain'}), the .NET client on plain HTTP/1.1, 127.0.0.1.`,
    '',
    'Messages a second (median round); the floor is frames a second through a bare streaming fetch of a full-window body from the same page:',
    '',
    `| Encoding | ${columns.map(c => `${names[c]} (msg/s)`).join(' | ')} | ${ratios.map(([a, b]) => `${names[a]} / ${names[b]}`).join(' | ')} | ${columns.map(c => `Rounds, ${names[c]}`).join(' | ')} |`,
    `|---|${columns.map(() => '---:|').join('')}${ratios.map(() => '---:|').join('')}${columns.map(() => '---|').join('')}`,
    ...encodings.map(e => {
      const m = (c: Cell) => median(throughput[`${c} ${e}`]!);
      return `| ${e} | ${columns.map(c => n0(m(c))).join(' | ')} | ${ratios.map(([a, b]) => `${(m(a) / m(b)).toFixed(2)}x`).join(' | ')} | ${columns.map(c => throughput[`${c} ${e}`]!.map(n0).join(', ')).join(' | ')} |`;
    }),
    '',
    ...(runs('floor') || runs('parse') ? [
      'The floor\'s responses in the last round: reads are `reader.read()` calls that returned data (the chunks Chromium hands the page); a cycle is fetch() to the body\'s end, median:',
      '',
      '| Floor | Encoding | Responses | Reads a response | Bytes a read | Cycle (ms) |',
      '|---|---|---:|---:|---:|---:|',
      ...encodings.flatMap(e => (['floor', 'parse'] as const).filter(runs).map(c => {
        const f = floorDetail[`${c} ${e}`]!;
        return `| ${names[c]} | ${e} | ${n0(f.responses)} | ${f.readsPerResponse.toFixed(1)} | ${n0(f.bytesPerRead)} | ${ms(f.cycleMs)} |`;
      })),
      '',
    ] : []),
    'Messages per poll response in the last round (from the acknowledgements the server saw, warm-up included):',
    '',
    '| Client | Encoding | Responses | p10 | p50 | p90 | max | Distribution |',
    '|---|---|---:|---:|---:|---:|---:|---|',
    ...encodings.flatMap(e => (['events', 'batches', 'dotnet'] as const).filter(runs).map(who => {
      const r = perResponse[`${who} ${e}`]!;
      return `| ${names[who]} | ${e} | ${n0(r.polls)} | ${r.p10} | ${r.p50} | ${r.p90} | ${r.max} | ${Object.entries(r.buckets).map(([k, v]) => `${k}: ${v}`).join(', ')} |`;
    })),
    '',
    `Publish-to-receipt latency, one subscriber, ${samples} publishes 20 ms apart (after 20 unrecorded):`,
    '',
    '| Client | Encoding | p50 (ms) | p99 (ms) | mean (ms) |',
    '|---|---|---:|---:|---:|',
    ...encodings.flatMap(e => ['browser', 'dotnet'].filter(who => latency[`${who} ${e}`] !== undefined).map(who => {
      const l = latency[`${who} ${e}`]!;
      return `| ${who === 'browser' ? 'Browser' : '.NET'} | ${e} | ${ms(l.p50)} | ${ms(l.p99)} | ${ms(l.mean)} |`;
    })),
    '',
    `Load average (1, 5, 15 minutes) at the start: ${loadAtStart.map(l => l.toFixed(1)).join(', ')}; at the end: ${loadavg().map(l => l.toFixed(1)).join(', ')}.`,
    '',
    `The floor under the browser's figures, a bare fetch() round trip from the same page to the same server: p50 ${ms(floor.p50)} ms, p99 ${ms(floor.p99)} ms.`,
    ...(edges === undefined ? [] : [
      '',
      `Reload to the first message after it (a topic published every 10 ms, ${edges.reload.reloads} reloads): p50 ${edges.reload.p50} ms, p99 ${edges.reload.p99} ms, max ${edges.reload.max} ms.`,
      '',
      `Through a proxy, clean and cutting 5% of responses (reset before the headers, cut inside them or inside the body), alternating, ${rounds} rounds; a burst of ${values.burst} from the server, then ${values['edge-samples']} publishes one at a time:`,
      '',
      '| Run | Delivery rate (msg/s, median round) | Latency p50 (ms) | Latency p99 (ms) | Faults applied | Rates by round |',
      '|---|---:|---:|---:|---:|---|',
      ...(['clean', 'cut'] as const).map(w => {
        const c = edges!.cuts[w];
        return `| ${w === 'clean' ? 'clean' : '5% cut'} | ${n0(median(c.rate))} | ${ms(median(c.p50))} | ${ms(median(c.p99))} | ${c.faults} | ${c.rate.map(n0).join(', ')} |`;
      }),
    ]),
  ];
  console.log(`\n${lines.join('\n')}`);
  const folder = join(repositoryRoot, 'artifacts', 'perf', `browser-client-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, 'report.md'), `${lines.join('\n')}\n`);
  writeFileSync(join(folder, 'results.json'), JSON.stringify({ chromium: browser.version(), protocol, loadAverage: { start: loadAtStart, end: loadavg() }, rounds, seconds, streams, size, window: responseWindow, samples, throughput, floorDetail, perResponse, latency, fetchFloor: floor, edges }, null, 2));
  console.log(`\nWritten to ${folder}`);
} finally {
  await browser.close();
  await host.stop();
}
