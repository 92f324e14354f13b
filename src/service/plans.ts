import type { PlanName } from '../ports/store.js';

/**
 * The plans of DESIGN 5.2: request limits per API key, per minute and per day. PlanName is
 * defined with the Store port, which sits below the service and stores it.
 */
export type { PlanName };

export interface Plan {
  readonly name: PlanName;
  readonly perMinute: number;
  readonly perDay: number;
}

export const PLANS: Readonly<Record<PlanName, Plan>> = Object.freeze({
  free: { name: 'free', perMinute: 10, perDay: 100 },
  starter: { name: 'starter', perMinute: 60, perDay: 10_000 },
  professional: { name: 'professional', perMinute: 120, perDay: 50_000 },
  enterprise: { name: 'enterprise', perMinute: 300, perDay: 500_000 },
});

export const PLAN_NAMES = Object.keys(PLANS) as readonly PlanName[];

/** Public keys: at most this many requests per day per end user (client IP), DESIGN 5.1. */
export const PUBLIC_KEY_DAILY_LIMIT = 10;

export function isPlanName(value: unknown): value is PlanName {
  return typeof value === 'string' && Object.hasOwn(PLANS, value);
}
