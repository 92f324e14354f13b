export { parseAddress } from './address/parse.js';
export {
  MAX_ADDRESS_OCTETS,
  MAX_DOMAIN_OCTETS,
  MAX_INPUT_LENGTH,
  MAX_LABEL_OCTETS,
  MAX_LOCAL_OCTETS,
} from './address/limits.js';
export type { ParseAddressOptions, ParsedAddress, ParseResult } from './address/parse.js';
export { PARSE_ERROR_CODES } from './address/errors.js';
export type { ParseErrorCode, ParseFailure, PartFailure } from './address/errors.js';
export { DEFAULT_PROFILE, RFC_PROFILE, PROFILES } from './address/options.js';
export type { ParseOptions, ProfileName } from './address/options.js';
export * from './checks/index.js';
export { createEngine } from './compose/engine.js';
export type { EngineOptions } from './compose/engine.js';
export type { Engine, VerifyOptions } from './engine/engine.js';
export { buildMethods, defaultCheckers, METHOD_NAMES } from './engine/methods.js';
export type { CheckerSet, Method, MethodName } from './engine/methods.js';
export { DELIVERABLE_CEILING, FACTOR_WEIGHTS, RISKY_BASE, SCORE_BANDS } from './engine/score.js';
export type { Evidence, State } from './engine/score.js';
export { UNKNOWN_REASONS } from './engine/verdict.js';
export type { Reason, Verdict } from './engine/verdict.js';
export { TEST_ADDRESSES } from './engine/test-addresses.js';
export { providerOf } from './engine/provider.js';
export * from './format/shapes.js';
export type * from './ports/index.js';
export { systemClock } from './ports/index.js';
export { createNodeDns, DNS_DEADLINE_MS } from './adapters/node/dns.js';
export type { VerifyManyOptions, VerifyManyResult } from './engine/verify-many.js';
export type { NodeDnsOptions } from './adapters/node/dns.js';
// Types only: the prober itself is in mailverdict/smtp, loaded on the first probe.
export type { NodeSmtpOptions } from './adapters/node/smtp.js';
export type { ReplyClass } from './ports/smtp.js';
export { createCachedDns } from './dns/cached-dns.js';
export type { CachedDnsOptions } from './dns/cached-dns.js';
export { offlineDns } from './dns/offline-dns.js';
