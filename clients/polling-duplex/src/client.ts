import { DuplexError, duplexError, errorFromResponse, isMediaType, isRetryable, SessionEndedError } from './errors.js';
import { backoffFrom, linkSignals, retryDelay, sleep, type Backoff, type RetryOptions } from './retry.js';
import { holdSessionLock, noStore, webStorageStore, type SavedSession, type SessionStore } from './saved-state.js';
import { DuplexSession, restorePayloads, type SessionStart } from './session.js';
import { Transport, type HeadersCallback } from './transport.js';
import { CONTENT_TYPES, readOpened, type DuplexEncoding, type DuplexMode, type OpenedSession } from './wire.js';

// Resume keys run by a live session of this page: two sessions saving under one key would overwrite each other.
const keysInUse = new Set<string>();

/** Where and how a session is kept across page reloads. */
export interface ResumeOptions {
  /** The storage key; one session per key. Defaults to `channelpool-duplex:` and the endpoint's address. */
  readonly key?: string;
  /** Where to keep it. Defaults to `sessionStorage`: one session per tab, kept across reloads. */
  readonly storage?: Storage;
  /** How long a reloaded page waits for the page before it to let go of the session (its Web Lock). Defaults to 2,000 ms. */
  readonly lockWaitMs?: number;
}

export interface PollingDuplexClientOptions<E extends DuplexEncoding = 'text'> {
  /** `text` (JSON values, the default) or `binary` (`ArrayBuffer`s). */
  readonly encoding?: E;
  /** `multiple` (the default: every waiting message on one streamed response) or `single`. */
  readonly mode?: DuplexMode;
  /**
   * The application's own headers (its bearer token, for example), asked for before every request so that they can
   * be refreshed. They go on every request, the open and the session's alike: the session token travels in a header of
   * its own (`Duplex-Session-Token`), so an `Authorization` header from here reaches the server's authentication.
   */
  readonly headers?: HeadersCallback;
  /** Whether requests carry the page's cookies. Defaults to `include` (cross-origin too, which then needs CORS with credentials). */
  readonly credentials?: RequestCredentials;
  /** Resume the tab's session after a page reload (the default, where `sessionStorage` exists), or not (`false`). */
  readonly resume?: boolean | ResumeOptions;
  /** How failed requests are repeated. */
  readonly retry?: RetryOptions;
  /** How long past the server's poll timeout and batch window a poll may take before its connection is thought dead. Defaults to 10,000 ms. */
  readonly pollGraceMs?: number;
  /** How long an open, send or close may take. Defaults to 30,000 ms. */
  readonly requestTimeoutMs?: number;
  /** The fetch to use. Defaults to the global one. */
  readonly fetch?: typeof fetch;
}

export interface ResumeSettings {
  readonly storage: Storage;
  readonly key: string;
  readonly lockWaitMs: number;
}

/**
 * Opens polling duplex sessions against one endpoint, and resumes the tab's session after a page reload.
 *
 * ```ts
 * const client = new PollingDuplexClient('/chat');
 * const session = await client.open();
 * session.addEventListener('message', e => console.log(e.data));
 * await session.send({ text: 'hello' });
 * ```
 */
export class PollingDuplexClient<E extends DuplexEncoding = 'text'> {
  /** The endpoint's address, ending with `/`. */
  readonly endpoint: string;
  readonly encoding: E;
  readonly mode: DuplexMode;
  /** Where the tab's session is kept, or undefined when sessions are not resumed. */
  readonly resume: ResumeSettings | undefined;
  readonly #transport: Transport;
  readonly #store: SessionStore;
  readonly #backoff: Backoff;
  readonly #pollGraceMs: number;
  readonly #requestTimeoutMs: number;

  constructor(endpoint: string | URL, options: PollingDuplexClientOptions<E> = {}) {
    this.encoding = (options.encoding ?? 'text') as E;
    this.mode = options.mode ?? 'multiple';
    if (this.encoding !== 'text' && this.encoding !== 'binary') {
      throw new RangeError(`encoding must be 'text' or 'binary'; it is ${JSON.stringify(options.encoding)}.`);
    }

    if (this.mode !== 'single' && this.mode !== 'multiple') {
      throw new RangeError(`mode must be 'single' or 'multiple'; it is ${JSON.stringify(options.mode)}.`);
    }

    this.#pollGraceMs = positive('pollGraceMs', options.pollGraceMs ?? 10_000);
    this.#requestTimeoutMs = positive('requestTimeoutMs', options.requestTimeoutMs ?? 30_000);
    this.#backoff = backoffFrom(options.retry);
    const fetcher = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.#transport = new Transport(endpoint, { headers: options.headers, credentials: options.credentials ?? 'include', fetch: fetcher });
    this.endpoint = this.#transport.base;
    this.resume = resumeSettings(options.resume, this.endpoint);
    this.#store = this.resume === undefined ? noStore : webStorageStore(this.resume.storage, this.resume.key);
  }

