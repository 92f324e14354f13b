import { systemClock, type Clock } from '../ports/clock.js';
import type { Dns, DnsHealth, MxAnswer } from '../ports/dns.js';
import { optional } from '../optional.js';

export interface DnsCanaryOptions {
  /**
   * Domains that surely receive mail: at least one must resolve. Default: a few of the
   * largest mail domains, which no working resolver calls nonexistent.
   */
  readonly mustExist?: readonly string[];
  /** A name that surely does not exist, made anew for each check. Default: a random `.com` name. */
  readonly mustNotExist?: () => string;
  /** How long a healthy check is trusted. Default 10 minutes. */
  readonly healthyForMs?: number;
  /** How soon a failed check is repeated, so a recovered resolver is noticed. Default 30 s. */
  readonly recheckFailedMs?: number;
  /** Told once each time the resolver's health changes (lying, then healthy again). */
  readonly onChange?: (health: DnsHealth) => void;
  readonly clock?: Clock;
}

export const DEFAULT_CANARY_DOMAINS: readonly string[] = Object.freeze([
  'gmail.com',
  'outlook.com',
  'yahoo.com',
]);
const HEALTHY_FOR_MS = 600_000;
const RECHECK_FAILED_MS = 30_000;

/** What a lying resolver's answers become: no evidence either way. */
const UNRELIABLE: MxAnswer = Object.freeze({ kind: 'failure', code: 'unreliable' });

/**
 * Puts a canary in front of a Dns. A sandbox or captive network answers NXDOMAIN (or NODATA)
 * for every name, and some ISP resolvers answer an address for names that do not exist:
 * believed, the first makes gmail.com undeliverable and the second makes every typo
 * deliverable. So before an NXDOMAIN, a no-records or an implicit-MX answer is taken as
 * evidence, the resolver is checked once (then again only when the check expires): a name
 * that must exist has to resolve, and a random name must not. While it fails, NXDOMAIN and
 * implicit-MX answers become a failure (`unreliable`), never a verdict, and so do no-records
 * answers from a resolver that denies names; a check that got no answer for any name that must
 * exist (`unreachable`) has not seen the resolver truthful, and all three are a failure too. Record answers are passed through: a resolver
 * inventing MX records is not a failure this catches. The check costs nothing until a
 * suspicious answer arrives.
 */
