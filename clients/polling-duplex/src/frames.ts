import { duplexError } from './errors.js';
import { BINARY_HEADER_SIZE, TEXT_FRAME_OVERHEAD, type DuplexEncoding } from './wire.js';

/** A frame from the server: a message, or a gap where `missed` messages were dropped. */
export type ServerFrame =
  | { readonly kind: 'message'; readonly seq: number; readonly data: unknown }
  | { readonly kind: 'gap'; readonly seq: number; readonly missed: number };

/** A message ready to send: its payload as the wire carries it. */
export interface OutgoingPayload {
  /** Text: the JSON value's text. Binary: the bytes. */
  readonly value: string | Uint8Array;
  /** The payload's size in bytes, as `maxMessageSize` counts it. */
  readonly size: number;
}

const KIND_MESSAGE = 0x01;
const KIND_GAP = 0x02;
const NEWLINE = 0x0a;
const encoder = new TextEncoder();

/** Checks and encodes what the application sends; throws a `TypeError` or `DuplexError` that says what is wrong. */
export function toPayload(encoding: DuplexEncoding, data: unknown, maxMessageSize: number): OutgoingPayload {
  let payload: OutgoingPayload;
  if (encoding === 'binary') {
    const bytes = data instanceof ArrayBuffer ? new Uint8Array(data.slice(0))
      : ArrayBuffer.isView(data) ? new Uint8Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength))
      : undefined;
    if (bytes === undefined) {
      throw new TypeError('A binary session sends an ArrayBuffer or a typed array (for example a Uint8Array).');
    }

    payload = { value: bytes, size: bytes.byteLength };
  } else {
    // JSON.stringify never writes a line break, so the frame stays on one line.
    const json = data === undefined ? undefined : JSON.stringify(data);
    if (json === undefined) {
      throw new TypeError('A text session sends JSON values; undefined and functions have no JSON form.');
    }

    payload = { value: json, size: utf8Length(json) };
  }

  if (payload.size > maxMessageSize) {
    throw duplexError('message-too-large', `A ${payload.size}-byte message exceeds the server's ${maxMessageSize}-byte limit (maxMessageSize).`);
  }

  return payload;
}

/** The bytes a payload takes in a send request. */
export function frameSize(encoding: DuplexEncoding, payload: OutgoingPayload): number {
  return payload.size + (encoding === 'binary' ? BINARY_HEADER_SIZE : 36);
}

/** Writes a send request's body: the payloads numbered from `first`. */
export function encodeSendBody(encoding: DuplexEncoding, first: number, payloads: readonly OutgoingPayload[]): Uint8Array {
  if (encoding === 'text') {
    let text = '';
    payloads.forEach((p, i) => { text += `{"seq":${first + i},"data":${p.value as string}}\n`; });
    return encoder.encode(text);
  }

  const body = new Uint8Array(payloads.reduce((n, p) => n + BINARY_HEADER_SIZE + p.size, 0));
  const view = new DataView(body.buffer);
  let offset = 0;
  payloads.forEach((p, i) => {
    body[offset] = KIND_MESSAGE;
    view.setUint32(offset + 1, Math.floor((first + i) / 0x1_0000_0000));
    view.setUint32(offset + 5, (first + i) >>> 0);
    view.setUint32(offset + 9, p.size);
    body.set(p.value as Uint8Array, offset + BINARY_HEADER_SIZE);
    offset += BINARY_HEADER_SIZE + p.size;
  });
  return body;
}

/**
 * Reads server frames from a response body as its chunks arrive. `push` hands each frame a chunk completes to `take`,
 * in order, and throws `malformed-frame` at the first bytes that break the protocol (after the frames before them);
 * `end` says whether the body stopped inside a frame, which means the response was cut off (poll again), not that the
 * server sent a broken frame.
 */
export class FrameReader {
  readonly #encoding: DuplexEncoding;
  readonly #maxPayload: number;
  readonly #decoder = new TextDecoder('utf-8', { fatal: true });
  #rest: Uint8Array = new Uint8Array(0);

  constructor(encoding: DuplexEncoding, maxPayload: number) {
    this.#encoding = encoding;
    this.#maxPayload = maxPayload;
  }

