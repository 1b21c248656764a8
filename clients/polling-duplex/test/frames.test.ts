import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FrameReader, type ServerFrame } from '../src/frames.js';
import { DuplexError } from '../src/errors.js';

// The frame reader alone, in Node.js: a body cut into chunks anywhere reads as the same frames, once and in order.

function binaryFrame(kind: 1 | 2, seq: number, payload: Uint8Array): Uint8Array {
  const frame = new Uint8Array(13 + payload.byteLength);
  const view = new DataView(frame.buffer);
  frame[0] = kind;
  view.setBigUint64(1, BigInt(seq));
  view.setUint32(9, payload.byteLength);
  frame.set(payload, 13);
  return frame;
}

function join(parts: Uint8Array[]): Uint8Array {
  const body = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let offset = 0;
  for (const part of parts) {
    body.set(part, offset);
    offset += part.byteLength;
  }

  return body;
}

function missed(count: number): Uint8Array {
  const bytes = new Uint8Array(8);
  new DataView(bytes.buffer).setBigUint64(0, BigInt(count));
  return bytes;
}

const binaryBody = join([
  binaryFrame(1, 1, new Uint8Array(0)),
  binaryFrame(1, 2, Uint8Array.from({ length: 300 }, (_, i) => i % 251)),
  binaryFrame(2, 3, missed(5)),
  binaryFrame(1, 8, new Uint8Array([7])),
  binaryFrame(1, 9, new Uint8Array(13).fill(9)),
]);

const textBody = new TextEncoder().encode([
  '{"seq":1,"data":{"text":"héllo ✓ 😀"}}',
  '',
  '{"seq":2,"data":"a line\\nbreak"}\r',
  '  ',
  '{"seq":3,"type":"gap","missed":2}',
  `{"seq":6,"data":"${'x'.repeat(500)}"}`,
  '{"seq":7,"data":null}',
].join('\n') + '\n');

/** Reads `body` in chunks of `size` bytes; returns the frames as plain values, and whether the end was cut. */
function read(encoding: 'text' | 'binary', body: Uint8Array, size: number): { frames: unknown[]; truncated: boolean } {
  const reader = new FrameReader(encoding, 1024);
  const frames: ServerFrame[] = [];
  for (let offset = 0; offset < body.byteLength; offset += size) {
    // A copy per chunk, as a response's stream hands out buffers of its own.
    reader.push(body.slice(offset, offset + size), frame => frames.push(frame));
  }

  const end = reader.end();
  frames.push(...end.frames);
  return {
    frames: frames.map(f => f.kind === 'gap' ? f : { ...f, data: f.data instanceof ArrayBuffer ? [...new Uint8Array(f.data)] : f.data }),
    truncated: end.truncated,
  };
}

describe('the frame reader', () => {
  for (const [encoding, body] of [['binary', binaryBody], ['text', textBody]] as const) {
    test(`${encoding}: a body cut into chunks of any size reads as the same frames as the whole body`, () => {
      const whole = read(encoding, body, body.byteLength);
      assert.equal(whole.truncated, false);
      assert.deepEqual(whole.frames.map(f => (f as { seq: number }).seq), encoding === 'binary' ? [1, 2, 3, 8, 9] : [1, 2, 3, 6, 7]);
      for (let size = 1; size < body.byteLength; size++) {
        assert.deepEqual(read(encoding, body, size), whole, `chunks of ${size} bytes`);
      }
    });

    test(`${encoding}: a body that stops inside a frame reads the frames before it, and says it was cut`, () => {
      const cut = body.subarray(0, body.byteLength - 3);
      for (const size of [1, 5, 13, 64, cut.byteLength]) {
        const result = read(encoding, cut, size);
        assert.equal(result.truncated, true, `chunks of ${size} bytes`);
        assert.equal(result.frames.length, 4, `chunks of ${size} bytes`);
      }
    });
  }

  test('binary: each message is an ArrayBuffer of its own, not a view of the chunk it came in', () => {
    const reader = new FrameReader('binary', 1024);
    const data: ArrayBuffer[] = [];
    reader.push(binaryBody, frame => { if (frame.kind === 'message') data.push(frame.data as ArrayBuffer); });
    assert.deepEqual(data.map(d => d.byteLength), [0, 300, 1, 13]);
    assert.ok(data.every(d => d !== binaryBody.buffer));
  });

  test('a broken frame in a later chunk: the frames before it are read, then malformed-frame', () => {
    const broken = join([binaryFrame(1, 1, new Uint8Array([1])), binaryFrame(1, 2, new Uint8Array([2])), Uint8Array.of(9, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0)]);
    for (const size of [1, 7, 14, 20]) {
      const reader = new FrameReader('binary', 1024);
      const seqs: number[] = [];
      assert.throws(() => {
        for (let offset = 0; offset < broken.byteLength; offset += size) {
          reader.push(broken.slice(offset, offset + size), frame => seqs.push(frame.seq));
        }
      }, (error: unknown) => error instanceof DuplexError && error.code === 'malformed-frame' && /unknown kind 0x09/.test(error.message), `chunks of ${size} bytes`);
      assert.deepEqual(seqs, [1, 2], `chunks of ${size} bytes`);
    }
  });

  test('a frame longer than the session allows is refused before the reader waits for all of it', () => {
    const reader = new FrameReader('binary', 1024);
    const header = binaryFrame(1, 1, new Uint8Array(2000)).subarray(0, 20);
    assert.throws(() => reader.push(header, () => undefined), (error: unknown) => error instanceof DuplexError && error.code === 'malformed-frame' && /2000-byte payload exceeds/.test(error.message));

    const text = new FrameReader('text', 100);
    assert.throws(() => text.push(new TextEncoder().encode(`{"seq":1,"data":"${'y'.repeat(400)}"}\n`), () => undefined), (error: unknown) => error instanceof DuplexError && error.code === 'malformed-frame' && /longer than 356 bytes/.test(error.message));
  });
});
