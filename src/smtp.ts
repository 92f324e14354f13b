/**
 * mailverdict/smtp: the SMTP probe client on its own entry, so that engines that never probe never
 * load it (docs/architecture.md, "Entry points"): the node:net/node:tls prober, its limits and
 * SOCKS5 egress, and the pure parts it is made of (reply reader, classification table, session
 * state machine, command encoder). `createEngine` loads the prober by itself on the first smtp
 * verification.
 */
export {
  createNodeSmtp,
  BANNER_TIMEOUT_MS,
  COMMAND_TIMEOUT_MS,
  CONNECT_TIMEOUT_MS,
  MAX_CONNECTIONS,
  MAX_CONNECTIONS_PER_HOST,
  MAX_HOSTS_PER_PROBE,
  RECIPIENTS_PER_SESSION,
  RECIPIENTS_PER_TRANSACTION,
  QUIT_TIMEOUT_MS,
  SESSION_DEADLINE_MS,
  SMTP_PORT,
} from './adapters/node/smtp.js';
export type { NodeSmtpOptions } from './adapters/node/smtp.js';
export type { SharedHostSlots } from './ports/smtp.js';
export { MAX_CONNECTIONS_PER_PROXY } from './adapters/node/socks-connect.js';
export { parseProxyUrl } from './smtp/proxy-url.js';
export type { ProxySpec } from './smtp/proxy-url.js';
export { batchProbes, CATCH_ALL_TTL_MS } from './engine/probe-batcher.js';
export type { ProbeBatcherOptions } from './engine/probe-batcher.js';
export { classifyRcpt, classifySession } from './smtp/classify.js';
export type { ReplyClass } from './ports/smtp.js';
export { MAX_REPLY_BYTES, ReplyReader } from './smtp/reply.js';
export type { SmtpReply } from './smtp/reply.js';
export { ProbeSession } from './smtp/session.js';
export type { SessionAction, SessionPlan } from './smtp/session.js';
export { encodeCommand, UnsafeCommandError } from './smtp/commands.js';
export { isPublicAddress } from './smtp/target-policy.js';
