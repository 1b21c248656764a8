import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FrameReader, type ServerFrame } from '../src/frames.js';
import { Host } from './support/host.js';

// The perf tool's floor endpoint (tests/ChannelPool.PollingDuplex.BrowserHost/FloorEndpoint.cs): the body a full-window
// flood response carries, with no session. Its figures are worth something only if the body is that body.
describe('the perf floor endpoint', { timeout: 60_000 }, () => {
  let host: Host;
  before(async () => { host = await Host.start(); });
  after(async () => { await host?.stop(); });

  for (const encoding of ['binary', 'text'] as const) {
    test(`answers ${encoding} with exactly the frames of a full flood window: 256 messages of 256 bytes, numbered on from 1,000,000`, async () => {
      const response = await fetch(new URL(`floor/${encoding}?frames=256&size=256`, host.http));
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('Content-Type'), encoding === 'binary' ? 'application/vnd.channelpool.duplex-frames' : 'application/x-ndjson');
      const body = new Uint8Array(await response.arrayBuffer());
      assert.equal(Number(response.headers.get('Content-Length')), body.byteLength);

      const frames: ServerFrame[] = [];
      const reader = new FrameReader(encoding, 65_536);
      reader.push(body, frame => frames.push(frame));
      assert.deepEqual(reader.end(), { truncated: false, frames: [] });
      assert.equal(frames.length, 256);
      assert.deepEqual(frames.map(f => f.seq), Array.from({ length: 256 }, (_, i) => 1_000_000 + i));
      for (const frame of frames) {
        assert.equal(frame.kind, 'message');
        const data = frame.kind === 'message' ? frame.data : undefined;
        // The flood's own message: {"flood":"xxx…"} of exactly 256 bytes.
        const json = encoding === 'binary' ? new TextDecoder().decode(data as ArrayBuffer) : JSON.stringify(data);
        assert.equal(json.length, 256);
        assert.match(json, /^\{"flood":"x+"\}$/);
      }
    });
  }

  const bad: readonly [string, string, RegExp][] = [
    ['an unknown encoding', 'floor/json?frames=256&size=256', /encoding is 'binary' or 'text'.*got 'json'/],
    ['no frame count', 'floor/binary?size=256', /'frames' is the window.*got '\(none\)'/],
    ['zero frames', 'floor/binary?frames=0&size=256', /'frames' is the window, a whole number from 1 to 65,536; got '0'/],
    ['a frame count that is not a number', 'floor/text?frames=many&size=256', /'frames'.*got 'many'/],
    ['more frames than the endpoint serves', 'floor/text?frames=65537&size=256', /'frames'.*got '65537'/],
    ['a message smaller than the flood sends', 'floor/binary?frames=256&size=15', /'size' is the flood message's size, a whole number from 16 to 61,440; got '15'/],
    ['a message larger than the flood sends', 'floor/binary?frames=256&size=61441', /'size'.*got '61441'/],
    ['a body over 64 MiB', 'floor/binary?frames=65536&size=61440', /over the 64 MiB this endpoint serves/],
  ];
  for (const [what, path, detail] of bad) {
    test(`refuses ${what} with a 400 problem that says what was wrong`, async () => {
      const response = await fetch(new URL(path, host.http));
      assert.equal(response.status, 400);
      assert.equal(response.headers.get('Content-Type'), 'application/problem+json');
      const problem = await response.json() as { title: string; detail: string };
      assert.equal(problem.title, 'Bad floor request');
      assert.match(problem.detail, detail);
    });
  }
});
