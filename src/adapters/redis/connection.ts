import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { StoreError, type StoreErrorCode } from '../../store/rules/store-error.js';

/** A Redis command and its arguments, as data: reads in a MULTI, writes in a guarded write. */
export type Command = readonly [string, ...(string | number)[]];

/** A condition of a guarded write: `field` of the hash at `key` holds `expected` ('' : absent). */
export interface Guard {
  readonly key: string;
  readonly field: string;
  readonly expected: string;
}

/**
 * The script every write of the Redis store runs, but for a worker's flush of results
 * (job-results.ts): it checks its guards, then applies its commands, all in one atomic
 * step (Redis runs a script to its end before anything else). The decisions are made in
 * TypeScript beforehand, against what was read; the guards (an account's version, a record's
 * previous text) make sure nothing changed since. So the ledger's rules stay in one place,
 * store/rules/ledger.ts, for every store. The script does no arithmetic: Lua numbers would
 * print balances past 10^14 with "%.14g"; every value arrives as a string.
 * Redis does not undo a script that fails halfway, so the commands are only ever ours, well
 * formed; a Redis out of memory refuses a script at its first write, before anything changed.
 *
 * KEYS: the guards' keys. ARGV: each guard's field and expected value, then each command as
 * its argument count followed by its name and arguments. Returns 0, or the failed guard's
 * 1-based index (nothing written).
 */
const GUARDED_WRITE = `
for g = 1, #KEYS do
  local current = redis.call('hget', KEYS[g], ARGV[2 * g - 1])
  if (current or '') ~= ARGV[2 * g] then return g end
end
local i = 2 * #KEYS + 1
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  redis.call(unpack(ARGV, i + 1, i + n))
  i = i + n + 1
end
return 0
`;
const GUARDED_WRITE_SHA = createHash('sha1').update(GUARDED_WRITE).digest('hex');

/**
 * Lua's unpack stops at about 8,000 values: a command that lists many fields (a 50,000-address
 * job's items) is split into commands of this many field-value pairs.
 */
export const PAIRS_PER_COMMAND = 1000;

/** The Redis calls of the store, each turning Redis's failures into StoreErrors. */
export interface RedisConnection {
  readonly client: Redis;
  call<T = unknown>(command: Command): Promise<T>;
  /** Runs reads in one MULTI (a consistent snapshot); one answer per command. */
  read(commands: readonly Command[]): Promise<unknown[]>;
  /** 0 when written, else the 1-based index of the guard that failed (nothing written). */
  write(guards: readonly Guard[], commands: readonly Command[]): Promise<number>;
  /** Runs a Lua script of the store's own (EVALSHA, loading it again after a restart). */
  script<T>(
    source: string,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<T>;
  /** Runs other Redis work (the rate limiter's), turning its failures into StoreErrors. */
  guarded<T>(work: () => Promise<T>): Promise<T>;
}

export function redisConnection(client: Redis): RedisConnection {
  const guarded = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      throw storeErrorOf(error);
    }
  };
  // The arguments go as one array: a 50,000-address job's are too many to spread into a call.
  const evaluate = async (source: string, sha: string, args: (string | number)[]) => {
    try {
      return await client.call('evalsha', [sha, ...args]);
    } catch (error) {
      // A restarted server has forgotten its scripts: EVAL loads it again.
      if (!String((error as Error).message).startsWith('NOSCRIPT')) throw error;
      return await client.call('eval', [source, ...args]);
    }
  };
  const shas = new Map<string, string>([[GUARDED_WRITE, GUARDED_WRITE_SHA]]);
  const shaOf = (source: string) => {
    let sha = shas.get(source);
    if (sha === undefined) {
      sha = createHash('sha1').update(source).digest('hex');
      shas.set(source, sha);
    }
    return sha;
  };
  return {
    client,
    call: ([name, ...args]) => guarded(() => client.call(name, args) as Promise<never>),
    read: (commands) =>
      guarded(async () => {
        const replies = await client.multi(commands.map((command) => [...command])).exec();
        if (replies === null) throw new StoreError('io', 'Redis discarded a read.');
        return replies.map(([error, reply]) => {
          if (error !== null) throw error;
          return reply;
        });
      }),
    write: (guards, commands) =>
      guarded(() => {
        const args: (string | number)[] = [guards.length];
        for (const guard of guards) args.push(guard.key);
        for (const guard of guards) args.push(guard.field, guard.expected);
        for (const command of commands) {
          args.push(command.length);
          for (const arg of command) args.push(arg);
        }
        return evaluate(GUARDED_WRITE, GUARDED_WRITE_SHA, args) as Promise<number>;
      }),
    script: (source, keys, args) =>
      guarded(
        () => evaluate(source, shaOf(source), [keys.length, ...keys, ...args]) as Promise<never>,
      ),
    guarded,
  };
}

