import { putSessionToken } from './wire.js';

/** The application's own headers for every request, asked for each time so that a token can be refreshed. */
export type HeadersCallback = () => HeadersInit | undefined | Promise<HeadersInit | undefined>;

export interface TransportOptions {
  readonly headers?: HeadersCallback | undefined;
  readonly credentials: RequestCredentials;
  readonly fetch: typeof fetch;
}

export interface DuplexRequest {
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly token?: string | undefined;
  readonly body?: Uint8Array | string | undefined;
  readonly contentType?: string | undefined;
  readonly signal: AbortSignal;
  /** Whether the request outlives the page (the away request on `pagehide`). */
  readonly keepalive?: boolean;
}

/** Sends the protocol's requests to one endpoint, with the page's cookies and the application's headers. */
export class Transport {
  /** The endpoint's address, ending with `/`; every path of the protocol is relative to it. */
  readonly base: string;
  readonly #options: TransportOptions;

  constructor(endpoint: string | URL, options: TransportOptions) {
    const url = new URL(endpoint, globalThis.location?.href);
    url.hash = '';
    url.search = '';
    if (!url.pathname.endsWith('/')) {
      url.pathname += '/';
    }

    this.base = url.href;
    this.#options = options;
  }

  /** A session's address. Built from the endpoint, not taken from `Location`, so a proxy that rewrites paths cannot misdirect it. */
  sessionUrl(id: string, suffix = ''): string {
    return `${this.base}sessions/${encodeURIComponent(id)}${suffix}`;
  }

  async request(url: string, request: DuplexRequest): Promise<Response> {
    const headers = new Headers((await this.#options.headers?.()) ?? undefined);
    if (request.token !== undefined) {
      putSessionToken(headers, request.token);
    }

    if (request.contentType !== undefined) {
      headers.set('Content-Type', request.contentType);
    }

    // No cache: 'no-store' here: the server marks its answers no-store already, and in Chromium that mode also skips
    // the CORS preflight cache, so every cross-origin request would pay a preflight.
    return this.#options.fetch(url, {
      method: request.method,
      headers,
      body: (request.body ?? null) as BodyInit | null,
      credentials: this.#options.credentials,
      signal: request.signal,
      ...(request.keepalive === true ? { keepalive: true } : {}),
    });
  }
}
