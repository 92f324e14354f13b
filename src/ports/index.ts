export type { Clock, ManualClock } from './clock.js';
export { systemClock } from './clock.js';
export type { Dns, DnsFailureCode, DnsHealth, MxAnswer, MxHost } from './dns.js';
export type { IpFilter } from './ip-filter.js';
export type { LogFields, Logger, LogLevel } from './logger.js';
export { LOG_LEVELS, silentLogger } from './logger.js';
export type * from './observer.js';
export type {
  ProbeAnswer,
  ProbeClass,
  ProbeRecipient,
  ProbeReport,
  ProbeRequest,
  SmtpProber,
} from './smtp.js';
export type * from './store.js';
export type { WebhookRequest, WebhookResponse, WebhookSender } from './webhook.js';
