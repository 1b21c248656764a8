import { DuplexError, duplexError, errorFromResponse, isMediaType, isRetryable, SessionEndedError } from './errors.js';
import { encodeSendBody, frameSize, FrameReader, toPayload, utf8Length, type OutgoingPayload, type ServerFrame } from './frames.js';
import { retryDelay, linkSignals, sleep, type Backoff } from './retry.js';
import { fromBase64, toBase64, type SessionStore } from './saved-state.js';
import type { DuplexRequest, Transport } from './transport.js';
import { CONTENT_TYPES, type DuplexEncoding, type DuplexMode, type OpenedSession, type SessionLimits } from './wire.js';

/** What a session hands over: a text session's messages are JSON values, a binary session's are `ArrayBuffer`s. */
export type PayloadOf<E extends DuplexEncoding> = E extends 'binary' ? ArrayBuffer : unknown;

/** What a session sends: a text session sends JSON values, a binary session an `ArrayBuffer` or a typed array. */
export type SendableOf<E extends DuplexEncoding> = E extends 'binary' ? ArrayBuffer | ArrayBufferView : unknown;

/** One item of the server's stream, in sequence: a message, or a gap where `missed` messages were dropped. */
export type DuplexItem<T> =
  | { readonly kind: 'message'; readonly seq: number; readonly data: T }
  | { readonly kind: 'gap'; readonly seq: number; readonly missed: number };

/** `message`: a message from the server, handed over exactly once, in order. */
export class DuplexMessageEvent<T = unknown> extends Event {
  constructor(readonly seq: number, readonly data: T) {
    super('message');
  }
}

/** `gap`: the server dropped `missed` messages at this point of the sequence (its overflow policy is `gap`). */
export class DuplexGapEvent extends Event {
  constructor(readonly seq: number, readonly missed: number) {
    super('gap');
  }
}

/**
 * `loss`: messages were lost, and this says so, once per loss. `reason` is the code of what happened: `gap` (the
 * server dropped `missed` messages at `seq`, its overflow policy being `gap`); a session that ended while messages
 * may have been waiting for it (`session-faulted` for a window overflow, `session-expired`, `session-evicted`,
 * `unknown-session` after a server restart, `connection-lost`, `session-shared`, ...), raised on the session that
 * ended; or a saved session that could not be resumed after a reload (the same codes, and `session-shared` for a
 * duplicated tab), raised on the session opened in its place. `afterSeq` is the last message handed over from
 * `sessionId` before the loss: what came after it there was not received. `missed` is how many, where the protocol
 * knows it (gaps only).
 */
export class DuplexLossEvent extends Event {
  constructor(readonly reason: string, readonly sessionId: string, readonly afterSeq: number, readonly missed: number | undefined, readonly error: DuplexError | undefined) {
    super('loss');
  }
}

/** `error`: the session failed; `end` follows. */
export class DuplexErrorEvent extends Event {
  constructor(readonly error: DuplexError) {
    super('error');
  }
}

/** `reconnecting`: a request failed in a way worth repeating; the session tries again after `delayMs`. */
export class DuplexReconnectingEvent extends Event {
  constructor(readonly error: unknown, readonly attempt: number, readonly delayMs: number) {
    super('reconnecting');
  }
}

/** `end`: the session is over. `error` is undefined when this client closed it. */
export class DuplexEndEvent extends Event {
  constructor(readonly error: DuplexError | undefined) {
    super('end');
  }
}

export interface DuplexSessionEventMap<T> {
  message: DuplexMessageEvent<T>;
  gap: DuplexGapEvent;
  loss: DuplexLossEvent;
  error: DuplexErrorEvent;
  reconnecting: DuplexReconnectingEvent;
  reconnected: Event;
  end: DuplexEndEvent;
}

export type DuplexSessionState = 'open' | 'closed' | 'failed';

/** Where a session starts: a new one, or one resumed from saved state. */
export interface SessionStart {
  readonly delivered: number;
  readonly sent: number;
  /** Messages numbered from `sent + 1` that the server has not confirmed: sent again first, with the same numbers. */
  readonly unconfirmed: readonly OutgoingPayload[];
  readonly resumed: boolean;
  readonly resumeFailure: DuplexError | undefined;
  /** The saved session this one replaces, when it could not be resumed: its id and the last message handed over. */
  readonly lost: { readonly sessionId: string; readonly afterSeq: number } | undefined;
}

