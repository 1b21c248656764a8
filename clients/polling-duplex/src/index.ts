export { PollingDuplexClient, type PollingDuplexClientOptions, type ResumeOptions, type ResumeSettings } from './client.js';
export {
  DuplexSession,
  DuplexMessageEvent,
  DuplexGapEvent,
  DuplexLossEvent,
  DuplexErrorEvent,
  DuplexReconnectingEvent,
  DuplexEndEvent,
  type DuplexItem,
  type DuplexSessionEventMap,
  type DuplexSessionState,
  type PayloadOf,
  type SendableOf,
} from './session.js';
export { PubSubClient, PubSubMessageEvent, PubSubReopenedEvent, MAX_TOPIC_LENGTH, type PubSubClientOptions, type PubSubClientEventMap, type PubSubMessage } from './pubsub.js';
export { DuplexError, SessionEndedError, MessageRejectedError, ProtocolError, isRetryable, type DuplexErrorCode, type ServerErrorCode, type ClientErrorCode, type DuplexErrorDetails } from './errors.js';
export type { RetryOptions } from './retry.js';
export type { HeadersCallback } from './transport.js';
export { PROTOCOL_VERSION, SESSION_TOKEN_HEADER, type DuplexEncoding, type DuplexMode, type OverflowPolicy, type SessionLimits } from './wire.js';
