/** How failed requests are repeated. */
export interface RetryOptions {
  /** The delay before the first retry, in milliseconds; each retry doubles it, with jitter. Defaults to 250. */
  readonly baseDelayMs?: number;
  /** The longest delay between retries, in milliseconds. Defaults to 10,000. */
  readonly maxDelayMs?: number;
  /** How many times an open or resume is tried before it fails (a retried open repeats its openId: no session is left behind). Defaults to 5. */
  readonly maxOpenAttempts?: number;
}

export interface Backoff {
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly maxOpenAttempts: number;
}

export function backoffFrom(options: RetryOptions | undefined): Backoff {
  const backoff = {
    baseDelayMs: options?.baseDelayMs ?? 250,
    maxDelayMs: options?.maxDelayMs ?? 10_000,
    maxOpenAttempts: options?.maxOpenAttempts ?? 5,
  };
  if (!(backoff.baseDelayMs >= 0) || !(backoff.maxDelayMs >= backoff.baseDelayMs)) {
    throw new RangeError(`retry.baseDelayMs must be at least 0 and retry.maxDelayMs at least baseDelayMs; they are ${backoff.baseDelayMs} and ${backoff.maxDelayMs}.`);
  }

  if (!Number.isInteger(backoff.maxOpenAttempts) || backoff.maxOpenAttempts < 1) {
    throw new RangeError(`retry.maxOpenAttempts must be a whole number from 1; it is ${backoff.maxOpenAttempts}.`);
  }

  return backoff;
}

/**
 * The wait before retry number `attempt` (0 for the first): exponential, with half of it random so that clients a
 * server restart disconnected together do not come back together; never shorter than the server's `Retry-After`.
 */
export function retryDelay(backoff: Backoff, attempt: number, retryAfterMs?: number): number {
  const ceiling = Math.min(backoff.maxDelayMs, backoff.baseDelayMs * 2 ** Math.min(attempt, 30));
  const delay = ceiling / 2 + Math.random() * (ceiling / 2);
  return Math.max(delay, retryAfterMs ?? 0);
}

/** Waits `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }

    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * A signal that aborts when any of `signals` does, or after `timeoutMs` with a `TimeoutError`. `dispose` stops the
 * timer and unhooks the listeners, so long-lived signals do not collect them.
 */
export function linkSignals(signals: readonly (AbortSignal | undefined)[], timeoutMs?: number, timeoutMessage?: string): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const hooks: (() => void)[] = [];
  for (const signal of signals) {
    if (signal === undefined) {
      continue;
    }

    if (signal.aborted) {
      controller.abort(signal.reason);
      break;
    }

    const onAbort = () => controller.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    hooks.push(() => signal.removeEventListener('abort', onAbort));
  }

  let timer: ReturnType<typeof setTimeout> | undefined;
  if (timeoutMs !== undefined && !controller.signal.aborted) {
    timer = setTimeout(() => controller.abort(new DOMException(timeoutMessage ?? `No answer within ${timeoutMs} ms.`, 'TimeoutError')), timeoutMs);
  }

  return {
    signal: controller.signal,
    dispose: () => {
      clearTimeout(timer);
      hooks.forEach(unhook => unhook());
    },
  };
}