  push(chunk: Uint8Array, take: (frame: ServerFrame) => void): void {
    let bytes = chunk;
    if (this.#rest.byteLength > 0) {
      // Finish the frame the last chunk cut with as few of this chunk's bytes as it needs, then read the rest of the
      // chunk where it lies: joining the whole chunk to the tail would copy every byte of the body once more.
      const needed = this.#bytesToFinish(chunk);
      if (needed === undefined || needed >= chunk.byteLength) {
        bytes = concat(this.#rest, chunk);
      } else {
        // Exactly one frame (or line), so it is read whole, or throws.
        const head = concat(this.#rest, chunk.subarray(0, needed));
        this.#rest = new Uint8Array(0);
        this.push(head, take);
        bytes = chunk.subarray(needed);
      }
    }

    const used = this.#encoding === 'text' ? this.#readLines(bytes, take) : this.#readBinary(bytes, take);

    // Keep the unread tail in a buffer of its own, so the chunk it came from can be collected.
    this.#rest = used === bytes.byteLength ? new Uint8Array(0) : bytes.slice(used);
  }

  /** Whether the body ended inside a frame. A text line without its newline that still reads as a frame is returned. */
  end(): { truncated: boolean; frames: ServerFrame[] } {
    const rest = this.#rest;
    this.#rest = new Uint8Array(0);
    if (rest.byteLength === 0) {
      return { truncated: false, frames: [] };
    }

    if (this.#encoding === 'text') {
      try {
        const line = this.#decoder.decode(rest);
        if (line.trim() === '') {
          return { truncated: false, frames: [] };
        }

        return { truncated: false, frames: [this.#parseLine(line)] };
      } catch {
        return { truncated: true, frames: [] };
      }
    }

    return { truncated: true, frames: [] };
  }

  /** How many bytes of `chunk` finish the frame begun in the saved tail, or undefined when that is not known yet. */
  #bytesToFinish(chunk: Uint8Array): number | undefined {
    const rest = this.#rest;
    if (this.#encoding === 'text') {
      const newline = chunk.indexOf(NEWLINE);
      return newline < 0 ? undefined : newline + 1;
    }

    // The payload's length is in the header's last four bytes, which may be split between the tail and the chunk.
    const missing = Math.max(0, BINARY_HEADER_SIZE - rest.byteLength);
    if (missing > chunk.byteLength) {
      return undefined;
    }

    const header = missing === 0 ? rest : concat(rest, chunk.subarray(0, missing));
    return BINARY_HEADER_SIZE + new DataView(header.buffer, header.byteOffset + 9, 4).getUint32(0) - rest.byteLength;
  }

  #readLines(bytes: Uint8Array, take: (frame: ServerFrame) => void): number {
    const last = bytes.lastIndexOf(NEWLINE);
    if (last < 0) {
      this.#checkLineLength(bytes.byteLength);
      return 0;
    }

    let text: string;
    try {
      // A multi-byte UTF-8 sequence never contains the newline byte, so the text up to it decodes on its own.
      text = this.#decoder.decode(bytes.subarray(0, last));
    } catch (error) {
      throw duplexError('malformed-frame', 'A frame from the server is not valid UTF-8.', { cause: error });
    }

    const longest = this.#maxPayload + TEXT_FRAME_OVERHEAD;
    for (const raw of text.split('\n')) {
      const line = raw.charCodeAt(raw.length - 1) === 0x0d ? raw.slice(0, -1) : raw;
      // Counting UTF-8 bytes costs a pass over the line: only a line that might be too long (3 bytes per UTF-16 unit
      // at most) pays it. Only a line that starts with white space can be blank.
      if (line.length * 3 > longest) {
        this.#checkLineLength(utf8Length(line));
      }

      if (line.length > 0 && (line.charCodeAt(0) > 0x20 || line.trim() !== '')) {
        take(this.#parseLine(line));
      }
    }

    this.#checkLineLength(bytes.byteLength - last - 1);
    return last + 1;
  }

  #checkLineLength(length: number): void {
    if (length > this.#maxPayload + TEXT_FRAME_OVERHEAD) {
      throw duplexError('malformed-frame', `A line from the server is longer than ${this.#maxPayload + TEXT_FRAME_OVERHEAD} bytes, beyond the session's ${this.#maxPayload}-byte message limit.`);
    }
  }

  #parseLine(line: string): ServerFrame {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw malformed(`a line is not JSON: ${preview(line)}`, error);
    }

    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw malformed(`a line is not a JSON object: ${preview(line)}`);
    }

