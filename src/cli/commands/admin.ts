import { filterWire } from '../../http/filters-route.js';
import type { FilterAction, FilterType } from '../../ports/store.js';
import type { KeyInfo } from '../../service/auth.js';
import { wholeNumber } from '../engine-options.js';
import { EXIT, UsageError, type ExitCode } from '../exit-codes.js';
import { line, type CliIo } from '../io.js';
import { accountOf, withService, type FileFlags } from '../service-file.js';
import { isoOrNull, safeJson, table, when } from '../terminal.js';

interface ListFlags extends FileFlags {
  readonly json?: boolean;
}

function keyRow(key: KeyInfo): string[] {
  const state =
    key.revokedAt !== null
      ? 'revoked'
      : key.expiresAt !== null
        ? `expires ${when(key.expiresAt)}`
        : 'active';
  return [
    key.id,
    key.kind,
    `${key.displayPrefix}…${key.lastFour}`,
    key.name ?? '',
    state,
    when(key.createdAt),
  ];
}

/** A key as --json prints it: snake_case and ISO 8601 times, as the API's wire objects are. */
function keyWire(key: KeyInfo): Record<string, unknown> {
  return {
    id: key.id,
    kind: key.kind,
    display_prefix: key.displayPrefix,
    last_four: key.lastFour,
    name: key.name,
    allowed_ips: key.allowedIps,
    trusted_domains: key.trustedDomains,
    created_at: isoOrNull(key.createdAt),
    revoked_at: isoOrNull(key.revokedAt),
    expires_at: isoOrNull(key.expiresAt),
  };
}

function printKeys(io: CliIo, keys: readonly KeyInfo[], json: boolean | undefined): void {
  if (json === true) {
    for (const key of keys) line(io.stdout, safeJson(keyWire(key)));
    return;
  }
  for (const text of table(['ID', 'KIND', 'KEY', 'NAME', 'STATE', 'CREATED'], keys.map(keyRow))) {
    line(io.stdout, text);
  }
}

export interface KeyCreateFlags extends FileFlags {
  readonly public?: boolean;
  readonly name?: string;
  readonly allowedIp?: string[];
  readonly trustedDomain?: string[];
}

/** `keys create`: the secret goes to stdout once, alone on its line, for a pipe to catch. */
export async function keysCreate(flags: KeyCreateFlags, io: CliIo): Promise<ExitCode> {
  return withService(flags, async (service) => {
    const account = await accountOf(service, flags);
    const { secret, key } = await service.admin.createKey(account.id, {
      kind: flags.public === true ? 'public' : 'private',
      ...(flags.name === undefined ? {} : { name: flags.name }),
      ...(flags.allowedIp === undefined ? {} : { allowedIps: flags.allowedIp }),
      ...(flags.trustedDomain === undefined ? {} : { trustedDomains: flags.trustedDomain }),
    });
    line(
      io.stderr,
      `Created ${key.kind} key ${key.id} for ${account.id}. The key is shown this once:`,
    );
    line(io.stdout, secret);
    return EXIT.ok;
  });
}

export async function keysList(flags: ListFlags, io: CliIo): Promise<ExitCode> {
  return withService(flags, async (service) => {
    const account = await accountOf(service, flags);
    printKeys(io, await service.admin.listKeys(account.id), flags.json);
    return EXIT.ok;
  });
}

export async function keysRevoke(id: string, flags: FileFlags, io: CliIo): Promise<ExitCode> {
  return withService(flags, async (service) => {
    const account = await accountOf(service, flags);
    const key = await service.admin.revokeKey(account.id, id);
    line(io.stderr, `Revoked ${key.id} (${key.displayPrefix}…${key.lastFour}).`);
    return EXIT.ok;
  });
}

export interface KeyRotateFlags extends FileFlags {
  readonly grace?: string;
}

export async function keysRotate(id: string, flags: KeyRotateFlags, io: CliIo): Promise<ExitCode> {
  const grace = flags.grace === undefined ? undefined : wholeNumber(flags.grace);
  if (grace !== undefined && !Number.isSafeInteger(grace)) {
    throw new UsageError(
      `--grace must be a whole number of seconds, got ${JSON.stringify(flags.grace)}`,
    );
  }
  return withService(flags, async (service) => {
    const account = await accountOf(service, flags);
    const rotated = await service.admin.rotateKey(
      account.id,
      id,
      grace === undefined ? {} : { graceSeconds: grace },
    );
    line(
      io.stderr,
      `Rotated ${id}: it ${grace ? `keeps working for ${grace} s` : 'stopped working'}; the new key ${rotated.key.id} is shown this once:`,
    );
    line(io.stdout, rotated.secret);
    return EXIT.ok;
  });
}

export interface GrantFlags extends FileFlags {
  readonly note?: string;
}

export async function creditsGrant(
  amount: string,
  flags: GrantFlags,
  io: CliIo,
): Promise<ExitCode> {
  const credits = wholeNumber(amount);
  if (!Number.isSafeInteger(credits) || credits < 1) {
    throw new UsageError(
      `the amount must be a whole number of credits, 1 or more, got ${JSON.stringify(amount)}`,
    );
  }
  return withService(flags, async (service) => {
    const account = await accountOf(service, flags);
    await service.admin.grantCredits(
      account.id,
      credits,
      flags.note === undefined ? {} : { note: flags.note },
    );
    const balance = (await service.admin.getAccount(account.id)).credits;
    line(
      io.stdout,
      `Granted ${credits} credits to ${account.id}: available ${balance.available}, reserved ${balance.reserved}, used ${balance.used}, total ${balance.total}.`,
    );
    return EXIT.ok;
  });
}

