import type { Page } from 'playwright-core';

export type Encoding = 'binary' | 'text';
/** How the page reads: a `message` listener, or the `batches()` iterator. */
export type ReadApi = 'events' | 'batches';

export interface FloodSettings {
  readonly encoding: Encoding;
  readonly api: ReadApi;
  readonly seconds: number;
  readonly streams: number;
  readonly size: number;
  /** Calls the page's `startProfile` and `stopProfile` bindings around the measured window. */
  readonly profile?: boolean;
}

/**
 * The browser's side of the flood: `streams` MultipleMessagesPerPoll sessions on the flood endpoint, each sent
 * `{"size":S}`; one second of warm-up, then `seconds` counted, as the .NET side does. Returns messages a second.
 */
export async function browserFlood(page: Page, settings: FloodSettings): Promise<number> {
  return page.evaluate(async ({ encoding, api, seconds, streams, size, profile }) => {
    const { PollingDuplexClient } = window.duplex;
    const client = new PollingDuplexClient<Encoding>('/flood', { encoding, mode: 'multiple', resume: false });
    let count = 0;
    const sessions = await Promise.all(Array.from({ length: streams }, () => client.open()));
    for (const session of sessions) {
      if (api === 'batches') {
        void (async () => {
          for await (const batch of session.batches()) {
            count += batch.length;
          }
        })().catch(() => undefined);
      } else {
        session.addEventListener('message', () => { count++; });
      }

      await session.send((encoding === 'binary' ? new TextEncoder().encode(JSON.stringify({ size })) : { size }) as never);
    }

    const bindings = window as unknown as { startProfile: () => Promise<void>; stopProfile: () => Promise<void> };
    await new Promise(resolve => setTimeout(resolve, 1000));
    if (profile) {
      await bindings.startProfile();
    }

    const before = count;
    const started = performance.now();
    await new Promise(resolve => setTimeout(resolve, seconds * 1000));
    const messages = count - before;
    const elapsed = (performance.now() - started) / 1000;
    if (profile) {
      await bindings.stopProfile();
    }

    await Promise.all(sessions.map(s => s.close()));
    return messages / elapsed;
  }, { ...settings, profile: settings.profile ?? false });
}

export interface FloorSettings {
  readonly encoding: Encoding;
  readonly seconds: number;
  readonly streams: number;
  readonly size: number;
  /** Frames per response: the flood's window. */
  readonly frames: number;
  /** Also hand every chunk to the client's own `FrameReader`, as a session does, and count the frames it reads. */
  readonly parse: boolean;
}

export interface FloorResult {
  /** Frames a second: responses completed times the frames each carries (or, with `parse`, frames the reader read). */
  readonly messagesPerSecond: number;
  readonly responses: number;
  /** `reader.read()` calls that returned data, per response: the chunks Chromium hands the page. */
  readonly readsPerResponse: number;
  readonly bytesPerRead: number;
  /** Milliseconds from `fetch()` to the body's end, median, per loop. */
  readonly cycleMs: number;
}

/**
 * The browser's floor under the flood: `streams` loops in the page, each fetching the server's floor endpoint (a body of
 * exactly the bytes a full-window flood response carries) and reading it with the response's stream reader, as a
 * session reads a poll, one after another, with no session, acknowledgement or parsing (unless `parse`).
 */
export async function browserFloor(page: Page, settings: FloorSettings): Promise<FloorResult> {
  return page.evaluate(async ({ encoding, seconds, streams, size, frames, parse }) => {
    // The client's own frame reader, a module the server serves beside index.js.
    const { FrameReader } = await import('/_channelpool/polling-duplex/frames.js' as string) as typeof import('../src/frames.js');
    const url = `/floor/${encoding}?frames=${frames}&size=${size}`;
    let counting = false;
    let stop = false;
    let messages = 0;
    let responses = 0;
    let reads = 0;
    let bytes = 0;
    const cycles: number[] = [];
    const loop = async () => {
      while (!stop) {
        const started = performance.now();
        const response = await fetch(url);
        if (!response.ok) {
          throw new Error(`GET ${url}: ${response.status} ${await response.text()}`);
        }

        const reader = response.body!.getReader();
        const frameReader = parse ? new FrameReader(encoding, 65_536) : undefined;
        let read = 0;
        let taken = 0;
        const take = () => { taken++; };
        let length = 0;
        for (;;) {
          const { done, value } = await reader.read();
          if (done) {
            break;
          }

          read++;
          length += value.byteLength;
          frameReader?.push(value, take);
        }

        if (counting) {
          messages += parse ? taken : frames;
          responses++;
          reads += read;
          bytes += length;
          cycles.push(performance.now() - started);
        }
      }
    };
    const loops = Array.from({ length: streams }, loop);
    await new Promise(resolve => setTimeout(resolve, 1000));
    counting = true;
    const started = performance.now();
    await new Promise(resolve => setTimeout(resolve, seconds * 1000));
    counting = false;
    const elapsed = (performance.now() - started) / 1000;
    const counted = { messages, responses, reads, bytes };
    stop = true;
    await Promise.all(loops);
    cycles.sort((a, b) => a - b);
    return {
      messagesPerSecond: counted.messages / elapsed,
      responses: counted.responses,
      readsPerResponse: counted.reads / Math.max(1, counted.responses),
      bytesPerRead: counted.bytes / Math.max(1, counted.reads),
      cycleMs: cycles[Math.floor(cycles.length / 2)] ?? NaN,
    };
  }, settings);
}
