/** The protocol version this client speaks (docs/polling-duplex-protocol.md). */
export const PROTOCOL_VERSION = 1;

/** How a session's messages travel: `text` carries JSON values, `binary` carries any bytes. */
export type DuplexEncoding = 'text' | 'binary';

/** `single`: one frame per poll response. `multiple`: every frame waiting, streamed on one response. */
export type DuplexMode = 'single' | 'multiple';

/** What an overflowing session does on the server: fault the session, or drop the message behind a gap frame. */
export type OverflowPolicy = 'fault' | 'gap';

export const CONTENT_TYPES: Readonly<Record<DuplexEncoding, string>> = {
  text: 'application/x-ndjson',
  binary: 'application/vnd.channelpool.duplex-frames',
};

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** A binary frame's header: kind (1 byte), sequence number (8), payload length (4). */
export const BINARY_HEADER_SIZE = 13;

/** A text line may be its payload plus this many bytes (the protocol's own members). */
export const TEXT_FRAME_OVERHEAD = 256;

/**
 * The header that carries a session's token on every request after the open: a header of its own, so that the
 * application's authentication keeps `Authorization` (a JWT bearer, say) and both travel together.
 */
export const SESSION_TOKEN_HEADER = 'Duplex-Session-Token';

/** Puts the session token on a request. This is the one place that knows where the token travels. */
export function putSessionToken(headers: Headers, token: string): void {
  headers.set(SESSION_TOKEN_HEADER, token);
}

/** What the server enforces on a session, from its open response. */
export interface SessionLimits {
  /** How long the server holds a poll with nothing to deliver. */
  readonly serverPollTimeoutMs: number;
  /** A session with no request for this long expires. */
  readonly inactivityTimeoutMs: number;
  /** A session that has not polled for this long after opening expires. */
  readonly firstPollTimeoutMs: number;
  /** The largest message payload, in bytes, in either direction. */
  readonly maxMessageSize: number;
  /** The largest send request body, in bytes. */
  readonly maxSendRequestSize: number;
  /** The most messages one send request carries (a server that does not say takes any number). */
  readonly maxMessagesPerSend: number;
  /** How far behind the client may fall (messages queued while no poll was outstanding). */
  readonly maxPendingMessages: number;
  /** The bytes the server holds for the session. */
  readonly maxPendingBytes: number;
  /** How long a multiple-mode response stays open after its first frame. */
  readonly batchWindowMs: number;
  /** What a full buffer does. */
  readonly overflowPolicy: OverflowPolicy;
}

/** A session as its open response describes it. */
export interface OpenedSession {
  readonly id: string;
  readonly token: string;
  readonly encoding: DuplexEncoding;
  readonly mode: DuplexMode;
  readonly limits: SessionLimits;
}

/** Reads an open response's body, or says what is wrong with it (the caller turns that into an error). */
export function readOpened(body: unknown): OpenedSession | string {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return 'the open response is not a JSON object';
  }

  const value = body as Record<string, unknown>;
  if (value['protocolVersion'] !== PROTOCOL_VERSION) {
    return `the server speaks protocol version ${String(value['protocolVersion'])}; this client speaks ${PROTOCOL_VERSION}`;
  }

  const id = value['sessionId'];
  const token = value['token'];
  const encoding = value['encoding'];
  const mode = value['mode'];
  const overflowPolicy = value['overflowPolicy'];
  if (typeof id !== 'string' || id.length === 0 || typeof token !== 'string' || token.length === 0) {
    return 'the open response has no sessionId or token';
  }

  if ((encoding !== 'text' && encoding !== 'binary') || (mode !== 'single' && mode !== 'multiple')) {
    return `the server opened a session with encoding ${JSON.stringify(encoding)} and mode ${JSON.stringify(mode)}, which this client does not know`;
  }

  const numbers = ['serverPollTimeoutMs', 'inactivityTimeoutMs', 'firstPollTimeoutMs', 'maxMessageSize', 'maxSendRequestSize', 'maxPendingMessages', 'maxPendingBytes', 'batchWindowMs'] as const;
  for (const name of numbers) {
    const n = value[name];
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) {
      return `the open response's ${name} is ${JSON.stringify(n)}, not a whole number`;
    }
  }

  const limits: SessionLimits = {
    serverPollTimeoutMs: value['serverPollTimeoutMs'] as number,
    inactivityTimeoutMs: value['inactivityTimeoutMs'] as number,
    firstPollTimeoutMs: value['firstPollTimeoutMs'] as number,
    maxMessageSize: value['maxMessageSize'] as number,
    maxSendRequestSize: value['maxSendRequestSize'] as number,
    maxMessagesPerSend: typeof value['maxMessagesPerSend'] === 'number' && Number.isSafeInteger(value['maxMessagesPerSend']) && value['maxMessagesPerSend'] > 0
      ? value['maxMessagesPerSend']
      : Number.MAX_SAFE_INTEGER,
    maxPendingMessages: value['maxPendingMessages'] as number,
    maxPendingBytes: value['maxPendingBytes'] as number,
    batchWindowMs: value['batchWindowMs'] as number,
    overflowPolicy: overflowPolicy === 'gap' ? 'gap' : 'fault',
  };
  return { id, token, encoding, mode, limits };
}
