import type { MxAnswer, MxHost } from '../ports/dns.js';
import {
  fail,
  pass,
  skipped,
  unknown,
  type AddressFacts,
  type Checker,
  type Finding,
} from './checker.js';

const LITERAL = pass('mx', 'domain_literal');
const OFFLINE = skipped('mx', 'offline');
const FOUND = pass('mx');
const IMPLICIT = pass('mx', 'implicit_mx');
const NULL_MX = fail('mx', 'null_mx', 'null_mx');
const NO_MX = fail('mx', 'no_mx', 'no_mx');
const NXDOMAIN = fail('mx', 'nxdomain', 'nxdomain');
const DNS_FAILURE = {
  timeout: unknown('mx', 'dns_timeout', 'dns_unavailable'),
  servfail: unknown('mx', 'dns_servfail', 'dns_unavailable'),
  refused: unknown('mx', 'dns_refused', 'dns_unavailable'),
  error: unknown('mx', 'dns_error', 'dns_unavailable'),
  unreliable: unknown('mx', 'dns_unreliable', 'dns_unavailable'),
} as const;

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
        return LITERAL;
      }
      if (ports.dns.offline === true) return OFFLINE;
      return ports.dns.mx(parsed.asciiDomain, signal).then((answer) => mxFinding(facts, answer));
    },
  };
}

/**
 * The hosts that take a domain's mail by this answer: its MX records, or the domain itself
 * when it has only an address (RFC 5321 5.1 implicit MX); none otherwise.
 */
export function mailHosts(answer: MxAnswer): readonly MxHost[] {
  if (answer.kind === 'records') return answer.hosts;
  return answer.kind === 'implicit' ? [{ exchange: answer.host, priority: 0 }] : [];
}

/** Maps a DNS answer to a finding, recording the hosts it names. */
export function mxFinding(facts: AddressFacts, answer: MxAnswer): Finding {
  switch (answer.kind) {
    case 'records':
    case 'implicit':
      facts.mx = { hosts: mailHosts(answer), implicit: answer.kind === 'implicit' };
      return answer.kind === 'implicit' ? IMPLICIT : FOUND;
    case 'null_mx':
      return NULL_MX;
    case 'no_records':
      return NO_MX;
    case 'nxdomain':
      return NXDOMAIN;
    case 'failure':
      return DNS_FAILURE[answer.code];
    case 'offline':
      return OFFLINE;
  }
}
