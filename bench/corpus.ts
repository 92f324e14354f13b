/**
 * A seeded corpus of addresses for benchmarks: the same seed gives the same list on any
 * machine, so figures from two runs compare the same work.
 */

/** mulberry32: a tiny seeded PRNG, good enough to shuffle a benchmark corpus. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FIRST = [
  'john',
  'mary',
  'li',
  'ahmed',
  'sofia',
  'lukas',
  'yuki',
  'olga',
  'pedro',
  'amara',
  'chen',
  'fatima',
];
const LAST = [
  'smith',
  'garcia',
  'wang',
  'khan',
  'rossi',
  'muller',
  'sato',
  'ivanova',
  'silva',
  'okafor',
];
const COMPANY = [
  'acme',
  'globex',
  'initech',
  'umbrella',
  'hooli',
  'stark',
  'wayne',
  'wonka',
  'tyrell',
  'cyberdyne',
];
const TLDS = ['com', 'net', 'org', 'io', 'co.uk', 'de', 'fr', 'com.au', 'nl', 'ca'];
const FREE = [
  'gmail.com',
  'yahoo.com',
  'outlook.com',
  'hotmail.com',
  'icloud.com',
  'gmx.de',
  'proton.me',
];
const DISPOSABLE = [
  'mailinator.com',
  'guerrillamail.com',
  '10minutemail.com',
  'yopmail.com',
  'trashmail.com',
  'temp-mail.org',
];
const ROLES = [
  'info',
  'sales',
  'support',
  'admin',
  'contact',
  'billing',
  'hello',
  'noreply',
  'no-reply',
];
const IDN = [
  'bücher.de',
  'münchen.de',
  'пример.рф',
  '例え.jp',
  'ελλάδα.gr',
  'café.fr',
  'xn--bcher-kva.de',
];
const IDN_LOCAL = ['jörg', 'josé', 'иван', '田中', 'ελένη', 'zoë'];

export interface CorpusMix {
  readonly ordinary: number;
  readonly free: number;
  readonly disposable: number;
  readonly role: number;
  readonly idn: number;
  readonly invalid: number;
}

/** Shares of each kind; invalid covers a dozen different mistakes. */
export const DEFAULT_MIX: CorpusMix = {
  ordinary: 0.42,
  free: 0.18,
  disposable: 0.08,
  role: 0.08,
  idn: 0.06,
  invalid: 0.18,
};

export function generateCorpus(
  size: number,
  seed = 20261121,
  mix: CorpusMix = DEFAULT_MIX,
): string[] {
  const random = seededRandom(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
  const person = () => {
    const style = random();
    const first = pick(FIRST);
    const last = pick(LAST);
    if (style < 0.4) return `${first}.${last}`;
    if (style < 0.6) return `${first}${Math.floor(random() * 1000)}`;
    if (style < 0.8) return `${first[0]}${last}`;
    return `${first}_${last}+news`;
  };
  const companyDomain = () => `${pick(COMPANY)}${Math.floor(random() * 500)}.${pick(TLDS)}`;
  const invalid = (): string => {
    switch (Math.floor(random() * 12)) {
      case 0:
        return `${person()}..x@${companyDomain()}`;
      case 1:
        return `${person()}${companyDomain()}`;
      case 2:
        return `${person()}@${companyDomain()}.`;
      case 3:
        return `.${person()}@${companyDomain()}`;
      case 4:
        return `${person()} ${pick(LAST)}@${companyDomain()}`;
      case 5:
        return `${person()}@-${companyDomain()}`;
      case 6:
        return `${person()}@${pick(COMPANY)}`;
      case 7:
        return `${person()}@@${companyDomain()}`;
      case 8:
        return `"${person()}"@${companyDomain()}`;
      case 9:
        return `${person()}@${pick(COMPANY)}.c0m1`;
      case 10:
        return `${'x'.repeat(70)}@${companyDomain()}`;
      default:
        return `${person()}@${pick(COMPANY)}_mail.com`;
    }
  };
  const thresholds: Array<[number, () => string]> = [];
  let total = 0;
  for (const [kind, share] of Object.entries(mix) as Array<[keyof CorpusMix, number]>) {
    total += share;
    const make = {
      ordinary: () => `${person()}@${companyDomain()}`,
      free: () => `${person()}@${pick(FREE)}`,
      disposable: () => `${person()}@${pick(DISPOSABLE)}`,
      role: () => `${pick(ROLES)}@${companyDomain()}`,
      idn: () => `${random() < 0.5 ? pick(IDN_LOCAL) : person()}@${pick(IDN)}`,
      invalid,
    }[kind];
    thresholds.push([total, make]);
  }
  const corpus: string[] = [];
  for (let i = 0; i < size; i++) {
    const roll = random() * total;
    const make = (thresholds.find(([limit]) => roll < limit) ?? thresholds[0])?.[1] as () => string;
    corpus.push(make());
  }
  // Addresses arrive from JSON bodies, files and database rows as flat strings; template
  // literals build rope (cons) strings, which every implementation would read more slowly.
  return JSON.parse(JSON.stringify(corpus)) as string[];
}