  /**
   * Opens a session, or resumes the one this tab saved (after a reload) when the server still has it: what the page
   * before it had not confirmed is sent again, and the stream goes on after the last message it handed over. A saved
   * session the server no longer has (expired, or lost in a server restart), or that another tab is running, is
   * replaced by a new one; `session.resumeFailure` says why, and the new session raises `loss` (messages the saved
   * session held after its last one handed over were not received).
   *
   * An open or resume whose answer is lost or cut short is tried again (up to `retry.maxOpenAttempts` times); an open
   * repeats its `openId`, so the server answers with the session the lost answer named and none is left behind.
   */
  async open(options: { signal?: AbortSignal; resume?: boolean } = {}): Promise<DuplexSession<E>> {
    options.signal?.throwIfAborted();
    const key = this.resume?.key;
    if (key !== undefined) {
      if (keysInUse.has(key)) {
        throw new Error(`A session of this page already keeps its state under '${key}'. Give each client its own resume.key, or resume: false.`);
      }

      keysInUse.add(key);
    }

    try {
      return await this.#open(options);
    } catch (error) {
      if (key !== undefined) {
        keysInUse.delete(key);
      }

      throw error;
    }
  }

  async #open(options: { signal?: AbortSignal; resume?: boolean }): Promise<DuplexSession<E>> {
    let resumeFailure: DuplexError | undefined;
    let lost: SessionStart['lost'];
    if (this.resume !== undefined && options.resume !== false) {
      const saved = this.#store.load();
      if (saved !== undefined && (saved.endpoint !== this.endpoint || saved.encoding !== this.encoding || saved.mode !== this.mode)) {
        this.#store.clear();
      } else if (saved !== undefined) {
        const release = await holdSessionLock(saved.id, this.resume.lockWaitMs);
        if (release === undefined) {
          // Another tab runs this session (this one is its duplicate): leave it alone, and open one of our own.
          resumeFailure = duplexError('session-shared', `Session ${saved.id} is running in another tab of this origin; this tab opened a session of its own.`);
        } else {
          try {
            return await this.#resume(saved, release, options.signal);
          } catch (error) {
            release();
            if (!(error instanceof SessionEndedError)) {
              throw error;
            }

            this.#store.clear();
            resumeFailure = error;
          }
        }

        if (resumeFailure !== undefined) {
          lost = { sessionId: saved.id, afterSeq: saved.delivered };
        }
      }
    }

