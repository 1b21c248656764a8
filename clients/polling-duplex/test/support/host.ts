import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** The client package's folder. */
export const packageRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const repositoryRoot = resolve(packageRoot, '..', '..');
const configuration = process.env['BROWSER_TESTS_CONFIGURATION'] ?? 'Release';

/** A built .NET app's entry assembly, or a clear error naming the command that builds it. */
export function builtApp(project: string): string {
  const name = project.split('/').at(-1)!;
  const dll = join(repositoryRoot, project, 'bin', configuration, 'net10.0', `${name}.dll`);
  if (!existsSync(dll)) {
    throw new Error(`${dll} is missing; build it first: dotnet build ${project} -c ${configuration} (npm test does).`);
  }

  return dll;
}

export interface HostOptions {
  readonly httpPort?: number;
  readonly https?: boolean;
  readonly pollTimeoutMs?: number;
  readonly pendingMessages?: number;
  readonly overflowPolicy?: 'FaultSession' | 'GapMarker';
  /** How many frames one flood response may carry (the flood endpoint's MaxPendingMessagesPerSession). */
  readonly floodWindow?: number;
  /** The endpoints' AwayGracePeriod, in milliseconds (10,000 by default, as the library's). */
  readonly awayGraceMs?: number;
}

/** The browser test server (tests/ChannelPool.PollingDuplex.BrowserHost): real Kestrel on 127.0.0.1, started by the test. */
export class Host {
  private constructor(
    private readonly process: ChildProcess,
    /** `http://127.0.0.1:port/`: HTTP/1.1 with no TLS; a loopback origin is a secure context. */
    readonly http: string,
    /** `https://127.0.0.1:port/`: HTTP/1.1 and HTTP/2, with a certificate made in memory for this run. */
    readonly https: string | undefined,
    /** The base64 SHA-256 of that certificate's public key, for Chromium's --ignore-certificate-errors-spki-list. */
    readonly spki: string | undefined,
    readonly port: number,
  ) {}

  static async start(options: HostOptions = {}): Promise<Host> {
    const args = [
      builtApp('tests/ChannelPool.PollingDuplex.BrowserHost'),
      'serve',
      `--HttpPort=${options.httpPort ?? 0}`,
      `--Https=${options.https ?? false}`,
      `--PollTimeoutMs=${options.pollTimeoutMs ?? 5000}`,
      `--PendingMessages=${options.pendingMessages ?? 64}`,
      `--OverflowPolicy=${options.overflowPolicy ?? 'FaultSession'}`,
      `--FloodWindow=${options.floodWindow ?? 256}`,
      `--AwayGraceMs=${options.awayGraceMs ?? 10_000}`,
      `--Pages=${join(packageRoot, 'test', 'pages')}`,
    ];
    const child = spawn('dotnet', args, { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, DOTNET_NOLOGO: '1' } });
    const line = await firstLine(child, 60_000);
    const started = JSON.parse(line) as { http: string; https: string | null; spki: string | null };
    return new Host(child, started.http, started.https ?? undefined, started.spki ?? undefined, Number(new URL(started.http).port));
  }

  /** Stops the server as a deployment would (SIGTERM): sessions end with `ServerShutdown`, held polls are answered. */
  async stop(): Promise<void> {
    await this.signal('SIGTERM');
  }

  /** Kills the server with no warning (SIGKILL), as a crash or a pulled plug does: connections are reset. */
  async kill(): Promise<void> {
    await this.signal('SIGKILL');
  }

  async control(path: string, init?: RequestInit): Promise<Response> {
    const response = await fetch(new URL(`control/${path}`, this.http), init);
    if (!response.ok) {
      throw new Error(`control/${path}: ${response.status} ${await response.text()}`);
    }

    return response;
  }

  /**
   * Publishes `{"n":from}` … to `topic` from the server side, one every `intervalMs`: settles once they are under way,
   * or with `untilDone` once the server has published the last one.
   */
  async publish(topic: string, count: number, intervalMs = 0, from = 1, untilDone = false): Promise<void> {
    await this.control(`publish?topic=${encodeURIComponent(topic)}&count=${count}&intervalMs=${intervalMs}&from=${from}&wait=${untilDone}`, { method: 'POST' });
  }

  /** How many sessions `endpoint` holds now, pending and active (from its sessions gauge). */
  async sessions(endpoint = '/pubsub'): Promise<number> {
    return ((await (await this.control(`sessions?endpoint=${encodeURIComponent(endpoint)}`)).json()) as { count: number }).count;
  }

  async subscribers(topic: string): Promise<number> {
    return ((await (await this.control(`subscribers?topic=${encodeURIComponent(topic)}`)).json()) as { count: number }).count;
  }

  private async signal(signal: NodeJS.Signals): Promise<void> {
    if (this.process.exitCode !== null || this.process.signalCode !== null) {
      return;
    }

    const exited = new Promise(resolve => this.process.once('exit', resolve));
    this.process.kill(signal);
    await exited;
  }
}

/** A TCP port free on 127.0.0.1 now, for a server that must come back on the same address after a restart. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Starts a built .NET app, and waits for the line of its output that `ready` matches. */
export async function startApp(project: string, args: readonly string[], ready: RegExp): Promise<{ process: ChildProcess; match: RegExpMatchArray; stop: () => Promise<void> }> {
  const child = spawn('dotnet', [builtApp(project), ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, DOTNET_NOLOGO: '1' } });
  const lines = createInterface({ input: child.stdout! });
  const match = await new Promise<RegExpMatchArray>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${project} did not print ${ready} within 60 s.`));
    }, 60_000);
    lines.on('line', line => {
      const found = line.match(ready);
      if (found) {
        clearTimeout(timer);
        resolve(found);
      }
    });
    child.once('exit', code => {
      clearTimeout(timer);
      reject(new Error(`${project} exited with ${code} before it was ready.`));
    });
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise(resolve => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
  };
  return { process: child, match, stop };
}

function firstLine(child: ChildProcess, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`The server did not start within ${timeoutMs} ms.`));
    }, timeoutMs);
    lines.once('line', line => {
      clearTimeout(timer);
      // Keep draining its output, so it never blocks on a full pipe.
      child.stdout!.resume();
      resolve(line);
    });
    child.once('exit', code => {
      clearTimeout(timer);
      reject(new Error(`The server exited with ${code} before it started.`));
    });
  });
}