/** Splits `HSET key f1 v1 f2 v2 ...` (or ZADD's score-member pairs) into commands Lua can unpack. */
export function chunked(name: 'hset' | 'zadd', key: string, pairs: (string | number)[]): Command[] {
  const commands: Command[] = [];
  const step = 2 * PAIRS_PER_COMMAND;
  for (let start = 0; start < pairs.length; start += step) {
    commands.push([name, key, ...pairs.slice(start, start + step)]);
  }
  return commands;
}

/** A stored JSON record, or undefined for a missing one. */
export function parsed<T>(text: unknown): T | undefined {
  return typeof text === 'string' ? (JSON.parse(text) as T) : undefined;
}

/** The JSON records of `hash` under `ids`, in their order; missing ones left out. */
export async function records<T>(
  connection: RedisConnection,
  hash: string,
  ids: readonly string[],
): Promise<T[]> {
  if (ids.length === 0) return [];
  const texts = await connection.call<(string | null)[]>(['hmget', hash, ...ids]);
  return texts.flatMap((text) => parsed<T>(text) ?? []);
}

/** Tries of a read-modify-write of one record before the store reports `busy`. */
const MAX_RECORD_TRIES = 100;

/**
 * Changes one JSON record of a hash: reads it, lets `change` decide, and writes the decision's
 * commands only if the record's text is still the one read (else reads again). `change` sees
 * undefined for a missing record; a decision without commands writes nothing.
 */
export async function updateRecord<T, R>(
  connection: RedisConnection,
  key: string,
  field: string,
  change: (record: T | undefined) => { result: R; commands?: readonly Command[] },
): Promise<R> {
  for (let attempt = 1; ; attempt++) {
    const text = await connection.call<string | null>(['hget', key, field]);
    const { result, commands = [] } = change(parsed<T>(text));
    if (commands.length === 0) return result;
    if ((await connection.write([{ key, field, expected: text ?? '' }], commands)) === 0) {
      return result;
    }
    if (attempt >= MAX_RECORD_TRIES) {
      throw new StoreError('busy', `${field} is being changed by too many writers; try again.`);
    }
  }
}

/** Redis's refusals by the first word of their reply: what they mean for the caller. */
const REPLY_CODES: readonly (readonly [string, StoreErrorCode, string])[] = [
  ['OOM', 'full', 'Redis is out of memory; nothing was written.'],
  ['READONLY', 'readonly', 'Redis is a read-only replica; nothing was written.'],
  ['LOADING', 'busy', 'Redis is loading its data; try again.'],
  ['BUSY', 'busy', 'Redis is busy running a script; try again.'],
  ['MASTERDOWN', 'busy', 'Redis has lost its primary; try again.'],
];

/**
 * A failure of a Redis call as a StoreError: a reply Redis refused with, or a connection that
 * is down. ioredis gives up on a command after `maxRetriesPerRequest` reconnections, so a
 * request fails within a second or so instead of hanging; a write is one script, which ran
 * or did not.
 */
function storeErrorOf(error: unknown): unknown {
  if (error instanceof StoreError || !(error instanceof Error)) return error;
  // Our own bugs stay what they are.
  if (error instanceof TypeError || error instanceof RangeError) return error;
  if (error.name === 'ReplyError') {
    const known = REPLY_CODES.find(([word]) => error.message.startsWith(word));
    if (known !== undefined) return new StoreError(known[1], known[2], { cause: error });
    return new StoreError('io', `Redis refused a command: ${error.message}`, { cause: error });
  }
  // ioredis's commandTimeout: Redis may still run the command once it answers again, and a
  // write is one script or transaction, applied whole or not at all.
  if (error.message === 'Command timed out') {
    return new StoreError(
      'timeout',
      'Redis did not answer in time: a write may still be applied, whole, once it does.',
      { cause: error },
    );
  }
  return new StoreError('io', `Redis is unreachable: ${error.message}`, { cause: error });
}
