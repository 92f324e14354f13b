import {
  parseAddress,
  type ParseAddressOptions,
  type ParsedAddress,
} from '../../src/address/parse.js';
import type { AddressFacts, Checker } from '../../src/checks/checker.js';

/** What an offline checker is given for `address`, which must parse. */
export function factsOf(address: string, options?: ParseAddressOptions): AddressFacts {
  const parsed = parseAddress(address, options);
  if (!parsed.ok) throw new Error(`${address}: ${parsed.code}`);
  return { input: address, parsed: parsed as ParsedAddress };
}

/** An offline checker's finding for `address`, as `status:code`. */
export function codeOf(checker: Checker, address: string, options?: ParseAddressOptions): string {
  const finding = checker.run(factsOf(address, options), { dns: undefined as never });
  if (finding instanceof Promise) throw new Error('an offline checker returned a promise');
  return `${finding.status}:${finding.code}`;
}
