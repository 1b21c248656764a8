// The client's frame reader alone, in the page, on a floor body held in memory (docs/perf/browser-client.md, "Binary
// against text"): no network, so what is left is the reading, per frame, and what one binary message's own ArrayBuffer
// costs beside one text frame's decode and JSON.parse.
//   npm run perf:reader -- [--frames 2048] [--size 256] [--repeat 100]
import { parseArgs } from 'node:util';
import { launchChromium, noChromium, openPage } from '../test/support/browser.js';
import { Host } from '../test/support/host.js';

const { values } = parseArgs({
  options: {
    frames: { type: 'string', default: '2048' },
    size: { type: 'string', default: '256' },
    repeat: { type: 'string', default: '100' },
  },
});

if (noChromium) {
  console.error(noChromium);
  process.exit(1);
}

const host = await Host.start();
const browser = await launchChromium();
try {
  const page = await openPage(await browser.newContext(), host.http);
  const results = await page.evaluate(async ({ frames, size, repeat }) => {
    const { FrameReader } = await import('/_channelpool/polling-duplex/frames.js' as string) as typeof import('../src/frames.js');
    const perFrame = (run: () => number) => {
      let count = 0;
      const started = performance.now();
      for (let i = 0; i < repeat; i++) {
        count += run();
      }

      return (performance.now() - started) * 1e6 / count;
    };
    const out: Record<string, number> = {};
    // Two passes; the second is reported, after the first has warmed the JIT up.
    for (let pass = 0; pass < 2; pass++) {
      for (const encoding of ['binary', 'text'] as const) {
        const body = new Uint8Array(await (await fetch(`/floor/${encoding}?frames=${frames}&size=${size}`)).arrayBuffer());
        out[`${encoding}: the frame reader, ns a frame`] = perFrame(() => {
          let n = 0;
          new FrameReader(encoding, 65_536).push(body, () => { n++; });
          return n;
        });
        if (encoding === 'text') {
          continue;
        }

        const frameLength = body.byteLength / frames;
        const kept: unknown[] = [];
        out['binary: an ArrayBuffer copy of each payload alone, ns a frame'] = perFrame(() => {
          kept.length = 0;
          for (let i = 0; i < frames; i++) {
            const start = i * frameLength + (frameLength - size);
            kept.push(body.buffer.slice(start, start + size));
          }

          return frames;
        });
      }
    }

    return out;
  }, { frames: Number(values.frames), size: Number(values.size), repeat: Number(values.repeat) });
  for (const [what, ns] of Object.entries(results)) {
    console.log(`${what}: ${Math.round(ns)}`);
  }
} finally {
  await browser.close();
  await host.stop();
}