export interface SessionSettings {
  readonly transport: Transport;
  readonly store: SessionStore;
  readonly backoff: Backoff;
  readonly pollGraceMs: number;
  readonly requestTimeoutMs: number;
  readonly releaseLock: () => void;
}

interface Outgoing {
  readonly payload: OutgoingPayload;
  settled: boolean;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * An open polling duplex session. It keeps one poll outstanding, hands every server message over exactly once and in
 * order (as `message` events, or through `messages()`), numbers what it sends so that a repeated send is never
 * delivered twice, and saves what it needs to resume after a page reload.
 */
export class DuplexSession<E extends DuplexEncoding = DuplexEncoding> extends EventTarget {
  /** The session's id (not a secret; the token is). */
  readonly id: string;
  readonly encoding: E;
  readonly mode: DuplexMode;
  /** What the server enforces, from its open response. */
  readonly limits: SessionLimits;
  /** Whether this session was resumed from saved state (after a reload), rather than opened. */
  readonly resumed: boolean;
  /** Why a saved session could not be resumed and this one was opened instead, if that happened. */
  readonly resumeFailure: DuplexError | undefined;
  /** The saved session this one was opened in place of, when it could not be resumed: its id and the last message handed over from it. */
  readonly replaced: { readonly sessionId: string; readonly afterSeq: number } | undefined;
  /** Settles when the session ends: with undefined when this client closed it, else with the error. Never rejects. */
  readonly ended: Promise<DuplexError | undefined>;

  readonly #token: string;
  readonly #settings: SessionSettings;
  readonly #pollUrl: string;
  readonly #messagesUrl: string;
  readonly #pollTimeoutMs: number;
  readonly #stop = new AbortController();
  #endedResolve!: (error: DuplexError | undefined) => void;
  #state: DuplexSessionState = 'open';
  #error: DuplexError | undefined;

  // Server to client: the last frame taken from a response, and the last one handed to the application (the ack).
  #received: number;
  #delivered: number;
  #inbox: DuplexItem<PayloadOf<E>>[] | undefined;
  #inboxChanged: (() => void) | undefined;
  #drained: (() => void) | undefined;

  // Client to server: the last message the server confirmed, messages waiting, and the batch on its way.
  #sent: number;
  #outbox: Outgoing[] = [];
  #inFlight: Outgoing[] = [];
  #inFlightSaved: string[] = [];
  #sending = false;

  // The `message` listeners added and not removed, by capture flag: one removed by `once` or a signal stays counted,
  // which only costs an unheard event.
  readonly #messageListeners = [new Set<unknown>(), new Set<unknown>()] as const;

  #lastAnswer = Date.now();
  // Set while the page sits in the back-forward cache: polling stops, and pageshow starts it again.
  #frozen: { readonly resume: Promise<void>; readonly wake: () => void } | undefined;
  #pollAbort: AbortController | undefined;
  #unhookPage: (() => void) | undefined;
  #reconnecting = false;
  #persistQueued = false;

  /** @internal Sessions come from `PollingDuplexClient.open`. */
  static create<E extends DuplexEncoding>(opened: OpenedSession, start: SessionStart, settings: SessionSettings): DuplexSession<E> {
    return new DuplexSession<E>(opened, start, settings);
  }

  private constructor(opened: OpenedSession, start: SessionStart, settings: SessionSettings) {
    super();
    this.id = opened.id;
    this.encoding = opened.encoding as E;
    this.mode = opened.mode;
    this.limits = opened.limits;
    this.resumed = start.resumed;
    this.resumeFailure = start.resumeFailure;
    this.#token = opened.token;
    this.#settings = settings;
    this.#pollUrl = settings.transport.sessionUrl(opened.id, '/poll?ack=');
    this.#messagesUrl = settings.transport.sessionUrl(opened.id, '/messages');
    this.#pollTimeoutMs = opened.limits.serverPollTimeoutMs + opened.limits.batchWindowMs + settings.pollGraceMs;
    this.#received = this.#delivered = start.delivered;
    this.#sent = start.sent;
    this.replaced = start.lost;
    this.#outbox = start.unconfirmed.map(payload => ({ payload, settled: true, resolve: () => undefined, reject: () => undefined }));
    this.ended = new Promise(resolve => { this.#endedResolve = resolve; });
  }

  override addEventListener<K extends keyof DuplexSessionEventMap<PayloadOf<E>>>(type: K, listener: (this: DuplexSession<E>, event: DuplexSessionEventMap<PayloadOf<E>>[K]) => unknown, options?: boolean | AddEventListenerOptions): void;
  override addEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | AddEventListenerOptions): void;
  override addEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | AddEventListenerOptions): void {
    if (type === 'message' && listener !== null) {
      this.#messageListeners[isCapture(options) ? 1 : 0].add(listener);
    }

    super.addEventListener(type, listener, options);
  }

