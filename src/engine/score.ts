import type { RiskFactor } from '../checks/checker.js';

/** The three verdicts. */
export const STATES = ['deliverable', 'undeliverable', 'risky'] as const;
export type State = (typeof STATES)[number];

/**
 * How much evidence the verdict rests on: a syntax-and-lists verdict (DNS offline), a DNS-
 * verified route, or a mailbox an SMTP server accepted.
 */
export type Evidence = 'offline' | 'dns' | 'smtp';

/** Emailable's bands: 80-100 deliverable, 1-79 risky, 0 undeliverable. */
export const SCORE_BANDS: Readonly<Record<State, readonly [number, number]>> = {
  deliverable: [80, 100],
  risky: [1, 79],
  undeliverable: [0, 0],
};

/** Where a deliverable score starts, by evidence: never as sure without DNS as with it. */
export const DELIVERABLE_CEILING: Readonly<Record<Evidence, number>> = {
  offline: 86,
  dns: 95,
  smtp: 100,
};

/** Where a risky score starts, by what made it risky. */
export const RISKY_BASE = {
  /** catch-all, full mailbox: the domain takes mail, the mailbox is unproven. */
  low_deliverability: 70,
  /** the check could not complete: we know nothing against the address. */
  unknown: 50,
  /** disposable or confusable: a real mailbox, a doubtful owner. */
  low_quality: 35,
} as const;

/**
 * Points each risk factor takes off. Role and free lower the score without changing the
 * state; the factors that change the state are decided in verdict.ts.
 */
export const FACTOR_WEIGHTS: Readonly<Record<RiskFactor, number>> = {
  free: 2,
  role: 6,
  no_reply: 10,
  catch_all: 10,
  mailbox_full: 15,
  greylisted: 5,
  dns_unavailable: 5,
  // A likely slip of a well-known domain: mail may go astray, but the domain decides the state.
  possible_typo: 15,
  confusable: 20,
  disposable: 20,
  no_mx: 0,
  nxdomain: 0,
  null_mx: 0,
  smtp_rejected: 0,
};

/** The score of a verdict: a start point less the factors' weights, kept inside its band. */
export function score(state: State, start: number, factors: readonly RiskFactor[]): number {
  const [low, high] = SCORE_BANDS[state];
  let value = start;
  for (const factor of factors) value -= FACTOR_WEIGHTS[factor];
  return Math.min(high, Math.max(low, value));
}