    const frame = value as Record<string, unknown>;
    const seq = sequence(frame['seq']);
    const type = frame['type'];
    if (type === 'gap') {
      const missed = frame['missed'];
      if (typeof missed !== 'number' || !Number.isSafeInteger(missed) || missed < 1) {
        throw malformed(`gap frame ${seq} has no positive "missed"`);
      }

      return { kind: 'gap', seq, missed };
    }

    if (type !== undefined && type !== 'message') {
      throw malformed(`frame ${seq} has an unknown type ${JSON.stringify(type)}`);
    }

    if (!('data' in frame)) {
      throw malformed(`message frame ${seq} has no "data"`);
    }

    return { kind: 'message', seq, data: frame['data'] };
  }

  #readBinary(bytes: Uint8Array, take: (frame: ServerFrame) => void): number {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let offset = 0;
    while (bytes.byteLength - offset >= BINARY_HEADER_SIZE) {
      const kind = bytes[offset]!;
      const seq = uint64(view, offset + 1, 'sequence number');
      const length = view.getUint32(offset + 9);
      if (kind !== KIND_MESSAGE && kind !== KIND_GAP) {
        throw malformed(`frame ${seq} has an unknown kind 0x${kind.toString(16).padStart(2, '0')}`);
      }

      if (kind === KIND_GAP && length !== 8) {
        throw malformed(`gap frame ${seq}'s payload is ${length} bytes, not 8`);
      }

      if (length > this.#maxPayload) {
        throw malformed(`frame ${seq}'s ${length}-byte payload exceeds the session's ${this.#maxPayload}-byte limit`);
      }

      const end = offset + BINARY_HEADER_SIZE + length;
      if (end > bytes.byteLength) {
        break;
      }

      if (kind === KIND_GAP) {
        const missed = uint64(view, offset + BINARY_HEADER_SIZE, 'missed count');
        take({ kind: 'gap', seq, missed });
      } else {
        // A copy: the application gets an ArrayBuffer of its own, not a view of the response's chunk.
        const start = bytes.byteOffset + offset + BINARY_HEADER_SIZE;
        take({ kind: 'message', seq, data: (bytes.buffer as ArrayBuffer).slice(start, start + length) });
      }

      offset = end;
    }

    return offset;
  }
}

/** The number of bytes `text` takes in UTF-8. */
export function utf8Length(text: string): number {
  let length = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x80) {
      if (c < 0x800) {
        length += 1;
      } else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
        length += 2;
        i++;
      } else {
        length += 2;
      }
    }
  }

  return length;
}

function sequence(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw malformed(`a frame's "seq" is ${JSON.stringify(value)}, not a whole number from 1 to ${Number.MAX_SAFE_INTEGER}`);
  }

  return value;
}

/** Reads a big-endian unsigned 64-bit number from 1 to 2^53 − 1 (beyond that, a number loses precision) without a BigInt. */
function uint64(view: DataView, offset: number, what: string): number {
  const high = view.getUint32(offset);
  const value = high * 0x1_0000_0000 + view.getUint32(offset + 4);
  if (high > 0x1f_ffff || value < 1) {
    throw malformed(`a ${what} of ${view.getBigUint64(offset)} is outside 1 to ${Number.MAX_SAFE_INTEGER}, the range this client reads`);
  }

  return value;
}

function malformed(what: string, cause?: unknown) {
  return duplexError('malformed-frame', `The server sent a frame this client cannot read: ${what}.`, { cause });
}

function preview(line: string): string {
  return JSON.stringify(line.length > 80 ? `${line.slice(0, 80)}…` : line);
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const joined = new Uint8Array(a.byteLength + b.byteLength);
  joined.set(a, 0);
  joined.set(b, a.byteLength);
  return joined;
}