    const opened = await this.#openNew(options.signal);
    const release = this.resume === undefined ? undefined : await holdSessionLock(opened.id, this.resume.lockWaitMs);
    return this.#start(opened, { delivered: 0, sent: 0, unconfirmed: [], resumed: false, resumeFailure, lost }, release);
  }

  async #resume(saved: SavedSession, release: () => void, signal: AbortSignal | undefined): Promise<DuplexSession<E>> {
    const opened: OpenedSession = { id: saved.id, token: saved.token, encoding: saved.encoding, mode: saved.mode, limits: saved.limits };

    // An empty send changes nothing and says whether the session lives and how far the server received our messages.
    // Its answer is read inside the retries: a body cut short is asked for again, like a connection reset.
    const received = await this.#withRetries(`resume session ${saved.id}`, signal, request =>
      this.#transport.request(this.#transport.sessionUrl(saved.id, '/messages'), { method: 'POST', token: saved.token, body: '', contentType: CONTENT_TYPES[saved.encoding], signal: request }), 200,
    async response => {
      const value = await readReceived(response);
      if (value === undefined) {
        throw new TypeError(`Resuming session ${saved.id}: the server's answer was cut short (no "received").`);
      }

      return value;
    });

    // The saved unconfirmed messages are numbered from saved.sent + 1; the server may have taken some before the reload.
    const unconfirmed = restorePayloads(saved.encoding, saved.unconfirmed).slice(Math.max(0, received - saved.sent));
    return this.#start(opened, { delivered: saved.delivered, sent: received, unconfirmed, resumed: true, resumeFailure: undefined, lost: undefined }, release);
  }

  async #openNew(signal: AbortSignal | undefined): Promise<OpenedSession> {
    // One openId per logical open, sent again by each retry: the server answers a retry whose first answer was lost
    // (a reset, a body cut short) with that same session, so no session is left behind unused.
    const body = JSON.stringify({ encoding: this.encoding, mode: this.mode, openId: newOpenId() });
    const opened = await this.#withRetries('open a session', signal, request =>
      this.#transport.request(`${this.endpoint}sessions`, { method: 'POST', body, contentType: 'application/json', signal: request }), 201,
    async response => {
      if (response.headers.get('Content-Type') === null) {
        // The server always names the type: a 201 without one was cut inside its headers.
        throw new TypeError("The open's answer was cut inside its headers.");
      }

      let json: unknown;
      try {
        json = isMediaType(response.headers.get('Content-Type'), 'application/json') ? await response.json() : undefined;
      } catch (error) {
        // A 201 whose JSON does not parse was cut inside its body.
        throw new TypeError(`The open's answer was cut short: ${String(error)}`);
      }

      const read = readOpened(json);
      if (typeof read === 'string') {
        // A whole JSON object that is not an open's answer: the server is not what this client speaks to.
        throw duplexError('bad-response', `Could not open a session: ${read}.`, { status: response.status });
      }

      return read;
    });

    if (opened.encoding !== this.encoding || opened.mode !== this.mode) {
      throw duplexError('bad-response', `Asked for a ${this.encoding} ${this.mode} session, the server opened a ${opened.encoding} ${opened.mode} one.`);
    }

    return opened;
  }

  /**
   * Sends a request until it is answered with `expected` and `read` could read its answer, repeating what may be
   * repeated (a network error, a body cut short: `read` throws a TypeError then), at most `maxOpenAttempts` times.
   */
  async #withRetries<T>(doing: string, signal: AbortSignal | undefined, send: (signal: AbortSignal) => Promise<Response>, expected: number, read: (response: Response) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const linked = linkSignals([signal], this.#requestTimeoutMs, `Could not ${doing}: no answer within ${this.#requestTimeoutMs} ms.`);
      let failure: unknown;
      try {
        const response = await send(linked.signal);
        if (response.status === expected) {
          return await read(response);
        }

        failure = await errorFromResponse(response, doing);
      } catch (error) {
        if (signal?.aborted) {
          throw signal.reason;
        }

        failure = error;
      } finally {
        linked.dispose();
      }

      if (!isRetryable(failure) || attempt + 1 >= this.#backoff.maxOpenAttempts) {
        throw failure instanceof DuplexError ? failure : duplexError('connection-lost', `Could not ${doing} in ${attempt + 1} attempt(s): ${String(failure)}`, { cause: failure });
      }

      await sleep(retryDelay(this.#backoff, attempt, failure instanceof DuplexError ? failure.retryAfterMs : undefined), signal);
    }
  }

  #start(opened: OpenedSession, start: SessionStart, release: (() => void) | undefined): DuplexSession<E> {
    const key = this.resume?.key;
    const session = DuplexSession.create<E>(opened, start, {
      transport: this.#transport,
      store: this.#store,
      backoff: this.#backoff,
      pollGraceMs: this.#pollGraceMs,
      requestTimeoutMs: this.#requestTimeoutMs,
      releaseLock: () => {
        release?.();
        if (key !== undefined) {
          keysInUse.delete(key);
        }
      },
    });
    session.start();
    return session;
  }
}

/** Where sessions are kept across reloads, from the options; undefined when they are not. */
export function resumeSettings(resume: boolean | ResumeOptions | undefined, endpoint: string): ResumeSettings | undefined {
  if (resume === false) {
    return undefined;
  }

  const options = typeof resume === 'object' ? resume : {};
  const storage = options.storage ?? (globalThis as { sessionStorage?: Storage }).sessionStorage;
  if (storage === undefined) {
    if (resume !== undefined) {
      throw new TypeError('resume needs a Storage (sessionStorage is not available here): pass resume.storage, or resume: false.');
    }

    return undefined;
  }

  return { storage, key: options.key ?? `channelpool-duplex:${endpoint}`, lockWaitMs: options.lockWaitMs ?? 2000 };
}

async function readReceived(response: Response): Promise<number | undefined> {
  try {
    const body: unknown = await response.json();
    const received = (body as { received?: unknown } | null)?.received;
    return typeof received === 'number' && Number.isSafeInteger(received) ? received : undefined;
  } catch {
    return undefined;
  }
}

/** A new open's id: 128 random bits, base64url (22 characters). */
function newOpenId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function positive(name: string, value: number): number {
  if (!(value > 0) || !Number.isFinite(value)) {
    throw new RangeError(`${name} must be a number of milliseconds above 0; it is ${value}.`);
  }

  return value;
}
