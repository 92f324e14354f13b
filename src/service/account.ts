import { parseAddress } from '../address/parse.js';
import type { AccountRecord, CreditBalance } from '../ports/store.js';
import type { Caller } from './auth.js';
import { billingPeriod, billingPeriodDates } from './billing-period.js';
import { fileLedger } from './charging.js';
import { accountOf, type ServiceContext } from './context.js';
import { MAX_LEDGER_AMOUNT, SERVICE_REF_PREFIX } from '../store/rules/ledger.js';
import { isPlanName, PLAN_NAMES, PLANS, type PlanName } from './plans.js';
import { invalidRequest, ServiceError } from './service-error.js';
import { answering, requireInteger, requireObject, requireText } from './validate.js';

/** An account with its credit balances. */
export interface AccountInfo extends AccountRecord {
  readonly credits: CreditBalance;
}

/** The account object (`GET /v1/account`), in its wire shape. */
export interface AccountObject {
  readonly email: string;
  readonly plan: PlanName;
  /** available + reserved + used = total, always. */
  readonly credits: {
    readonly available: number;
    readonly reserved: number;
    readonly used: number;
    readonly total: number;
  };
  readonly rate_limit: { readonly per_minute: number; readonly remaining: number };
  /** `YYYY-MM-DD` (UTC); `end` is the period's last day, inclusive. */
  readonly billing_period: { readonly start: string; readonly end: string };
}

/** The reference of the grant an account is created with: of the service's namespace. */
export const INITIAL_GRANT_REF = `${SERVICE_REF_PREFIX}initial_grant`;

export interface NewAccount {
  readonly email: string;
  readonly plan?: PlanName;
  /** Credits granted at creation. Default 0. */
  readonly credits?: number;
  /** Day of the month billing periods start (1-31). Default: today's day (UTC). */
  readonly billingAnchorDay?: number;
}

/** Account administration: accounts, their plans and credits. */
export interface AccountAdmin {
  createAccount(input: NewAccount): Promise<AccountInfo>;
  getAccount(accountId: string): Promise<AccountInfo>;
  /** Every account with its balance, oldest first. */
  listAccounts(): Promise<readonly AccountInfo[]>;
  changePlan(accountId: string, plan: PlanName): Promise<AccountInfo>;
}

export interface Accounts {
  /** The account object (`GET /v1/account`). */
  account(caller: Caller): Promise<AccountObject>;
  readonly admin: AccountAdmin;
}

export function createAccounts(ctx: ServiceContext): Accounts {
  const { store, clock, random } = ctx;

  async function accountInfo(account: AccountRecord): Promise<AccountInfo> {
    return { ...account, credits: await store.balance(account.id) };
  }

  const admin: AccountAdmin = {
    createAccount: (input) =>
      answering(async () => {
        const fields = requireObject(input, 'account');
        const parsedEmail = parseAddress(requireText(fields.email, 'email', 254));
        if (!parsedEmail.ok)
          throw invalidRequest('email', `email is not valid: ${parsedEmail.message}`);
        const plan = fields.plan === undefined ? 'free' : fields.plan;
        if (!isPlanName(plan))
          throw invalidRequest('plan', `plan must be one of ${PLAN_NAMES.join(', ')}`);
        const credits =
          fields.credits === undefined
            ? 0
            : requireInteger(fields.credits, 'credits', 0, MAX_LEDGER_AMOUNT);
        const now = clock.now();
        const billingAnchorDay =
          fields.billingAnchorDay === undefined
            ? new Date(now).getUTCDate()
            : requireInteger(fields.billingAnchorDay, 'billing_anchor_day', 1, 31);
        const account: AccountRecord = {
          id: ctx.newId('acct'),
          email: parsedEmail.address,
          plan,
          billingAnchorDay,
          webhookSecret: `whsec_${Buffer.from(random(32)).toString('base64')}`,
          createdAt: now,
        };
        await store.insertAccount(account);
        if (credits > 0) {
          await fileLedger(ctx, account.id, {
            kind: 'grant',
            ref: INITIAL_GRANT_REF,
            amount: credits,
            note: 'account created',
          });
        }
        return accountInfo(account);
      }),
    getAccount: (accountId) => answering(async () => accountInfo(await accountOf(ctx, accountId))),
    listAccounts: () =>
      answering(async () => Promise.all((await store.listAccounts()).map(accountInfo))),
    changePlan: (accountId, plan) =>
      answering(async () => {
        requireText(accountId, 'account_id');
        if (!isPlanName(plan))
          throw invalidRequest('plan', `plan must be one of ${PLAN_NAMES.join(', ')}`);
        const updated = await store
          .updateAccount(accountId, { plan })
          .finally(() => ctx.keyCache.clear());
        if (updated === undefined) throw new ServiceError('not_found', `No account ${accountId}.`);
        return accountInfo(updated);
      }),
  };

  return {
    admin,
    account: (caller) =>
      answering(async () => {
        const fields = requireObject(caller, 'caller');
        const accountId = requireText(fields.accountId, 'account_id');
        // A Caller from authenticate: its key's minute window is what remaining reports.
        const keyId = requireText(requireObject(fields.key, 'caller').id, 'caller');
        const account = await accountOf(ctx, accountId);
        const plan = PLANS[account.plan];
        const [credits, rate] = await Promise.all([
          store.balance(account.id),
          ctx.rateLimits.status(keyId, plan),
        ]);
        const period = billingPeriod(account.billingAnchorDay, clock.now());
        return {
          email: account.email,
          plan: account.plan,
          credits: {
            available: credits.available,
            reserved: credits.reserved,
            used: credits.used,
            total: credits.total,
          },
          rate_limit: { per_minute: plan.perMinute, remaining: rate.remaining },
          billing_period: billingPeriodDates(period),
        };
      }),
  };
}
