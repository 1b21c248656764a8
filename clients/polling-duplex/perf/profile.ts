// A CPU profile of the renderer during the browser client's flood (docs/perf/browser-client.md, "Why"):
//   npm run perf:profile -- [--window 2048] [--encoding binary] [--seconds 5] [--streams 4] [--size 256] [--h2] [--api events|batches] [--chromium-arg=<switch>]
// Prints the functions with the most self time, and the share that was idle, garbage collection or the client's code.
import { parseArgs } from 'node:util';
import { launchChromium, noChromium, openPage } from '../test/support/browser.js';
import { Host } from '../test/support/host.js';
import { browserFlood, type Encoding, type ReadApi } from './flood.js';

const { values } = parseArgs({
  options: {
    window: { type: 'string', default: '2048' },
    encoding: { type: 'string', default: 'binary' },
    seconds: { type: 'string', default: '5' },
    streams: { type: 'string', default: '4' },
    size: { type: 'string', default: '256' },
    top: { type: 'string', default: '25' },
    h2: { type: 'boolean', default: false },
    api: { type: 'string', default: 'events' },
    // A Chromium switch for a diagnostic, e.g. --chromium-arg=--enable-features=NetworkServiceInProcess2 (repeatable).
    'chromium-arg': { type: 'string', multiple: true, default: [] },
  },
});

interface ProfileNode { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number }
interface Profile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] }

if (noChromium) {
  console.error(noChromium);
  process.exit(1);
}

const host = await Host.start({ pollTimeoutMs: 15_000, floodWindow: Number(values.window), https: values.h2 });
const browser = await launchChromium({ trustSpki: values.h2 ? host.spki : undefined, extraArgs: values['chromium-arg'] });
try {
  const page = await openPage(await browser.newContext(), values.h2 ? host.https! : host.http);
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
  const run = (profile: boolean) => browserFlood(page, {
    encoding: values.encoding as Encoding,
    api: values.api as ReadApi,
    seconds: Number(values.seconds),
    streams: Number(values.streams),
    size: Number(values.size),
    profile,
  });

  let profile: Profile | undefined;
  await page.exposeFunction('startProfile', async () => { await cdp.send('Profiler.start'); });
  await page.exposeFunction('stopProfile', async () => { profile = (await cdp.send('Profiler.stop')).profile as unknown as Profile; });
  console.log(`unprofiled: ${Math.round(await run(false)).toLocaleString('en-US')} msg/s`);
  console.log(`profiled: ${Math.round(await run(true)).toLocaleString('en-US')} msg/s`);
  const byId = new Map(profile!.nodes.map(n => [n.id, n]));
  const self = new Map<string, number>();
  let total = 0;
  profile!.samples.forEach((id, i) => {
    const node = byId.get(id)!;
    const f = node.callFrame;
    const key = `${f.functionName || '(anonymous)'} ${f.url.split('/').at(-1) ?? ''}:${f.lineNumber + 1}`;
    const dt = profile!.timeDeltas[i] ?? 0;
    self.set(key, (self.get(key) ?? 0) + dt);
    total += dt;
  });
  const rows = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top));
  for (const [key, us] of rows) {
    console.log(`${(100 * us / total).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${key}`);
  }
} finally {
  await browser.close();
  await host.stop();
}
