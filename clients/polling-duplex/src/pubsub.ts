import { PollingDuplexClient, resumeSettings, type PollingDuplexClientOptions, type ResumeSettings } from './client.js';
import { DuplexError, duplexError, SessionEndedError } from './errors.js';
import { backoffFrom, retryDelay, sleep, type Backoff } from './retry.js';
import { DuplexEndEvent, DuplexErrorEvent, DuplexGapEvent, DuplexLossEvent, DuplexReconnectingEvent, type DuplexEndEvent as EndEvent, type DuplexSession } from './session.js';
import type { DuplexEncoding } from './wire.js';

/** The longest topic name the pub/sub service takes, in UTF-16 code units. */
export const MAX_TOPIC_LENGTH = 256;

/** A notification: what a publisher published to a topic this client subscribes to. */
export interface PubSubMessage {
  readonly topic: string;
  readonly data: unknown;
  /** The frame's sequence number in the current session. */
  readonly seq: number;
}

/** `message`: a notification, exactly once and in order. */
export class PubSubMessageEvent extends Event implements PubSubMessage {
  constructor(readonly topic: string, readonly data: unknown, readonly seq: number) {
    super('message');
  }
}

/**
 * `reopened`: the session was lost (`error` says how: expired, faulted, forgotten in a server restart, or unreachable
 * for longer than it lives), and a new one now runs with every subscription made again. Notifications published in
 * between were not received.
 */
export class PubSubReopenedEvent extends Event {
  constructor(readonly previousSessionId: string, readonly sessionId: string, readonly error: DuplexError) {
    super('reopened');
  }
}

export interface PubSubClientEventMap {
  message: PubSubMessageEvent;
  gap: DuplexGapEvent;
  loss: DuplexLossEvent;
  reopened: PubSubReopenedEvent;
  reconnecting: DuplexReconnectingEvent;
  reconnected: Event;
  error: DuplexErrorEvent;
  end: EndEvent;
}

export interface PubSubClientOptions<E extends DuplexEncoding = 'text'> extends PollingDuplexClientOptions<E> {
  /** Open a new session and subscribe again when the session is lost. Defaults to true. */
  readonly reopen?: boolean;
}

export interface PubSubClient<E extends DuplexEncoding> {
  addEventListener<K extends keyof PubSubClientEventMap>(type: K, listener: (this: PubSubClient<E>, event: PubSubClientEventMap[K]) => unknown, options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | AddEventListenerOptions): void;
  removeEventListener<K extends keyof PubSubClientEventMap>(type: K, listener: (this: PubSubClient<E>, event: PubSubClientEventMap[K]) => unknown, options?: boolean | EventListenerOptions): void;
  removeEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | EventListenerOptions): void;
}

type Command = { op: 'subscribe' | 'unsubscribe'; topic: string } | { op: 'publish'; topic: string; data: unknown; echo: boolean };

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * A client of the pub/sub service (`MapPollingDuplexPubSub`): subscribe, unsubscribe and publish on one session,
 * with notifications as `message` events or through `messages()`. Its subscriptions are kept with the session, so a
 * page reload resumes them, and a lost session is replaced by a new one that subscribes again (`reopened`).
 */
export class PubSubClient<E extends DuplexEncoding = 'text'> extends EventTarget {
  readonly client: PollingDuplexClient<E>;
  readonly #topics: Set<string>;
  readonly #topicsKey: ResumeSettings | undefined;
  readonly #reopen: boolean;
  readonly #backoff: Backoff;
  readonly #closing = new AbortController();
  #session: DuplexSession<E>;
  #state: 'open' | 'reopening' | 'closed' | 'failed' = 'open';
  #ready: Promise<void> = Promise.resolve();
  #readyResolve: (() => void) | undefined;
  #iterators = new Set<(message: PubSubMessage | undefined, error?: DuplexError) => void>();

  private constructor(client: PollingDuplexClient<E>, session: DuplexSession<E>, topics: Set<string>, topicsKey: ResumeSettings | undefined, options: PubSubClientOptions<E>) {
    super();
    this.client = client;
    this.#session = session;
    this.#topics = topics;
    this.#topicsKey = topicsKey;
    this.#reopen = options.reopen ?? true;
    this.#backoff = backoffFrom(options.retry);
    this.#watch(session);
  }

  /**
   * Opens (or, after a reload, resumes) a session on the pub/sub endpoint. A new session subscribes again to the
   * topics this tab had, if any.
   */
  static async connect<E extends DuplexEncoding = 'text'>(endpoint: string | URL, options: PubSubClientOptions<E> = {}, call: { signal?: AbortSignal } = {}): Promise<PubSubClient<E>> {
    const client = new PollingDuplexClient<E>(endpoint, options);
    const topicsKey = resumeSettings(options.resume, client.endpoint);
    const topics = new Set(loadTopics(topicsKey));
    const session = await client.open(call);
    const pubsub = new PubSubClient(client, session, topics, topicsKey, options);
    if (!session.resumed && topics.size > 0) {
      await pubsub.#subscribeAll(session);
    }

    if (session.replaced !== undefined && session.resumeFailure !== undefined) {
      // This tab's saved session could not be resumed: said after connect() returns, so the page's listener hears it.
      const { sessionId, afterSeq } = session.replaced;
      const error = session.resumeFailure;
      setTimeout(() => pubsub.dispatchEvent(new DuplexLossEvent(error.code, sessionId, afterSeq, undefined, error)), 0);
    }

    return pubsub;
  }