  override removeEventListener<K extends keyof DuplexSessionEventMap<PayloadOf<E>>>(type: K, listener: (this: DuplexSession<E>, event: DuplexSessionEventMap<PayloadOf<E>>[K]) => unknown, options?: boolean | EventListenerOptions): void;
  override removeEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | EventListenerOptions): void;
  override removeEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | EventListenerOptions): void {
    if (type === 'message' && listener !== null) {
      this.#messageListeners[isCapture(options) ? 1 : 0].delete(listener);
    }

    super.removeEventListener(type, listener, options);
  }

  /** `open` until `close()` or a failure. */
  get state(): DuplexSessionState {
    return this.#state;
  }

  /** Why the session failed. */
  get error(): DuplexError | undefined {
    return this.#error;
  }

  /** The sequence number of the last item handed over: what the next poll acknowledges. */
  get lastReceived(): number {
    return this.#delivered;
  }

  /** @internal Starts polling, and sends again what an earlier page left unconfirmed. */
  start(): void {
    this.#persistNow();
    this.#hookPage();
    void this.#pollLoop();
    this.#kickSender();
    if (this.replaced !== undefined && this.resumeFailure !== undefined) {
      // After the task that hands the session over, so listeners added right after `await client.open()` hear it.
      const { sessionId, afterSeq } = this.replaced;
      const error = this.resumeFailure;
      setTimeout(() => this.dispatchEvent(new DuplexLossEvent(error.code, sessionId, afterSeq, undefined, error)), 0);
    }
  }

  /**
   * Follows the page's lifecycle. A page going away for good (`pagehide`, not persisted: closed, navigated away, or
   * reloading) tells the server with a request that outlives it (`keepalive`), and the server ends the session after
   * its `AwayGracePeriod` unless a request comes back first, as a reload's resume does. A page going into the
   * back-forward cache stops polling, and starts again (resumes) when it is shown.
   */
  #hookPage(): void {
    const page = globalThis as { addEventListener?: typeof addEventListener; removeEventListener?: typeof removeEventListener; document?: unknown };
    if (typeof page.addEventListener !== 'function' || page.document === undefined) {
      return;
    }

    const onHide = (event: Event) => {
      if ((event as PageTransitionEvent).persisted) {
        this.#freeze();
      } else {
        this.#sendAway();
      }
    };
    const onShow = (event: Event) => {
      if ((event as PageTransitionEvent).persisted) {
        this.#thaw();
      }
    };
    page.addEventListener('pagehide', onHide);
    page.addEventListener('pageshow', onShow);
    this.#unhookPage = () => {
      page.removeEventListener!('pagehide', onHide);
      page.removeEventListener!('pageshow', onShow);
    };
  }

  #sendAway(): void {
    if (this.#state !== 'open') {
      return;
    }

    // keepalive: the request outlives the page. Best effort: if it does not arrive, the session lives out its inactivity timeout.
    void this.#settings.transport.request(this.#settings.transport.sessionUrl(this.id, '/away'), { method: 'POST', token: this.#token, signal: new AbortController().signal, keepalive: true })
      .then(response => response.body?.cancel(), () => undefined)
      .catch(() => undefined);
  }

  #freeze(): void {
    if (this.#frozen !== undefined || this.#state !== 'open') {
      return;
    }

    let wake!: () => void;
    const resume = new Promise<void>(resolve => { wake = resolve; });
    this.#frozen = { resume, wake };
    this.#pollAbort?.abort(new DOMException('The page went into the back-forward cache.', 'AbortError'));
  }

  #thaw(): void {
    const frozen = this.#frozen;
    this.#frozen = undefined;
    // The time in the cache is not the server's silence: count from now.
    this.#lastAnswer = Date.now();
    frozen?.wake();
  }

  /**
   * Sends one message. Messages sent while another send is on its way travel together in the next request. A failed
   * request is repeated with the same sequence numbers, so the server's application takes each message once.
   * @returns A promise that settles when the server's application has taken the message: it rejects with a
   * `MessageRejectedError` if the application refused it, or with the session's error if the session ended first.
   * Aborting `signal` before the message leaves takes it back; after that, the message may still arrive.
   */
  send(data: SendableOf<E>, options: { signal?: AbortSignal } = {}): Promise<void> {
    if (this.#state !== 'open') {
      return Promise.reject(this.#over('send'));
    }

    const signal = options.signal;
    if (signal?.aborted) {
      return Promise.reject(signal.reason);
    }

    let payload: OutgoingPayload;
    try {
      payload = toPayload(this.encoding, data, this.limits.maxMessageSize);
    } catch (error) {
      return Promise.reject(error);
    }

    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const queued = this.#outbox.indexOf(item);
        if (queued >= 0) {
          this.#outbox.splice(queued, 1);
        }

        settle(item, signal!.reason);
      };
      const item: Outgoing = {
        payload,
        settled: false,
        resolve: () => { signal?.removeEventListener('abort', onAbort); resolve(); },
        reject: error => { signal?.removeEventListener('abort', onAbort); reject(error); },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#outbox.push(item);
      this.#kickSender();
    });
  }

  /**
   * Reads the server's stream: every message and gap, exactly once, in order. While an iterator is open, items are
   * handed over as it takes them (and `message` events fire then); the next poll waits until it has taken what
   * arrived. It finishes when the session is closed, and throws the session's error, after the items before it, when
   * the session fails. One iterator at a time (this or `batches()`).
   */
  messages(options: { signal?: AbortSignal } = {}): AsyncIterableIterator<DuplexItem<PayloadOf<E>>> {
    return this.#iterate(options.signal, inbox => {
      const item = inbox.shift()!;
      this.#handOver(item);
      return item;
    });
  }

  /**
   * Reads the server's stream as `messages()` does, but hands over everything that has arrived at each step, as one
   * array (never empty): one promise per batch rather than per message, for a page that takes thousands a second.
   * Items in a batch are handed over together, so update your own state for all of them before you await anything.
   */
  batches(options: { signal?: AbortSignal } = {}): AsyncIterableIterator<readonly DuplexItem<PayloadOf<E>>[]> {
    return this.#iterate(options.signal, inbox => {
      const items = inbox.splice(0);
      items.forEach(item => this.#handOver(item));
      return items;
    });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<DuplexItem<PayloadOf<E>>> {
    return this.messages();
  }

  /**
   * Closes the session: stops polling, tells the server (which discards what was not delivered), and forgets the
   * saved state. Sends not yet confirmed reject with code `closed`. The session is closed here even if the server
   * cannot be told; it then expires there on its own. Aborting `signal` stops telling the server.
   */
  async close(options: { signal?: AbortSignal } = {}): Promise<void> {
    if (this.#state !== 'open') {
      return;
    }

    this.#state = 'closed';
    this.#end(duplexError('closed', `Session ${this.id} was closed by this client.`));
    try {
      for (let attempt = 0; ; attempt++) {
        const { signal, dispose } = linkSignals([options.signal], this.#settings.requestTimeoutMs);
        try {
          const response = await this.#settings.transport.request(this.#settings.transport.sessionUrl(this.id), { method: 'DELETE', token: this.#token, signal });
          await response.body?.cancel().catch(() => undefined);
          if (response.status < 500 || attempt >= 2) {
            break;
          }
        } catch (error) {
          if (options.signal?.aborted) {
            throw options.signal.reason;
          }

          if (!isRetryable(error) || attempt >= 2) {
            // The server expires the session after its inactivity timeout.
            break;
          }
        } finally {
          dispose();
        }

        await sleep(retryDelay(this.#settings.backoff, attempt), options.signal);
      }
    } finally {
      this.dispatchEvent(new DuplexEndEvent(undefined));
      this.#endedResolve(undefined);
    }
  }

  /** One open iterator over the inbox: `take` hands over and returns what one step yields, from a non-empty inbox. */
  #iterate<T>(signal: AbortSignal | undefined, take: (inbox: DuplexItem<PayloadOf<E>>[]) => T): AsyncIterableIterator<T> {
    if (this.#inbox !== undefined) {
      throw new Error(`Session ${this.id} already has an open iterator; use one at a time, or listen to 'message' events.`);
    }

    const inbox: DuplexItem<PayloadOf<E>>[] = [];
    this.#inbox = inbox;
    const detach = () => {
      if (this.#inbox === inbox) {
        this.#inbox = undefined;
        this.#inboxChanged = undefined;
        for (const item of inbox.splice(0)) {
          this.#handOver(item);
        }

        this.#wakeDrained();
      }
    };
    const iterator: AsyncIterableIterator<T> = {
      next: async () => {
        for (;;) {
          if (signal?.aborted) {
            detach();
            throw signal.reason;
          }

          if (inbox.length > 0) {
            const value = take(inbox);
            if (inbox.length === 0) {
              this.#wakeDrained();
            }

            return { value, done: false };
          }

          if (this.#state !== 'open') {
            detach();
            if (this.#error !== undefined) {
              throw this.#error;
            }

            return { value: undefined, done: true };
          }

          await new Promise<void>((resolve, reject) => {
            const onAbort = () => {
              // An aborted read ends the iterator: what arrives next goes to the events, or to a new iterator.
              detach();
              reject(signal!.reason);
            };
            signal?.addEventListener('abort', onAbort, { once: true });
            this.#inboxChanged = () => {
              signal?.removeEventListener('abort', onAbort);
              resolve();
            };
          });
        }
      },
      return: async () => {
        detach();
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]() {
        return iterator;
      },
    };
    return iterator;
  }

  async #pollLoop(): Promise<void> {
    let failures = 0;
    let superseded = 0;
    while (this.#state === 'open') {
      await this.#inboxDrained();
      if (this.#frozen !== undefined) {
        await this.#frozen.resume;
      }

      if (this.#state !== 'open') {
        return;
      }

      this.#pollAbort = new AbortController();
      const failure = await this.#exchange(this.#pollUrl + this.#delivered, { method: 'GET' }, this.#pollTimeoutMs, 'A poll', async response => {
        if (response.status === 200) {
          await this.#readFrames(response);
          return undefined;
        }

        return response.status === 204 ? response.body?.cancel().catch(() => undefined) : errorFromResponse(response, `poll session ${this.id}`);
      }, this.#pollAbort.signal);
      if (this.#state !== 'open') {
        return;
      }

      if (this.#frozen !== undefined) {
        // Abandoned for the back-forward cache, not failed: poll again once the page is shown.
        continue;
      }

      if (failure === undefined) {
        failures = 0;
        superseded = 0;
        this.#answered();
        continue;
      }

      if (failure instanceof DuplexError && failure.code === 'poll-superseded') {
        // This client never replaces its own poll without abandoning it first, so a 409 means another client polls
        // this session (a duplicated tab, a copy of the saved state). Give it a moment; then give up, loudly.
        this.#answered();
        if (++superseded >= 3) {
          this.#fail(duplexError('session-shared', `Session ${this.id}: another client keeps polling this session (409 poll-superseded three times in a row), so this one cannot receive its messages exactly once.`, { cause: failure, status: 409 }));
          return;
        }
      } else if (!(await this.#mayRetry(failure))) {
        return;
      }

      if (!(await this.#waitToRetry(failure, failures++))) {
        return;
      }
    }
  }

  async #readFrames(response: Response): Promise<void> {
    if (response.headers.get('Content-Type') === null) {
      // The server always names the type: a 200 without one was cut inside its headers. The same poll again gets it.
      await response.body?.cancel().catch(() => undefined);
      throw new TypeError(`A poll response of session ${this.id} was cut inside its headers.`);
    }

    if (!isMediaType(response.headers.get('Content-Type'), CONTENT_TYPES[this.encoding]) || response.body === null) {
      await response.body?.cancel().catch(() => undefined);
      throw duplexError('bad-response', `A poll of ${this.encoding} session ${this.id} was answered 200 with '${response.headers.get('Content-Type') ?? 'no content type'}', not ${CONTENT_TYPES[this.encoding]}.`, { status: 200 });
    }

    // Read the stream as it arrives: a multiple-mode response carries frames for its whole batch window.
    const reader = response.body.getReader();
    const frames = new FrameReader(this.encoding, this.limits.maxMessageSize);
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) {
          break;
        }

        frames.push(value, frame => this.#take(frame));
      }
    } catch (error) {
      await reader.cancel().catch(() => undefined);
      throw error;
    }

    const end = frames.end();
    end.frames.forEach(frame => this.#take(frame));
    if (end.truncated) {
      // Cut off inside a frame (a proxy that ended the body early): the next poll, with the same ack, gets it again.
      throw new TypeError(`A poll response of session ${this.id} ended inside a frame.`);
    }
  }

  #take(frame: ServerFrame): void {
    if (frame.seq <= this.#received) {
      // Sent again because an earlier response was lost or cut: the application already has it.
      return;
    }

    if (frame.seq !== this.#received + 1) {
      throw duplexError('sequence-gap', `Session ${this.id} expected frame ${this.#received + 1} and got ${frame.seq}: frames in between were acknowledged by someone else. Another client may be polling this session.`);
    }

    this.#received = frame.seq;
    // A frame has an item's shape already: it is handed over as it is, one object less per message.
    const item = frame as DuplexItem<PayloadOf<E>>;
    if (this.#inbox !== undefined) {
      this.#inbox.push(item);
      this.#inboxChanged?.();
    } else {
      this.#handOver(item);
    }
  }

  /** Hands an item to the application; the saved position follows before the page can unload (same task). */
  #handOver(item: DuplexItem<PayloadOf<E>>): void {
    this.#delivered = item.seq;
    this.#schedulePersist();
    if (item.kind === 'gap') {
      this.dispatchEvent(new DuplexGapEvent(item.seq, item.missed));
      this.dispatchEvent(new DuplexLossEvent('gap', this.id, item.seq - 1, item.missed, undefined));
    } else if (this.#messageListeners[0].size + this.#messageListeners[1].size > 0) {
      // An event object and its dispatch cost more than the rest of a message's reading: none for nobody.
      this.dispatchEvent(new DuplexMessageEvent(item.seq, item.data));
    }
  }

  #inboxDrained(): Promise<void> {
    if (this.#inbox === undefined || this.#inbox.length === 0) {
      return Promise.resolve();
    }

    return new Promise(resolve => { this.#drained = resolve; });
  }

  #wakeDrained(): void {
    const drained = this.#drained;
    this.#drained = undefined;
    drained?.();
  }

  #kickSender(): void {
    if (this.#sending || this.#state !== 'open' || this.#outbox.length === 0) {
      return;
    }

    this.#sending = true;
    void this.#sendLoop().finally(() => {
      this.#sending = false;
      this.#kickSender();
    });
  }

  async #sendLoop(): Promise<void> {
    while (this.#state === 'open' && this.#outbox.length > 0) {
      // Everything queued goes in one request, up to the server's request size and message count limits.
      const batch: Outgoing[] = [];
      // Limits saved by an older version of this module, before the server said, have no count: no limit then.
      const most = this.limits.maxMessagesPerSend > 0 ? this.limits.maxMessagesPerSend : Number.MAX_SAFE_INTEGER;
      let size = 0;
      while (this.#outbox.length > 0 && batch.length < most) {
        const next = frameSize(this.encoding, this.#outbox[0]!.payload);
        if (batch.length > 0 && size + next > this.limits.maxSendRequestSize) {
          break;
        }

        batch.push(this.#outbox.shift()!);
        size += next;
      }

      await this.#sendBatch(batch);
    }
  }

  async #sendBatch(batch: Outgoing[]): Promise<void> {
    const first = this.#sent + 1;
    const body = encodeSendBody(this.encoding, first, batch.map(item => item.payload));
    this.#inFlight = batch;
    this.#inFlightSaved = batch.map(item => typeof item.payload.value === 'string' ? item.payload.value : toBase64(item.payload.value));
    this.#persistNow();
    for (let failures = 0; ; failures++) {
      const failure = await this.#exchange(this.#messagesUrl, { method: 'POST', body, contentType: CONTENT_TYPES[this.encoding] }, this.#settings.requestTimeoutMs, 'A send', async response => {
        if (response.status !== 200) {
          return errorFromResponse(response, `send on session ${this.id}`);
        }

        await response.body?.cancel().catch(() => undefined);
        return undefined;
      });
      if (this.#state !== 'open') {
        return;
      }

      if (failure === undefined) {
        this.#answered();
        this.#confirm(batch, first);
        return;
      }

      if (failure instanceof DuplexError && failure.received !== undefined && !(failure instanceof SessionEndedError)) {
        // message-rejected, topic-forbidden, handler-failed, topic-authorization-failed, out-of-order: every answer
        // about sequence numbers says how far the server got.
        this.#answered();
        this.#refused(batch, first, failure, failure.received);
        return;
      }

      if (!isRetryable(failure)) {
        if (failure instanceof SessionEndedError) {
          this.#fail(failure);
        } else {
          // Refused as a whole (400, 413, 415): nothing in it was delivered.
          batch.forEach(item => settle(item, failure));
          this.#finishBatch(this.#sent);
        }

        return;
      }

      if (!(await this.#mayRetry(failure)) || !(await this.#waitToRetry(failure, failures))) {
        return;
      }
    }
  }

  #confirm(batch: Outgoing[], first: number): void {
    // A 200 comes only after the application has taken every message of the request.
    batch.forEach(item => settle(item));
    this.#finishBatch(Math.max(this.#sent, first + batch.length - 1));
  }

  #refused(batch: Outgoing[], first: number, error: DuplexError, received: number): void {
    // 422 message-rejected, 403 topic-forbidden: the refused message counts as received; those after it were not
    // delivered and keep their numbers.
    // 500 handler-failed, topic-authorization-failed: the failed message was not received; those after it move up one.
    // 409 out-of-order: the server is behind what it confirmed before; nothing in this batch was delivered.
    const failed = error.code === 'message-rejected' || error.code === 'topic-forbidden' || error.code === 'too-many-subscriptions' ? received
      : error.code === 'handler-failed' || error.code === 'topic-authorization-failed' ? received + 1
      : undefined;
    const again: Outgoing[] = [];
    batch.forEach((item, i) => {
      const seq = first + i;
      if (failed === undefined) {
        settle(item, error);
      } else if (seq === failed) {
        settle(item, error);
      } else if (seq <= received) {
        settle(item);
      } else {
        again.push(item);
      }
    });
    this.#outbox.unshift(...again);
    this.#finishBatch(received);
  }

  #finishBatch(sent: number): void {
    this.#sent = sent;
    this.#inFlight = [];
    this.#inFlightSaved = [];
    this.#persistNow();
  }

  /** Whether a failed request should be repeated; if not, the session fails here. */
  async #mayRetry(failure: unknown): Promise<boolean> {
    if (!isRetryable(failure)) {
      this.#fail(failure instanceof DuplexError ? failure : duplexError('bad-response', `Session ${this.id} failed: ${String(failure)}`, { cause: failure }));
      return false;
    }

    // Past the inactivity timeout with no answer, the server has expired the session: stop, and say so.
    if (Date.now() - this.#lastAnswer > this.limits.inactivityTimeoutMs) {
      this.#fail(duplexError('connection-lost', `Session ${this.id} could not reach the server for longer than the session lives without a request (${this.limits.inactivityTimeoutMs} ms); it is given up. Last error: ${String(failure)}`, { cause: failure }));
      return false;
    }

    return true;
  }

  /**
   * One request of the session, bounded by `timeoutMs` and by the session's end: returns what `answer` makes of the
   * response (undefined for success, else the failure), or the error the request failed with. Never throws.
   */
  async #exchange(url: string, request: Pick<DuplexRequest, 'method' | 'body' | 'contentType'>, timeoutMs: number, what: string, answer: (response: Response) => Promise<unknown>, abort?: AbortSignal): Promise<unknown> {
    const { signal, dispose } = linkSignals([this.#stop.signal, abort], timeoutMs, `${what} on session ${this.id} got no answer within ${timeoutMs} ms.`);
    try {
      return await answer(await this.#settings.transport.request(url, { ...request, token: this.#token, signal }));
    } catch (error) {
      return error;
    } finally {
      dispose();
    }
  }

  /** Reports the retry and waits its backoff delay; false when the session ended meanwhile. */
  async #waitToRetry(failure: unknown, attempt: number): Promise<boolean> {
    const delay = retryDelay(this.#settings.backoff, attempt, failure instanceof DuplexError ? failure.retryAfterMs : undefined);
    this.#reconnect(failure, attempt + 1, delay);
    try {
      await sleep(delay, this.#stop.signal);
      return true;
    } catch {
      return false;
    }
  }

  #answered(): void {
    this.#lastAnswer = Date.now();
    if (this.#reconnecting) {
      this.#reconnecting = false;
      this.dispatchEvent(new Event('reconnected'));
    }
  }

  #reconnect(error: unknown, attempt: number, delayMs: number): void {
    this.#reconnecting = true;
    this.dispatchEvent(new DuplexReconnectingEvent(error, attempt, delayMs));
  }

  #fail(error: DuplexError): void {
    if (this.#state !== 'open') {
      return;
    }

    this.#state = 'failed';
    this.#error = error;
    this.#end(error);
    this.dispatchEvent(new DuplexErrorEvent(error));
    if (isLoss(error)) {
      // Whatever the server held for this session after the last message handed over is gone with it.
      this.dispatchEvent(new DuplexLossEvent(error.code, this.id, this.#delivered, undefined, error));
    }

    this.dispatchEvent(new DuplexEndEvent(error));
    this.#endedResolve(error);
  }

  /** Stops every request, settles every send, forgets the saved state and lets go of the session's lock. */
  #end(error: DuplexError): void {
    this.#stop.abort(error);
    this.#unhookPage?.();
    this.#frozen?.wake();
    this.#frozen = undefined;
    for (const item of [...this.#inFlight, ...this.#outbox.splice(0)]) {
      settle(item, error);
    }

    this.#inFlight = [];
    this.#settings.store.clear();
    this.#settings.releaseLock();
    this.#inboxChanged?.();
    this.#wakeDrained();
  }

  #over(doing: string): DuplexError {
    return this.#error ?? duplexError('closed', `Cannot ${doing}: session ${this.id} was closed by this client.`);
  }

  #schedulePersist(): void {
    if (!this.#persistQueued) {
      this.#persistQueued = true;
      // Once per task: a page unloads only between tasks, so the saved position is always the one handed over.
      queueMicrotask(() => {
        this.#persistQueued = false;
        this.#persistNow();
      });
    }
  }

  #persistNow(): void {
    if (this.#state !== 'open') {
      return;
    }

    this.#settings.store.save({
      v: 1,
      endpoint: this.#settings.transport.base,
      id: this.id,
      token: this.#token,
      encoding: this.encoding,
      mode: this.mode,
      limits: this.limits,
      delivered: this.#delivered,
      sent: this.#sent,
      unconfirmed: this.#inFlightSaved,
    });
  }
}

/** Turns saved unconfirmed messages back into payloads, exactly as they were sent. */
export function restorePayloads(encoding: DuplexEncoding, saved: readonly string[]): OutgoingPayload[] {
  return saved.map(value => {
    const bytes = encoding === 'binary' ? fromBase64(value) : undefined;
    return bytes === undefined ? { value, size: utf8Length(value) } : { value: bytes, size: bytes.byteLength };
  });
}

function settle(item: Outgoing, error?: unknown): void {
  if (item.settled) {
    return;
  }

  item.settled = true;
  if (error === undefined) {
    item.resolve();
  } else {
    item.reject(error);
  }
}


/** Whether a session that failed with `error` may have lost messages: any end but a client bug or refusal of a request. */
function isLoss(error: DuplexError): boolean {
  return error instanceof SessionEndedError || error.code === 'connection-lost' || error.code === 'session-shared' || error.code === 'sequence-gap';
}

/** EventTarget tells listeners apart by the listener and its capture flag. */
function isCapture(options: boolean | EventListenerOptions | undefined): boolean {
  return typeof options === 'boolean' ? options : options?.capture === true;
}
