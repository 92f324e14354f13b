// How the Redis store keeps the ledger atomic. The ledger's rules are TypeScript
// (store/rules/ledger.ts, applyLedgerCommit over a synchronous LedgerBook), shared by the
// memory and SQLite stores. Rather than port them to a Lua script (a second copy that could drift
// from the first), every write to an account is optimistic: one MULTI reads a snapshot of what
// the rules will ask for (the balance and the account's version, the entries of the commit's
// references, the reservations, the idempotency key, and whatever job rows the caller needs),
// the rules decide against that snapshot in TypeScript, and one Lua script (connection.ts)
// applies every resulting write, the job rows with the ledger's, only if the account's version
// is still the one read, bumping it. If another process wrote in between, the attempt is made
// again from a fresh snapshot. Each script runs alone in Redis, so a write happened whole or
// not at all, across any number of processes; a refusal writes nothing. Within one process the
// commits of one account are queued, so concurrent requests of one process never retry against
// each other; retries happen only between processes, and each round of them lets one through.
// One write is not made this way: a batch worker's flush of results with their settles and
// releases, the hot path of every worker at once, is one script that decides in Redis
// (job-results.ts says why and which rules it repeats); it bumps the version too, so the
// writes here that read before it decide again.
import type {
  CreditBalance,
  IdempotencyRecord,
  LedgerCommit,
  LedgerEntry,
  ReservationState,
} from '../../ports/store.js';
import type { LedgerBook } from '../../store/rules/ledger.js';
import { StoreError } from '../../store/rules/store-error.js';
import { parsed, type Command, type RedisConnection } from './connection.js';
import type { RedisKeys } from './keys.js';

/** What a snapshot reads of an account's ledger besides its balance. */
export interface LedgerWants {
  readonly refs?: Iterable<string>;
  readonly reservations?: Iterable<string>;
  readonly idempotency?: Iterable<string>;
}

/** What `decide` answers, with the writes it adds to the ledger's (job rows, say). */
export interface Decision<T> {
  readonly result: T;
  readonly commands?: readonly Command[];
}

export type Decide<T> = (book: LedgerBook, replies: readonly unknown[]) => Decision<T>;

export interface AccountWrites {
  /**
   * Reads what `wants` names and runs `reads` in one snapshot, decides, and writes the book's
   * changes with the decision's commands in one step, or decides again on a fresh snapshot if
   * the account changed meanwhile. A decision that writes nothing writes nothing.
   */
  transact<T>(
    accountId: string,
    wants: LedgerWants,
    reads: readonly Command[],
    decide: Decide<T>,
  ): Promise<T>;
}

/**
 * Rounds of other processes' writes an attempt may lose before the store reports `busy`: each
 * round lets one writer through, so this is far more processes than will ever contend.
 */
const MAX_ATTEMPTS = 100;

/** Thrown by the snapshot's book when the rules ask for something the snapshot did not read. */
class Unfetched extends Error {
  constructor(
    readonly what: 'ref' | 'reservation' | 'idempotency' | 'seq',
    readonly key: string,
  ) {
    super(`${what} ${key} was not read`);
  }
}

interface Wanted {
  readonly refs: Set<string>;
  readonly reservations: Set<string>;
  readonly idempotency: Set<string>;
  seqs: number;
}

export function accountWrites(connection: RedisConnection, keys: RedisKeys): AccountWrites {
  const queues = new Map<string, Promise<unknown>>();

  /** Runs `work` after the account's queued work in this process, whatever its outcome. */
  function queued<T>(accountId: string, work: () => Promise<T>): Promise<T> {
    const run = (queues.get(accountId) ?? Promise.resolve()).then(work, work);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    queues.set(accountId, tail);
    void tail.then(() => {
      if (queues.get(accountId) === tail) queues.delete(accountId);
    });
    return run;
  }

  async function snapshot(accountId: string, wanted: Wanted, reads: readonly Command[]) {
    const refs = [...wanted.refs];
    const reservations = [...wanted.reservations];
    const idempotency = [...wanted.idempotency];
    const commands: Command[] = [
      ['hmget', keys.ledger(accountId), 'available', 'reserved', 'used', 'total', 'v'],
    ];
    if (refs.length > 0) commands.push(['hmget', keys.entries(accountId), ...refs]);
    if (reservations.length > 0) commands.push(['hmget', keys.holds(accountId), ...reservations]);
    if (idempotency.length > 0) {
      commands.push(['hmget', keys.idempotency(accountId), ...idempotency]);
    }
    // Seqs are taken with the snapshot, so an account's entries number in the order its
    // writes land; an attempt that loses leaves a gap, as a rolled-back insert would.
    if (wanted.seqs > 0) commands.push(['incrby', keys.seq, wanted.seqs]);
    const replies = await connection.read([...commands, ...reads]);
    let at = 0;
    const [available, reserved, used, total, version] = replies[at++] as (string | null)[];
    const found = <T>(names: string[]): Map<string, T | undefined> => {
      if (names.length === 0) return new Map();
      const texts = replies[at++] as (string | null)[];
      return new Map(names.map((name, i) => [name, parsed<T>(texts[i])]));
    };
    const state: BookState = {
      balance:
        version === null || version === undefined
          ? undefined
          : {
              available: Number(available),
              reserved: Number(reserved),
              used: Number(used),
              total: Number(total),
            },
      entries: found<LedgerEntry>(refs),
      reservations: found<ReservationState>(reservations),
      idempotency: found<IdempotencyRecord>(idempotency),
      seqs: [],
    };
    if (wanted.seqs > 0) {
      const last = Number(replies[at++]);
      for (let seq = last - wanted.seqs + 1; seq <= last; seq++) state.seqs.push(seq);
    }
    return {
      version: version ?? '',
      book: snapshotBook(accountId, keys, state),
      replies: replies.slice(at),
    };
  }

  return {
    transact(accountId, wants, reads, decide) {
      return queued(accountId, async () => {
        const refs = new Set(wants.refs);
        const wanted: Wanted = {
          refs,
          reservations: new Set(wants.reservations),
          idempotency: new Set(wants.idempotency),
          // A request files at most one entry.
          seqs: refs.size,
        };
        for (let attempt = 1; ; attempt++) {
          const { version, book, replies } = await snapshot(accountId, wanted, reads);
          let decision;
          try {
            decision = decide(book, replies);
          } catch (error) {
            if (!(error instanceof Unfetched) || attempt >= MAX_ATTEMPTS) throw error;
            want(wanted, error);
            continue;
          }
          const commands = [...book.commands, ...(decision.commands ?? [])];
          if (commands.length === 0) return decision.result;
          const ledger = keys.ledger(accountId);
          const failed = await connection.write(
            [{ key: ledger, field: 'v', expected: version }],
            [...commands, ['hincrby', ledger, 'v', 1]],
          );
          if (failed === 0) return decision.result;
          if (attempt >= MAX_ATTEMPTS) {
            throw new StoreError(
              'busy',
              `Account ${accountId} is being written by too many processes at once; try again.`,
            );
          }
          // Another process wrote first: a short random pause spreads the next round out.
          await new Promise((resolve) =>
            setTimeout(resolve, Math.random() * Math.min(attempt, 10)),
          );
        }
      });
    },
  };
}