  /** The session that carries the subscriptions now; a new one after `reopened`. */
  get session(): DuplexSession<E> {
    return this.#session;
  }

  /** The topics subscribed to. */
  get topics(): ReadonlySet<string> {
    return this.#topics;
  }

  get state(): 'open' | 'reopening' | 'closed' | 'failed' {
    return this.#state;
  }

  /**
   * Subscribes to `topic`; resolves when the service has taken the subscription. Subscribing twice changes nothing.
   * Rejects with a `MessageRejectedError` coded `topic-forbidden` when the server's topic rule does not allow it; the
   * session goes on.
   */
  async subscribe(topic: string, options: { signal?: AbortSignal } = {}): Promise<void> {
    checkTopic(topic);
    this.#topics.add(topic);
    this.#saveTopics();
    try {
      await this.#command({ op: 'subscribe', topic }, options.signal);
    } catch (error) {
      this.#topics.delete(topic);
      this.#saveTopics();
      throw error;
    }
  }

  /** Unsubscribes from `topic`. Notifications already on their way may still arrive. */
  async unsubscribe(topic: string, options: { signal?: AbortSignal } = {}): Promise<void> {
    checkTopic(topic);
    this.#topics.delete(topic);
    this.#saveTopics();
    await this.#command({ op: 'unsubscribe', topic }, options.signal);
  }

  /**
   * Publishes `data` (any JSON value) to `topic`; resolves when the service has queued it to every subscriber. With
   * `echo`, this client receives its own publish too if it subscribes to the topic. Rejects with a
   * `MessageRejectedError` coded `topic-forbidden` when the server's topic rule does not allow it.
   */
  async publish(topic: string, data: unknown, options: { echo?: boolean; signal?: AbortSignal } = {}): Promise<void> {
    checkTopic(topic);
    if (data === undefined) {
      throw new TypeError('publish needs data: a JSON value (null is one; undefined is not).');
    }

    await this.#command({ op: 'publish', topic, data, echo: options.echo ?? false }, options.signal);
  }

