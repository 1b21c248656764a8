import { createServer, request as forward, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** What the proxy does with one request. */
export type Fault =
  | { readonly kind: 'pass' }
  /** The connection fails before the request reaches the server. */
  | { readonly kind: 'drop-request' }
  /** The server acts on the request; its response is lost (the connection is reset instead). */
  | { readonly kind: 'lose-response' }
  /** The server acts on the request; the first `bytes` bytes of its response's head (status line, headers) get through, then the connection is reset. */
  | { readonly kind: 'cut-headers'; readonly bytes: number }
  /** The whole response gets through; then the connection is reset, so the next request on it fails before any answer. */
  | { readonly kind: 'reset-after' }
  /** The response's status, headers and first `bytes` bytes of body get through; then the connection is reset. */
  | { readonly kind: 'cut-body'; readonly bytes: number }
  /** The proxy answers itself, as a balancer does (its own 502, or 503 with Retry-After), without asking the server. */
  | { readonly kind: 'answer'; readonly status: number; readonly headers?: Record<string, string>; readonly body?: string }
  /** The server acts on the request; the response is held until `release()`, then lost. */
  | { readonly kind: 'hold-response' }
  /** The request never reaches the server, and no answer comes until `release()`, which resets the connection. */
  | { readonly kind: 'stall' };

export interface ProxiedRequest {
  readonly method: string;
  readonly path: string;
  /** 1 for the first request with this method and path suffix (`sessions`, `messages`, `poll`, `session`), then 2, … */
  readonly nth: number;
}

const hopByHop = new Set(['connection', 'keep-alive', 'transfer-encoding', 'proxy-connection', 'upgrade']);

/**
 * A reverse proxy for HTTP/1.1 on 127.0.0.1 that sits between the browser and the test server and breaks things on
 * purpose, request by request, as `rule` decides. The page is loaded through it, so it is the page's origin.
 */
export class FaultProxy {
  readonly counts = new Map<string, number>();
  readonly applied: { request: ProxiedRequest; fault: Fault['kind'] }[] = [];
  /** How many responses a `cut-body` fault really cut (a response shorter than its cut point gets through whole). */
  bodiesCut = 0;
  rule: (request: ProxiedRequest) => Fault = () => ({ kind: 'pass' });
  private readonly held: (() => void)[] = [];
  private readonly sockets = new Set<Socket>();

  private constructor(private readonly server: Server, private readonly upstream: URL, readonly url: string) {}

  static async start(upstream: string): Promise<FaultProxy> {
    let proxy: FaultProxy | undefined;
    const server = createServer((req, res) => proxy!.handle(req, res));
    await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    proxy = new FaultProxy(server, new URL(upstream), `http://127.0.0.1:${port}/`);
    server.on('connection', socket => {
      proxy!.sockets.add(socket);
      socket.once('close', () => proxy!.sockets.delete(socket));
    });
    return proxy;
  }

  /** Lets every held response go (and be lost). */
  release(): void {
    this.held.splice(0).forEach(go => go());
  }

  async close(): Promise<void> {
    this.release();
    this.sockets.forEach(socket => socket.destroy());
    await new Promise(resolve => this.server.close(resolve));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const path = req.url ?? '/';
    const kind = /\/sessions\/[^/]+\/poll/.test(path) ? 'poll' : /\/messages$/.test(path) ? 'messages' : /\/sessions$/.test(path) ? 'sessions' : /\/sessions\/[^/]+$/.test(path) ? 'session' : 'other';
    const key = `${req.method} ${kind}`;
    const nth = (this.counts.get(key) ?? 0) + 1;
    this.counts.set(key, nth);
    const request = { method: req.method ?? 'GET', path, nth };
    const fault = kind === 'other' ? { kind: 'pass' as const } : this.rule(request);
    if (fault.kind !== 'pass') {
      this.applied.push({ request, fault: fault.kind });
    }

    if (fault.kind === 'drop-request') {
      req.socket.destroy();
      return;
    }

    if (fault.kind === 'stall') {
      req.resume();
      this.held.push(() => req.socket.destroy());
      return;
    }

    if (fault.kind === 'answer') {
      res.writeHead(fault.status, fault.headers ?? {});
      res.end(fault.body ?? '');
      return;
    }

    const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => !hopByHop.has(name)));
    const upstream = forward({ host: this.upstream.hostname, port: this.upstream.port, method: req.method, path, headers }, reply => {
      if (fault.kind === 'lose-response' || fault.kind === 'hold-response') {
        reply.resume();
        reply.once('end', () => {
          if (fault.kind === 'hold-response') {
            this.held.push(() => req.socket.destroy());
          } else {
            req.socket.destroy();
          }
        });
        return;
      }

      if (fault.kind === 'cut-headers') {
        reply.resume();
        reply.once('end', () => {
          const head = `HTTP/1.1 ${reply.statusCode ?? 502} ${reply.statusMessage ?? ''}\r\n${Object.entries(reply.headers).filter(([name]) => !hopByHop.has(name)).map(([name, value]) => `${name}: ${String(value)}`).join('\r\n')}\r\n\r\n`;
          req.socket.write(head.slice(0, fault.bytes), () => req.socket.destroy());
        });
        return;
      }

      if (fault.kind === 'reset-after') {
        res.once('finish', () => setTimeout(() => req.socket.destroy(), 20));
      }

      res.writeHead(reply.statusCode ?? 502, Object.fromEntries(Object.entries(reply.headers).filter(([name]) => !hopByHop.has(name))));
      if (fault.kind === 'cut-body') {
        let left = fault.bytes;
        reply.on('data', (chunk: Buffer) => {
          if (left <= 0) {
            return;
          }

          const part = chunk.subarray(0, left);
          left -= part.byteLength;
          res.write(part);
          if (left <= 0) {
            // Reset mid-body: what the browser sees when a connection dies part-way through a response.
            this.bodiesCut++;
            setImmediate(() => req.socket.destroy());
            reply.destroy();
          }
        });
        reply.once('end', () => res.end());
        return;
      }

      reply.pipe(res);
    });
    upstream.on('error', () => req.socket.destroy());
    req.pipe(upstream);
  }
}
