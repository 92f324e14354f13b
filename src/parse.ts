/**
 * mailverdict/parse: the address parser alone, the same rules on the client and the server.
 * It imports no `node:*` module and does no I/O (its Unicode data is compiled in), so it
 * bundles for browsers: a signup form can refuse `bad..dots@example.com` with the very code
 * and message the server would give.
 *
 * @example
 * import { parseAddress } from 'mailverdict/parse';
 * const result = parseAddress('Jöhn@Bücher.de');
 * if (result.ok) result.asciiAddress; // null: the local part needs SMTPUTF8
 * else result.code; // 'consecutive_dots', ...
 */
export { parseAddress } from './address/parse.js';
export type { ParseAddressOptions, ParsedAddress, ParseResult } from './address/parse.js';
export { PARSE_ERROR_CODES } from './address/errors.js';
export type { ParseErrorCode, ParseFailure, PartFailure } from './address/errors.js';
export { DEFAULT_PROFILE, RFC_PROFILE, PROFILES } from './address/options.js';
export type { ParseOptions, ProfileName } from './address/options.js';