export function createCanaryDns(inner: Dns, options: DnsCanaryOptions = {}): Dns {
  const clock = options.clock ?? systemClock;
  const mustExist = options.mustExist ?? DEFAULT_CANARY_DOMAINS;
  const mustNotExist = options.mustNotExist ?? randomName;
  const healthyForMs = options.healthyForMs ?? HEALTHY_FOR_MS;
  const recheckFailedMs = options.recheckFailedMs ?? RECHECK_FAILED_MS;
  let health: DnsHealth = { status: 'unchecked' };
  let validUntil = -Infinity;
  let checking: Promise<DnsHealth> | undefined;
  // Whether the resolver was last announced as lying: the recovery is announced only then,
  // and only once it answers truthfully (not merely because it stopped answering).
  let announcedLying = false;

  /** The resolver's health, checked when the last check has expired; `seen` is an answer in hand. */
  function currentHealth(seen: Seen): Promise<DnsHealth> {
    if (clock.now() < validUntil) return Promise.resolve(health);
    checking ??= check(seen).then(
      (next) => {
        checking = undefined;
        validUntil = clock.now() + (next.status === 'healthy' ? healthyForMs : recheckFailedMs);
        // Said once when the resolver starts lying and once when it is truthful again: never
        // per address, and not again while it goes from lying to unreachable and back.
        const turned = announcedLying ? next.status === 'healthy' : next.status === 'lying';
        // A resolver that lied and then stops answering the check has not been seen truthful:
        // it stays lying (its NXDOMAIN no evidence) until a check it passes.
        if (!(announcedLying && next.status === 'unreachable')) health = next;
        if (turned) {
          announcedLying = next.status === 'lying';
          options.onChange?.(next);
        }
        return health;
      },
      (error: unknown) => {
        checking = undefined;
        throw error;
      },
    );
    return checking;
  }

  async function check(seen: Seen): Promise<DnsHealth> {
    const [existing, invented] = await Promise.all([
      // The answer that set off the check may be about a canary name (gmail.com itself):
      // asking again would only send the same question twice.
      Promise.all(
        mustExist.map((domain) => (sameName(domain, seen.domain) ? seen.answer : inner.mx(domain))),
      ),
      inner.mx(mustNotExist()),
    ]);
    const checkedAt = clock.now();
    // Only the names that got an answer count: one canary name that times out or is refused
    // must not make a resolver that denies the others look truthful.
    const answered = existing.filter((answer) => answer.kind !== 'failure');
    if (answered.length > 0 && answered.every(deniesExistence)) {
      return {
        status: 'lying',
        problem: 'denies_existing_names',
        message:
          `The DNS resolver says ${mustExist.join(', ')} do not exist: it is not answering ` +
          'truthfully (a sandbox or a captive network?). Until it does, nonexistent domains are ' +
          'reported as risky (no_connect, dns_unavailable), never undeliverable.',
        checkedAt,
      };
    }
    if (invented.kind === 'records' || invented.kind === 'implicit') {
      return {
        status: 'lying',
        problem: 'answers_nonexistent_names',
        message:
          'The DNS resolver answers for names that do not exist (NXDOMAIN rewriting). Until it ' +
          'stops, domains known only by an address record are reported as risky (no_connect, ' +
          'dns_unavailable), never deliverable.',
        checkedAt,
      };
    }
    // A resolver that cannot be reached answers every lookup with a failure anyway.
    if (answered.length === 0) {
      return { status: 'unreachable', checkedAt };
    }
    return { status: 'healthy', checkedAt };
  }

  const innerAddresses = inner.addresses?.bind(inner);
  return {
    ...optional('offline', inner.offline),
    health: () => health,
    async mx(domain, signal) {
      const answer = await inner.mx(domain, signal);
      if (
        answer.kind !== 'nxdomain' &&
        answer.kind !== 'no_records' &&
        answer.kind !== 'implicit'
      ) {
        return answer;
      }
      const checked = await currentHealth({ domain, answer });
      if (checked.status === 'healthy') return answer;
      // A resolver whose check got no answer for any name that must exist has not been seen
      // truthful: a sandbox that drops queries in bursts and answers NXDOMAIN for the rest
      // made 220 addresses of a job undeliverable. Its denials wait for a check it passes.
      if (checked.status !== 'lying') return UNRELIABLE;
      // NODATA is a denial too, doubted only from a resolver that denies: a sandbox answering
      // NOERROR with nothing for every name made gmail.com undeliverable (no_mx). A resolver
      // that invents addresses for missing names hides nothing, so its NODATA stands.
      if (answer.kind === 'no_records' && checked.problem !== 'denies_existing_names') {
        return answer;
      }
      return UNRELIABLE;
    },
    ...optional('addresses', innerAddresses),
  };
}

/** An answer already had, for a name the check may need. */
interface Seen {
  readonly domain: string;
  readonly answer: MxAnswer;
}

function sameName(a: string, b: string): boolean {
  return a.toLowerCase().replace(/\.$/, '') === b.toLowerCase().replace(/\.$/, '');
}

function deniesExistence(answer: MxAnswer): boolean {
  return answer.kind === 'nxdomain' || answer.kind === 'no_records' || answer.kind === 'null_mx';
}

const NAME_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** 24 random letters and digits under .com: a name nobody has registered. */
function randomName(): string {
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(24));
  let label = 'mv-canary-';
  for (const byte of bytes) label += NAME_ALPHABET[byte % NAME_ALPHABET.length];
  return `${label}.com`;
}
