import type { PlanName } from '../ports/store.js';

/**
 * The plans: request limits per API key, per minute and per day. PlanName is
 * defined with the Store port, which sits below the service and stores it.
 */
export type { PlanName };

export interface Plan {
  readonly name: PlanName;
  readonly perMinute: number;
  readonly perDay: number;
}

// Each plan frozen too, not only the table: every Caller carries one of these objects, and a
// host that changed its caller's `plan.perMinute` would otherwise lift it for every key.
export const PLANS: Readonly<Record<PlanName, Plan>> = Object.freeze({
  free: Object.freeze({ name: 'free', perMinute: 10, perDay: 100 }),
  starter: Object.freeze({ name: 'starter', perMinute: 60, perDay: 10_000 }),
  professional: Object.freeze({ name: 'professional', perMinute: 120, perDay: 50_000 }),
  enterprise: Object.freeze({ name: 'enterprise', perMinute: 300, perDay: 500_000 }),
});

export const PLAN_NAMES = Object.keys(PLANS) as readonly PlanName[];

/** Public keys: at most this many requests per day per end user (client IP). */
export const PUBLIC_KEY_DAILY_LIMIT = 10;

export function isPlanName(value: unknown): value is PlanName {
  return typeof value === 'string' && Object.hasOwn(PLANS, value);
}
