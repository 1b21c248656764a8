// What the test pages (test/pages) put on window, for page.evaluate callbacks.
import type * as Duplex from '../../src/index.js';

declare global {
  interface Window {
    /** The browser client, imported by the page from the server (MapPollingDuplexBrowserClient). */
    duplex: typeof Duplex;
    /** Bound by the test (page.exposeFunction): the page reports what it received. */
    record: (entry: unknown) => Promise<void>;
    /** The page's own client in auto mode (test/pages/harness.js). */
    pubsub?: Duplex.PubSubClient<Duplex.DuplexEncoding>;
  }
}

export {};
