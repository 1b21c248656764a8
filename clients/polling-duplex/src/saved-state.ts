import type { DuplexEncoding, DuplexMode, SessionLimits } from './wire.js';

/**
 * What a client must keep to resume its session after its own restart (docs/polling-duplex-protocol.md, "Client
 * behaviour"): the session's id and token, the last sequence number handed to the application, the last of its own
 * messages the server confirmed, and a send whose answer has not come, with its numbers.
 */
export interface SavedSession {
  readonly v: 1;
  readonly endpoint: string;
  readonly id: string;
  readonly token: string;
  readonly encoding: DuplexEncoding;
  readonly mode: DuplexMode;
  readonly limits: SessionLimits;
  /** The highest server sequence number handed to the application: the next poll's `ack`. */
  readonly delivered: number;
  /** The highest client sequence number the server confirmed (`received`). */
  readonly sent: number;
  /** Messages numbered from `sent + 1` whose send was not answered yet: JSON texts, or base64 bytes. */
  readonly unconfirmed: readonly string[];
}

/** Where the client keeps a session between page loads: `sessionStorage` by default, under one key per endpoint. */
export interface SessionStore {
  load(): SavedSession | undefined;
  save(session: SavedSession): void;
  clear(): void;
}

const VERSION = 1;

/** A store in a Web Storage area (`sessionStorage`: per tab, kept across reloads, gone when the tab closes). */
export function webStorageStore(storage: Storage, key: string): SessionStore {
  return {
    load() {
      try {
        const text = storage.getItem(key);
        const saved = text === null ? undefined : (JSON.parse(text) as SavedSession);
        return saved?.v === VERSION ? saved : undefined;
      } catch {
        return undefined;
      }
    },
    save(session) {
      try {
        storage.setItem(key, JSON.stringify(session));
      } catch {
        // Over the storage quota (a large unconfirmed send): keep what resumes the stream; that send is not resent.
        try {
          storage.setItem(key, JSON.stringify({ ...session, unconfirmed: [] }));
        } catch {
          storage.removeItem(key);
        }
      }
    },
    clear() {
      storage.removeItem(key);
    },
  };
}

/** A store that keeps nothing: no resume. */
export const noStore: SessionStore = { load: () => undefined, save: () => undefined, clear: () => undefined };

export function toBase64(bytes: Uint8Array): string {
  let text = '';
  for (let i = 0; i < bytes.byteLength; i += 0x8000) {
    text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }

  return btoa(text);
}

export function fromBase64(text: string): Uint8Array {
  const raw = atob(text);
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) {
    bytes[i] = raw.charCodeAt(i);
  }

  return bytes;
}

/**
 * Holds the session's Web Lock for as long as the session lives, so that two tabs never run one session: a tab that
 * is duplicated, or opened by another with a copy of its `sessionStorage`, finds the lock taken and opens a session of
 * its own. On a reload the old page lets go as it unloads, so the new page waits up to `waitMs` for it. Returns the
 * release function, or undefined when another page holds the lock. Without Web Locks (an insecure origin, an old
 * browser) there is no guard.
 */
export async function holdSessionLock(id: string, waitMs: number): Promise<(() => void) | undefined> {
  const locks = (globalThis.navigator as Navigator | undefined)?.locks;
  if (locks === undefined) {
    return () => undefined;
  }

  let release!: () => void;
  const held = new Promise<void>(resolve => { release = resolve; });
  const wait = new AbortController();
  const timer = setTimeout(() => wait.abort(), waitMs);
  try {
    await new Promise<void>((acquired, refused) => {
      locks.request(`channelpool-duplex:${id}`, { signal: wait.signal }, () => {
        acquired();
        return held;
      }).catch(refused);
    });
    return release;
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}