function want(wanted: Wanted, missing: Unfetched): void {
  if (missing.what === 'ref') wanted.refs.add(missing.key);
  else if (missing.what === 'reservation') wanted.reservations.add(missing.key);
  else if (missing.what === 'idempotency') wanted.idempotency.add(missing.key);
  else wanted.seqs = Math.max(1, wanted.seqs * 2);
}

/** What a commit's requests and idempotency change will ask the book for. */
export function commitWants(commit: LedgerCommit): LedgerWants {
  const refs: string[] = [];
  const reservations: string[] = [];
  // Malformed commits are the rules' to refuse: only well-typed fields are read ahead.
  const requests: unknown = (commit as Partial<LedgerCommit> | null)?.requests;
  for (const request of Array.isArray(requests) ? requests : []) {
    const { ref, reservation } = (request ?? {}) as { ref?: unknown; reservation?: unknown };
    if (typeof ref === 'string') refs.push(ref);
    if (typeof reservation === 'string') reservations.push(reservation);
  }
  const change = (commit as Partial<LedgerCommit> | null)?.idempotency;
  const key = change?.op === 'claim' ? change.record.key : change?.key;
  return { refs, reservations, idempotency: typeof key === 'string' ? [key] : [] };
}

interface BookState {
  balance: CreditBalance | undefined;
  readonly entries: Map<string, LedgerEntry | undefined>;
  readonly reservations: Map<string, ReservationState | undefined>;
  readonly idempotency: Map<string, IdempotencyRecord | undefined>;
  readonly seqs: number[];
}

/**
 * The ledger's view of a snapshot: reads answer from it, writes land in it (later reads see
 * them) and become commands for the guarded write.
 */
function snapshotBook(
  accountId: string,
  keys: RedisKeys,
  state: BookState,
): LedgerBook & { readonly commands: Command[] } {
  const commands: Command[] = [];
  const read = <T>(map: Map<string, T | undefined>, what: Unfetched['what'], key: string) => {
    if (!map.has(key)) throw new Unfetched(what, key);
    return map.get(key);
  };
  return {
    commands,
    balance: () => state.balance,
    entry: (ref) => read(state.entries, 'ref', ref),
    reservation: (ref) => read(state.reservations, 'reservation', ref),
    idempotency: (key) => read(state.idempotency, 'idempotency', key),
    insertEntry(entry) {
      const seq = state.seqs.shift();
      if (seq === undefined) throw new Unfetched('seq', entry.ref);
      const filed: LedgerEntry = { seq, ...entry };
      state.entries.set(entry.ref, filed);
      commands.push(
        ['hset', keys.entries(accountId), entry.ref, JSON.stringify(filed)],
        ['zadd', keys.entrySeqs(accountId), seq, entry.ref],
      );
      return filed;
    },
    putReservation(reservation) {
      state.reservations.set(reservation.ref, reservation);
      const member = JSON.stringify([accountId, reservation.ref]);
      commands.push(['hset', keys.holds(accountId), reservation.ref, JSON.stringify(reservation)]);
      if (reservation.held > 0) {
        commands.push(
          ['zadd', keys.holding(accountId), reservation.expiresAt, reservation.ref],
          ['zadd', keys.holdExpiries, reservation.expiresAt, member],
        );
      } else {
        commands.push(
          ['zrem', keys.holding(accountId), reservation.ref],
          ['zrem', keys.holdExpiries, member],
        );
      }
    },
    putBalance(balance) {
      state.balance = balance;
      commands.push([
        'hset',
        keys.ledger(accountId),
        'available',
        balance.available,
        'reserved',
        balance.reserved,
        'used',
        balance.used,
        'total',
        balance.total,
      ]);
    },
    putIdempotency(key, record) {
      state.idempotency.set(key, record);
      const member = JSON.stringify([accountId, key]);
      if (record === undefined) {
        commands.push(
          ['hdel', keys.idempotency(accountId), key],
          ['zrem', keys.idempotencyAges, member],
        );
      } else {
        commands.push(
          ['hset', keys.idempotency(accountId), key, JSON.stringify(record)],
          ['zadd', keys.idempotencyAges, record.createdAt, member],
        );
      }
    },
  };
}
