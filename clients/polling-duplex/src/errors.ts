import { PROBLEM_CONTENT_TYPE } from './wire.js';

/** The `code` of the server's problem bodies (docs/polling-duplex-protocol.md, "Errors"). */
export type ServerErrorCode =
  | 'bad-request'
  | 'bad-ack'
  | 'malformed-frame'
  | 'missing-token'
  | 'invalid-token'
  | 'wrong-user'
  | 'topic-forbidden'
  | 'unknown-session'
  | 'not-found'
  | 'method-not-allowed'
  | 'out-of-order'
  | 'poll-superseded'
  | 'session-closed'
  | 'session-expired'
  | 'session-faulted'
  | 'session-evicted'
  | 'message-too-large'
  | 'unsupported-media-type'
  | 'message-rejected'
  | 'handler-failed'
  | 'topic-authorization-failed'
  | 'too-many-sessions'
  | 'too-many-pending-sessions'
  | 'too-many-user-sessions'
  | 'too-many-subscriptions'
  | 'too-many-messages'
  | 'unidentified-user'
  | 'authentication-expired'
  | 'store-unavailable';

/**
 * Codes this client gives errors the server did not name:
 * - `connection-lost`: requests kept failing (network errors, a balancer's 502/503/504) for longer than the session
 *   can live without a request, so it is given up.
 * - `http-error`: an error response without the protocol's problem body, that is not worth retrying.
 * - `bad-response`: a response the protocol does not allow (a wrong content type, an unreadable open response).
 * - `malformed-frame`: a frame from the server that cannot be read.
 * - `sequence-gap`: a frame whose sequence number skips ahead; another client may be polling the same session.
 * - `session-shared`: polls kept being superseded: another client polls the same session.
 * - `closed`: the session was closed by this client before the call finished.
 */
export type ClientErrorCode = 'connection-lost' | 'http-error' | 'bad-response' | 'malformed-frame' | 'sequence-gap' | 'session-shared' | 'closed';

export type DuplexErrorCode = ServerErrorCode | ClientErrorCode;

export interface DuplexErrorDetails {
  /** The HTTP status, when the error came from a response. */
  readonly status?: number | undefined;
  /** The problem body's `detail`, when there was one. */
  readonly detail?: string | undefined;
  /** How far the server received this client's messages, from answers about sequence numbers. */
  readonly received?: number | undefined;
  /** How long the server asked to wait (`Retry-After`), in milliseconds. */
  readonly retryAfterMs?: number | undefined;
  /** The whole problem body, with any members the host added (for example `traceId`). */
  readonly problem?: Readonly<Record<string, unknown>> | undefined;
  readonly cause?: unknown;
}

/** An error of the polling duplex: the server's problem `code`, or one of this client's own. */
export class DuplexError extends Error {
  override name = 'DuplexError';
  readonly code: DuplexErrorCode;
  readonly status: number | undefined;
  readonly detail: string | undefined;
  readonly received: number | undefined;
  readonly retryAfterMs: number | undefined;
  readonly problem: Readonly<Record<string, unknown>> | undefined;

  constructor(code: DuplexErrorCode, message: string, details: DuplexErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    this.status = details.status;
    this.detail = details.detail;
    this.received = details.received;
    this.retryAfterMs = details.retryAfterMs;
    this.problem = details.problem;
  }
}

/** The session is over: the server ended or forgot it, or it could not be reached for as long as it lives. */
export class SessionEndedError extends DuplexError {
  override name = 'SessionEndedError';
}

/**
 * The server refused a message, and it counts as received: do not send it again. `422 message-rejected`: the
 * application refused it; `403 topic-forbidden`: the pub/sub service's topic rule does not let this user subscribe or
 * publish to that topic; `422 too-many-subscriptions`: the session holds as many subscriptions as the server allows one.
 * The session goes on either way.
 */
export class MessageRejectedError extends DuplexError {
  override name = 'MessageRejectedError';
}

/** The server, or something between, answered what the protocol does not allow. */
export class ProtocolError extends DuplexError {
  override name = 'ProtocolError';
}

