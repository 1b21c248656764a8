import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PollingDuplexClient, PubSubClient } from '../src/index.js';
import { Host } from './support/host.js';

// The client needs only standard APIs, so it runs in Node.js 20 as well (with no sessionStorage, it does not resume).
describe('the client in Node.js', { timeout: 60_000 }, () => {
  let host: Host;
  before(async () => { host = await Host.start(); });
  after(async () => { await host?.stop(); });

  test('pub/sub over text and an echo over binary work outside a browser, and sessions are not resumed', async () => {
    const pubsub = await PubSubClient.connect(new URL('pubsub', host.http));
    const heard = new Promise(resolve => pubsub.addEventListener('message', e => resolve(e.data)));
    await pubsub.subscribe('node');
    await pubsub.publish('node', { from: 'node' }, { echo: true });
    assert.deepEqual(await heard, { from: 'node' });
    assert.equal(pubsub.client.resume, undefined);

    const session = await new PollingDuplexClient(new URL('echo', host.http), { encoding: 'binary' }).open();
    const items = session.messages();
    await session.send(new Uint8Array([0, 1, 255]));
    const first = await items.next();
    assert.equal(first.done, false);
    assert.deepEqual(first.value?.kind === 'message' ? [...new Uint8Array(first.value.data)] : first.value, [0, 1, 255]);
    await items.return?.();
    await session.close();
    await pubsub.close();
  });
});
