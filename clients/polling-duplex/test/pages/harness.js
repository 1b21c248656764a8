// The browser tests' page. It puts the client on window.duplex for page.evaluate, and with ?auto=pubsub it runs a
// pub/sub client of its own that survives reloads: it connects (resuming this tab's session when there is one),
// subscribes to ?topic= if the session has no subscriptions yet, and logs everything it receives.
//
// The log is the application's state: it is kept in sessionStorage, appended in the same task as the message is
// handed over, so it survives a reload exactly as the client's own position does. That is what exactly-once across a
// reload means for an application. Each entry also goes to window.record, which the test binds, to follow progress;
// a call made just as the page unloads may not reach the test, so the tests judge by the log.
import * as duplex from '/_channelpool/polling-duplex/index.js';

window.duplex = duplex;
const query = new URLSearchParams(location.search);
const log = JSON.parse(sessionStorage.getItem('harness:log') ?? '[]');
const record = entry => {
  log.push(entry);
  sessionStorage.setItem('harness:log', JSON.stringify(log));
  return typeof window.record === 'function' ? window.record(entry) : undefined;
};

if (query.get('auto') === 'pubsub') {
  const topic = query.get('topic') ?? 'test';
  const pubsub = await duplex.PubSubClient.connect('/pubsub', {
    encoding: query.get('encoding') ?? 'text',
    mode: query.get('mode') ?? 'multiple',
    resume: { lockWaitMs: Number(query.get('lockWaitMs') ?? 2000) },
    retry: { baseDelayMs: 100, maxDelayMs: 1000 },
    requestTimeoutMs: Number(query.get('requestTimeoutMs') ?? 30000),
    pollGraceMs: Number(query.get('pollGraceMs') ?? 10000),
  });
  window.pubsub = pubsub;
  const session = () => pubsub.session;
  pubsub.addEventListener('message', e => record({ kind: 'message', topic: e.topic, data: e.data, seq: e.seq, session: session().id }));
  pubsub.addEventListener('gap', e => record({ kind: 'gap', seq: e.seq, missed: e.missed }));
  pubsub.addEventListener('loss', e => record({ kind: 'loss', reason: e.reason, lostSession: e.sessionId, afterSeq: e.afterSeq, missed: e.missed }));
  pubsub.addEventListener('reopened', e => record({ kind: 'reopened', previous: e.previousSessionId, session: e.sessionId, code: e.error.code }));
  pubsub.addEventListener('reconnecting', e => record({ kind: 'reconnecting', error: String(e.error) }));
  pubsub.addEventListener('error', e => record({ kind: 'error', code: e.error.code, message: e.error.message }));
  if (pubsub.topics.size === 0) {
    await pubsub.subscribe(topic);
  }

  record({
    kind: 'ready',
    session: session().id,
    resumed: session().resumed,
    resumeFailure: session().resumeFailure?.code,
    resumeFailureDetail: session().resumeFailure?.message,
    topics: [...pubsub.topics],
  });
}
