import type { AccountInfo } from '../../service/account.js';
import { PLANS, type PlanName } from '../../service/plans.js';
import { wholeNumber } from '../engine-options.js';
import { EXIT, UsageError, type ExitCode } from '../exit-codes.js';
import { line, type CliIo } from '../io.js';
import { accountOf, storeName, withService, type FileFlags } from '../service-file.js';
import { isoOrNull, safeJson, table, when } from '../terminal.js';

export interface AccountCreateFlags extends Omit<FileFlags, 'account'> {
  readonly email: string;
  readonly plan: PlanName;
  readonly credits?: string;
}

/**
 * `accounts create`: a new account, its id alone on stdout (for a script to catch); its key
 * is `keys create --account <id>`'s to make and show, once, as every key is.
 */
export async function accountsCreate(flags: AccountCreateFlags, io: CliIo): Promise<ExitCode> {
  const credits = flags.credits === undefined ? 0 : wholeNumber(flags.credits);
  if (!Number.isSafeInteger(credits) || credits < 0) {
    throw new UsageError(
      `--credits must be a whole number of credits, 0 or more, got ${JSON.stringify(flags.credits)}`,
    );
  }
  return withService(flags, async (service) => {
    const account = await service.admin.createAccount({
      email: flags.email,
      plan: flags.plan,
      credits,
    });
    line(
      io.stderr,
      `Created account ${account.id} (${account.email}, ${account.plan} plan, ${credits} credits) in ${storeName(flags)}. Its API key: mailverdict keys create --account ${account.id}`,
    );
    line(io.stdout, account.id);
    return EXIT.ok;
  });
}

/** An account as --json prints it: the API's names, never its webhook secret. */
function accountWire(account: AccountInfo): Record<string, unknown> {
  return {
    id: account.id,
    email: account.email,
    plan: account.plan,
    credits: account.credits,
    billing_anchor_day: account.billingAnchorDay,
    created_at: isoOrNull(account.createdAt),
  };
}

export async function accountsList(
  flags: Omit<FileFlags, 'account'> & { readonly json?: boolean },
  io: CliIo,
): Promise<ExitCode> {
  return withService(flags, async (service) => {
    const accounts = await service.admin.listAccounts();
    if (flags.json === true) {
      for (const account of accounts) line(io.stdout, safeJson(accountWire(account)));
      return EXIT.ok;
    }
    const rows = accounts.map((a) => [
      a.id,
      a.email,
      a.plan,
      String(a.credits.available),
      String(a.credits.reserved),
      String(a.credits.used),
      when(a.createdAt),
    ]);
    const header = ['ID', 'EMAIL', 'PLAN', 'AVAILABLE', 'RESERVED', 'USED', 'CREATED'];
    for (const text of table(header, rows)) line(io.stdout, text);
    return EXIT.ok;
  });
}

/** `accounts plan <plan>`: the account's new plan, whose limits its keys get at once. */
export async function accountsPlan(plan: PlanName, flags: FileFlags, io: CliIo): Promise<ExitCode> {
  return withService(flags, async (service) => {
    const account = await accountOf(service, flags);
    const changed = await service.admin.changePlan(account.id, plan);
    const limits = PLANS[changed.plan];
    line(
      io.stdout,
      `Account ${changed.id} is on the ${changed.plan} plan: ${limits.perMinute} requests a minute, ${limits.perDay} a day, per key.`,
    );
    return EXIT.ok;
  });
}