/** Codes that mean the session is over for good. */
const SESSION_ENDED_CODES: ReadonlySet<string> = new Set<DuplexErrorCode>([
  'unknown-session',
  'session-closed',
  'session-expired',
  'session-faulted',
  'session-evicted',
  'authentication-expired',
  'invalid-token',
  'missing-token',
  'connection-lost',
  'session-shared',
]);

/** Codes whose requests can be repeated as they are, after `Retry-After` (docs: "Client behaviour"). */
const RETRYABLE_CODES: ReadonlySet<string> = new Set<DuplexErrorCode>(['store-unavailable', 'too-many-sessions', 'too-many-pending-sessions']);

/** Makes the error for a code: the class says what kind of failure it is. */
export function duplexError(code: DuplexErrorCode, message: string, details: DuplexErrorDetails = {}): DuplexError {
  if (SESSION_ENDED_CODES.has(code)) {
    return new SessionEndedError(code, message, details);
  }

  if (code === 'message-rejected' || code === 'topic-forbidden' || code === 'too-many-subscriptions') {
    return new MessageRejectedError(code, message, details);
  }

  if (code === 'malformed-frame' || code === 'sequence-gap' || code === 'bad-response') {
    return new ProtocolError(code, message, details);
  }

  return new DuplexError(code, message, details);
}

/** Turns an error response into a typed error carrying the server's problem code, detail and `received`. */
export async function errorFromResponse(response: Response, doing: string): Promise<DuplexError> {
  const status = response.status;
  const retryAfterMs = parseRetryAfter(response.headers.get('Retry-After'));
  let problem: Record<string, unknown> | undefined;
  if (isMediaType(response.headers.get('Content-Type'), PROBLEM_CONTENT_TYPE)) {
    try {
      const body: unknown = await response.json();
      if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
        problem = body as Record<string, unknown>;
      }
    } catch {
      // Not the problem body the protocol promises; the status alone has to do.
    }
  } else {
    await response.body?.cancel().catch(() => undefined);
  }

  const code = typeof problem?.['code'] === 'string' ? (problem['code'] as DuplexErrorCode) : 'http-error';
  const detail = typeof problem?.['detail'] === 'string' ? problem['detail'] : undefined;
  const received = typeof problem?.['received'] === 'number' ? problem['received'] : undefined;
  const message = `Could not ${doing}: ${status} ${code === 'http-error' ? response.statusText || 'error' : code}.${detail ? ` ${detail}` : ''}`;
  return duplexError(code, message, { status, detail, received, retryAfterMs, problem });
}

/**
 * Whether a failed request may be repeated as it is: a network error (a reset connection, a cut response), a timeout,
 * `store-unavailable`, a full server (on open), or an error status from something between client and server (a
 * balancer's own 502, 503 or 504, any other 5xx without the protocol's problem body, 408), and any 429 (a rate limit).
 */
export function isRetryable(error: unknown): boolean {
  if (error instanceof DuplexError) {
    if (RETRYABLE_CODES.has(error.code)) {
      return true;
    }

    // 429 is retryable whatever its body says: a rate limiter (the sample's answers `rate-limited`) refused the request
    // before the endpoint saw it.
    const status = error.status ?? 0;
    return status === 429 || (error.code === 'http-error' && (status >= 500 || status === 408));
  }

  // fetch rejects with a TypeError when the network fails, and a body read rejects with one when the connection is cut.
  return error instanceof TypeError || (error instanceof DOMException && error.name === 'TimeoutError');
}

/** Reads `Retry-After`: seconds, or an HTTP date. */
export function parseRetryAfter(value: string | null): number | undefined {
  if (!value) {
    return undefined;
  }

  const seconds = Number(value.trim());
  if (Number.isFinite(seconds) && seconds >= 0) {
    return seconds * 1000;
  }

  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

export function isMediaType(header: string | null, expected: string): boolean {
  return header !== null && header.split(';', 1)[0]!.trim().toLowerCase() === expected;
}
