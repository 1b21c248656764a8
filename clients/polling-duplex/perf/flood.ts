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
