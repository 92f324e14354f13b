import type { MxAnswer } from '../ports/dns.js';
import {
  fail,
  pass,
  skipped,
  unknown,
  type AddressFacts,
  type Checker,
  type Finding,
} from './checker.js';

/**
 * Looks up where the domain's mail goes. Null MX (RFC 7505), NXDOMAIN and a domain with no
 * records mean no mail can be delivered; SERVFAIL and timeouts are unknown, never invalid.
 */
export function mx(): Checker {
  return {
    name: 'mx',
    run(facts, ports, signal) {
      const { parsed } = facts;
      if (parsed.domainLiteral) {
        // The literal is the mail host (RFC 5321 4.1.3): nothing to look up.
        facts.mx = { hosts: [{ exchange: parsed.asciiDomain, priority: 0 }], implicit: true };
        return pass('mx', 'domain_literal');
      }
      if (ports.dns.offline === true) return skipped('mx', 'offline');
      return ports.dns.mx(parsed.asciiDomain, signal).then((answer) => mxFinding(facts, answer));
    },
  };
}

/** Maps a DNS answer to a finding, recording the hosts it names. */
export function mxFinding(facts: AddressFacts, answer: MxAnswer): Finding {
  switch (answer.kind) {
    case 'records':
      facts.mx = { hosts: answer.hosts, implicit: false };
      return pass('mx');
    case 'implicit':
      facts.mx = { hosts: [{ exchange: answer.host, priority: 0 }], implicit: true };
      return pass('mx', 'implicit_mx');
    case 'null_mx':
      return fail('mx', 'null_mx', 'null_mx');
    case 'no_records':
      return fail('mx', 'no_mx', 'no_mx');
    case 'nxdomain':
      return fail('mx', 'nxdomain', 'no_mx');
    case 'failure':
      return unknown('mx', `dns_${answer.code}`, 'dns_unavailable');
    case 'offline':
      return skipped('mx', 'offline');
  }
}