/** The balance as `GET /v1/account` names it: available + reserved + used = total. */
export async function creditsBalance(
  flags: FileFlags & { readonly json?: boolean },
  io: CliIo,
): Promise<ExitCode> {
  return withService(flags, async (service) => {
    const account = await accountOf(service, flags);
    const { available, reserved, used, total } = account.credits;
    line(
      io.stdout,
      flags.json === true
        ? safeJson({ account_id: account.id, available, reserved, used, total })
        : `${account.id}: available ${available}, reserved ${reserved}, used ${used}, total ${total}.`,
    );
    return EXIT.ok;
  });
}

/** Ledger entries printed by default, a page. */
const LEDGER_PAGE = 100;

export interface LedgerFlags extends ListFlags {
  readonly limit?: string;
  readonly after?: string;
}

/**
 * `credits ledger`: the account's entries in the order they were filed, a page at a time
 * (`--after <seq>` goes on from an entry); a full page says on stderr how to read the next.
 */
export async function creditsLedger(flags: LedgerFlags, io: CliIo): Promise<ExitCode> {
  const limit = flags.limit === undefined ? LEDGER_PAGE : pageNumber(flags.limit, '--limit');
  const after = flags.after === undefined ? undefined : pageNumber(flags.after, '--after');
  return withService(flags, async (service) => {
    const account = await accountOf(service, flags);
    const entries = await service.admin.ledger(account.id, {
      limit,
      ...(after === undefined ? {} : { afterSeq: after }),
    });
    if (flags.json === true) {
      for (const entry of entries) {
        line(
          io.stdout,
          safeJson({
            seq: entry.seq,
            kind: entry.kind,
            ref: entry.ref,
            amount: entry.amount,
            delta: entry.delta,
            reservation: entry.reservation,
            note: entry.note,
            created_at: isoOrNull(entry.createdAt),
          }),
        );
      }
    } else {
      const rows = entries.map((e) => [
        String(e.seq),
        when(e.createdAt),
        e.kind,
        String(e.amount),
        e.delta > 0 ? `+${e.delta}` : String(e.delta),
        e.ref,
        e.note ?? '',
      ]);
      const header = ['SEQ', 'AT', 'KIND', 'AMOUNT', 'DELTA', 'REF', 'NOTE'];
      for (const text of table(header, rows)) line(io.stdout, text);
    }
    const last = entries.at(-1);
    if (entries.length === limit && last !== undefined) {
      line(io.stderr, `More entries may follow: --after ${last.seq} reads the next page.`);
    }
    return EXIT.ok;
  });
}

export interface FilterAddFlags extends FileFlags {
  readonly type: FilterType;
  readonly action: FilterAction;
  readonly reason?: string;
}

export async function filtersAdd(
  value: string,
  flags: FilterAddFlags,
  io: CliIo,
): Promise<ExitCode> {
  return withService(flags, async (service) => {
    const account = await accountOf(service, flags);
    const filter = await service.createFilter(
      { accountId: account.id },
      {
        value,
        type: flags.type,
        action: flags.action,
        ...(flags.reason === undefined ? {} : { reason: flags.reason }),
      },
    );
    // The filter as POST /v1/filters answers it: a script reads one shape from both.
    line(io.stdout, safeJson(filterWire(filter)));
    return EXIT.ok;
  });
}

export interface FilterListFlags extends ListFlags {
  readonly type?: FilterType;
  readonly page?: string;
  readonly perPage?: string;
}

export async function filtersList(flags: FilterListFlags, io: CliIo): Promise<ExitCode> {
  const page = flags.page === undefined ? undefined : pageNumber(flags.page, '--page');
  const perPage = flags.perPage === undefined ? undefined : pageNumber(flags.perPage, '--per-page');
  return withService(flags, async (service) => {
    const account = await accountOf(service, flags);
    const list = await service.listFilters(
      { accountId: account.id },
      {
        ...(flags.type === undefined ? {} : { type: flags.type }),
        ...(page === undefined ? {} : { page }),
        ...(perPage === undefined ? {} : { perPage }),
      },
    );
    if (flags.json === true) {
      // GET /v1/filters's shape: {filters, total, page, per_page}.
      const page = {
        filters: list.filters.map(filterWire),
        total: list.total,
        page: list.page,
        per_page: list.perPage,
      };
      line(io.stdout, safeJson(page));
      return EXIT.ok;
    }
    const rows = list.filters.map((f) => [f.id, f.type, f.value, f.action, f.reason ?? '']);
    for (const text of table(['ID', 'TYPE', 'VALUE', 'ACTION', 'REASON'], rows))
      line(io.stdout, text);
    line(
      io.stderr,
      `Page ${list.page} of ${Math.max(1, Math.ceil(list.total / list.perPage))} (${list.total} filters).`,
    );
    return EXIT.ok;
  });
}

/**
 * A page flag (--page, --per-page, --limit, --after) as typed: a whole number, else a
 * UsageError naming it; its range is the service's to check (and to name).
 */
export function pageNumber(value: string, flag: string): number {
  const number = wholeNumber(value);
  if (!Number.isSafeInteger(number)) {
    throw new UsageError(`${flag} must be a whole number, got ${JSON.stringify(value)}`);
  }
  return number;
}

export async function filtersRemove(id: string, flags: FileFlags, io: CliIo): Promise<ExitCode> {
  return withService(flags, async (service) => {
    const account = await accountOf(service, flags);
    await service.deleteFilter({ accountId: account.id }, id);
    line(io.stderr, `Deleted filter ${id}.`);
    return EXIT.ok;
  });
}