  /** Reads notifications as they arrive, across reopened sessions; finishes when the client closes, throws when it fails. */
  async *messages(options: { signal?: AbortSignal } = {}): AsyncGenerator<PubSubMessage, void, undefined> {
    const queue: PubSubMessage[] = [];
    let wake: (() => void) | undefined;
    let failure: DuplexError | undefined;
    let done = this.#state === 'closed' || this.#state === 'failed';
    const push = (message: PubSubMessage | undefined, error?: DuplexError) => {
      if (message === undefined) {
        done = true;
        failure = error;
      } else {
        queue.push(message);
      }

      wake?.();
    };
    this.#iterators.add(push);
    const onAbort = () => wake?.();
    options.signal?.addEventListener('abort', onAbort);
    try {
      for (;;) {
        options.signal?.throwIfAborted();
        const next = queue.shift();
        if (next !== undefined) {
          yield next;
          continue;
        }

        if (done) {
          if (failure !== undefined) {
            throw failure;
          }

          return;
        }

        await new Promise<void>(resolve => { wake = resolve; });
        wake = undefined;
      }
    } finally {
      this.#iterators.delete(push);
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Closes the session and forgets the subscriptions. */
  async close(options: { signal?: AbortSignal } = {}): Promise<void> {
    if (this.#state === 'closed') {
      return;
    }

    const wasFailed = this.#state === 'failed';
    this.#state = 'closed';
    this.#closing.abort(duplexError('closed', 'The pub/sub client was closed.'));
    this.#readyResolve?.();
    this.#topics.clear();
    this.#saveTopics();
    await this.#session.close(options);
    if (!wasFailed) {
      this.#iterators.forEach(push => push(undefined));
      this.dispatchEvent(new DuplexEndEvent(undefined));
    }
  }

  async #command(command: Command, signal: AbortSignal | undefined): Promise<void> {
    await this.#ready;
    if (this.#state === 'closed' || this.#state === 'failed') {
      throw this.#session.error ?? duplexError('closed', 'The pub/sub client is closed.');
    }

    const session = this.#session;
    const json = JSON.stringify(command);
    await session.send((session.encoding === 'binary' ? encoder.encode(json) : command) as never, signal === undefined ? {} : { signal });
  }

  async #subscribeAll(session: DuplexSession<E>): Promise<void> {
    await Promise.all([...this.#topics].map(async topic => {
      try {
        await session.send((session.encoding === 'binary' ? encoder.encode(JSON.stringify({ op: 'subscribe', topic })) : { op: 'subscribe', topic }) as never);
      } catch (error) {
        // The topic rule no longer allows a topic this tab had (another user signed in, the rule changed): drop that
        // one and say so, rather than fail the new session and open another, forever.
        if (!(error instanceof DuplexError && error.code === 'topic-forbidden')) {
          throw error;
        }

        this.#topics.delete(topic);
        this.#saveTopics();
        this.dispatchEvent(new DuplexErrorEvent(error));
      }
    }));
  }

  #watch(session: DuplexSession<E>): void {
    session.addEventListener('message', event => {
      const notification = readNotification(event.data);
      if (notification === undefined) {
        this.dispatchEvent(new DuplexErrorEvent(duplexError('bad-response', `Session ${session.id} received a message that is not a pub/sub notification ({"topic":…,"data":…}).`)));
        return;
      }

      const message = new PubSubMessageEvent(notification.topic, notification.data, event.seq);
      this.dispatchEvent(message);
      this.#iterators.forEach(push => push(message));
    });
    session.addEventListener('gap', event => this.dispatchEvent(new DuplexGapEvent(event.seq, event.missed)));
    session.addEventListener('loss', event => {
      // A replaced saved session's loss is the client's to say, once connect() has returned (see connect).
      if (event.sessionId === session.id) {
        this.dispatchEvent(new DuplexLossEvent(event.reason, event.sessionId, event.afterSeq, event.missed, event.error));
      }
    });
    session.addEventListener('reconnecting', event => this.dispatchEvent(new DuplexReconnectingEvent(event.error, event.attempt, event.delayMs)));
    session.addEventListener('reconnected', () => this.dispatchEvent(new Event('reconnected')));
    session.addEventListener('end', event => void this.#ended(session, event.error));
  }

  async #ended(session: DuplexSession<E>, error: DuplexError | undefined): Promise<void> {
    if (session !== this.#session || this.#state !== 'open' || error === undefined) {
      return;
    }

    if (!this.#reopen || !(error instanceof SessionEndedError)) {
      this.#state = 'failed';
      this.dispatchEvent(new DuplexErrorEvent(error));
      this.#iterators.forEach(push => push(undefined, error));
      this.dispatchEvent(new DuplexEndEvent(error));
      return;
    }

    this.#state = 'reopening';
    this.#ready = new Promise(resolve => { this.#readyResolve = resolve; });
    for (let attempt = 0; this.#state === 'reopening'; attempt++) {
      try {
        const next = await this.client.open({ signal: this.#closing.signal, resume: false });
        if (this.#state !== 'reopening') {
          await next.close();
          return;
        }

        this.#session = next;
        this.#watch(next);
        await this.#subscribeAll(next);
        this.#state = 'open';
        this.#readyResolve?.();
        this.dispatchEvent(new PubSubReopenedEvent(session.id, next.id, error));
        return;
      } catch (failure) {
        if (this.#closing.signal.aborted) {
          return;
        }

        this.dispatchEvent(new DuplexReconnectingEvent(failure, attempt + 1, 0));
        try {
          await sleep(retryDelay(this.#backoff, attempt), this.#closing.signal);
        } catch {
          return;
        }
      }
    }
  }

  #saveTopics(): void {
    if (this.#topicsKey !== undefined) {
      try {
        this.#topicsKey.storage.setItem(`${this.#topicsKey.key}:topics`, JSON.stringify([...this.#topics]));
      } catch {
        // Over quota: a reload whose session is gone will not subscribe again on its own.
      }
    }
  }
}

function loadTopics(key: ResumeSettings | undefined): string[] {
  try {
    const saved: unknown = key === undefined ? undefined : JSON.parse(key.storage.getItem(`${key.key}:topics`) ?? '[]');
    return Array.isArray(saved) ? saved.filter((t): t is string => typeof t === 'string') : [];
  } catch {
    return [];
  }
}

// The server's rule for topic names: 1 to MAX_TOPIC_LENGTH UTF-16 code units, no control characters, no lone surrogate.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function checkTopic(topic: string): void {
  if (typeof topic !== 'string' || topic.length < 1 || topic.length > MAX_TOPIC_LENGTH) {
    throw new RangeError(`A topic is a string of 1 to ${MAX_TOPIC_LENGTH} characters; got ${typeof topic === 'string' ? `${topic.length} characters` : typeof topic}.`);
  }

  const control = CONTROL.exec(topic);
  if (control !== null) {
    throw new RangeError(`A topic must not hold control characters; it holds U+${control[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')} at position ${control.index}.`);
  }

  const surrogate = LONE_SURROGATE.exec(topic);
  if (surrogate !== null) {
    throw new RangeError(`A topic must be valid Unicode text; it holds an unpaired surrogate at position ${surrogate.index}.`);
  }
}

/** A notification is `{"topic":…,"data":…}`: the JSON value itself (text), or its UTF-8 bytes (binary). */
function readNotification(data: unknown): { topic: string; data: unknown } | undefined {
  let value = data;
  if (data instanceof ArrayBuffer) {
    try {
      value = JSON.parse(decoder.decode(data));
    } catch {
      return undefined;
    }
  }

  const notification = value as { topic?: unknown; data?: unknown } | null;
  return typeof notification === 'object' && notification !== null && typeof notification.topic === 'string' && 'data' in notification
    ? { topic: notification.topic, data: notification.data }
    : undefined;
}
