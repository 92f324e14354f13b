// Why a batch's results are stored by one Lua script, not by the optimistic write of
// redis/ledger.ts. A worker stores results in flushes of up to 256, each with a settle (or a
// release) of the job's fixed cost against the job's reservation. Through the optimistic write
// a flush was a snapshot (one MULTI), a decision in TypeScript and a guarded script of some
// 1,280 commands: 1.4 + 1.9 + 5.1 ms of a single worker's time per flush, measured, and with
// several workers every flush of every worker raced on the one account's version, so each
// round let one through and the rest went again (4 workers: 0.53x the speed of 1). Here the
// whole flush is one script that reads and writes in one atomic step: no snapshot round trip,
// no version to lose. It still bumps the account's version, so that an optimistic writer
// elsewhere (a hold renewal, finishJob) that read before it decides again. Measured on 50,000
// results in flushes of 256 from 1, 2 and 4 processes: client CPU 1.2, 2.0, 3.8 s before and
// 0.5, 0.7, 0.9 s after, Redis CPU 0.6, 0.8, 1.1 s before and 0.6 s after at every count
// (about 3 ms a flush, spread over its nine reads and writes per result; none stands out);
// bench/scale.ts with 1, 2, 4 workers went from 4,307, 3,740, 5,044 ms to 3,384, 2,783,
// 2,894 ms (medians of three, interleaved).
//
// The price is that the arithmetic of exactly two ledger requests exists in Lua as well as in
// store/rules/ledger.ts (planAgainstReservation): a settle or a release of a given amount
// against a reservation. Anything else (a release without an amount, a refund, a malformed request)
// takes the TypeScript path, so the rules stay the ones there.
// The rules, as store/rules/ledger.ts states them:
//   - a reference already filed with the same kind, reservation and amount is a replay: it
//     changes nothing; with a different one it refuses the call (reference_conflict);
//   - an unknown reservation refuses it (unknown_reservation); an amount above what the
//     reservation still holds refuses it (exceeds_reservation, limit: what it holds);
//   - settle: held -= a, charged += a; balance reserved -= a, used += a;
//   - release: held -= a; balance reserved -= a, available += a;
//   - a new entry takes the next seq; a hold with nothing left leaves the expiry indexes.
// A refusal writes nothing: every read and check runs before the first write. The store
// contract (test/store/batch-contract.ts) runs the same calls on the memory, SQLite and Redis
// stores, and test/store/redis-store.test.ts compares this path with the TypeScript one.
import type {
  JobRecord,
  JobResultState,
  JobResultWrite,
  JobWriteOutcome,
  LedgerRequest,
} from '../../ports/store.js';
import { ledgerRequestProblem } from '../../store/rules/ledger.js';
import { StoreError } from '../../store/rules/store-error.js';
import type { RedisConnection } from './connection.js';
import type { RedisKeys } from './keys.js';

/** The job counter a result's state counts in. */
export const COUNTER: Readonly<Record<JobResultState, 'valid' | 'invalid' | 'risky'>> = {
  deliverable: 'valid',
  undeliverable: 'invalid',
  risky: 'risky',
};

/** Arguments per write after the header (see the script). */
const FIELDS = 9;

/**
 * KEYS: ledger, entries, entrySeqs, seq, holds, holding, holdExpiries, jobs, jobItems,
 * jobResults, jobDone, jobPending, jobDuplicates (keys.ts).
 * ARGV: accountId, JSON of accountId, jobId, then per write: position, counter (valid, invalid,
 * risky), JSON of the record, kind ('' without a request), ref, reservation, JSON of
 * reservation, amount, the entry's JSON after its seq.
 * Numbers are written with %.0f: exact for every integer up to 2^53, where tostring's %.14g
 * would round balances past 10^14.
 */
const RECORD_RESULTS = `
local account, accountJson, jobId = ARGV[1], ARGV[2], ARGV[3]
local n = (#ARGV - 3) / ${FIELDS}
local function arg(i, f) return ARGV[3 + (i - 1) * ${FIELDS} + f] end
local function num(x)
  if x == math.floor(x) then return string.format('%.0f', x) end
  return string.format('%.17g', x)
end
-- One call per 4,000 arguments: Lua's unpack stops at about 8,000 values.
local function many(cmd, key, list)
  local out = {}
  for i = 1, #list, 4000 do
    local reply = redis.call(cmd, key, unpack(list, i, math.min(#list, i + 3999)))
    if type(reply) == 'table' then
      for j = 1, #reply do out[#out + 1] = reply[j] end
    end
  end
  return out
end

local jobText = redis.call('hget', KEYS[8], jobId)
if not jobText then return {'job_not_found'} end
local job = cjson.decode(jobText)
if job.accountId ~= account then return {'job_not_found'} end
-- A completed or failed job takes no more results: nothing more is charged for it.
if job.status ~= 'processing' then return {'job_finished'} end

-- A position with its result already, or given one by an earlier write of this call (itself,
-- or the address it repeats), is skipped with its request: writes are taken in order.
local positions = {}
for i = 1, n do positions[i] = arg(i, 1) end
local items, done, waiting = {}, {}, {}
if n > 0 then
  items = many('hmget', KEYS[9], positions)
  done = many('zmscore', KEYS[11], positions)
  waiting = many('hmget', KEYS[13], positions)
end
local fresh, seen, refs = {}, {}, {}
for i = 1, n do
  local p = positions[i]
  if items[i] and not done[i] and not seen[p] then
    seen[p] = true
    -- Its duplicates take its result in this write: a later write of one is skipped too.
    if waiting[i] then
      for _, later in ipairs(cjson.decode(waiting[i])) do seen[num(later)] = true end
    end
    fresh[#fresh + 1] = i
    if arg(i, 4) ~= '' then refs[#refs + 1] = arg(i, 5) end
  end
end

-- As applyLedgerCommit: a reference twice in the requests is refused first, then an unknown
-- account; then every request is decided before anything is written (planAgainstReservation).
local named = {}
for _, ref in ipairs(refs) do
  if named[ref] then return {'ref_twice', ref} end
  named[ref] = true
end
if redis.call('hexists', KEYS[1], 'v') == 0 then return {'no_account'} end
local filed = {}
if #refs > 0 then filed = many('hmget', KEYS[2], refs) end
local holds, order, entries = {}, {}, {}
local available, reserved, used = 0, 0, 0
local k = 0
for _, i in ipairs(fresh) do
  local kind = arg(i, 4)
  if kind ~= '' then
    k = k + 1
    local reservation, amount = arg(i, 6), tonumber(arg(i, 8))
    if filed[k] then
      local entry = cjson.decode(filed[k])
      if entry.kind ~= kind or entry.reservation ~= reservation or entry.amount ~= amount then
        return {'reference_conflict', filed[k]}
      end
    else
      local hold = holds[reservation]
      if hold == nil then
        local text = redis.call('hget', KEYS[5], reservation)
        hold = false
        if text then
          local state = cjson.decode(text)
          hold = {held = state.held, charged = state.charged, expiresAt = state.expiresAt,
            json = arg(i, 7)}
          order[#order + 1] = reservation
        end
        holds[reservation] = hold
      end
      if not hold then return {'unknown_reservation', reservation} end
      if amount > hold.held then return {'exceeds_reservation', num(hold.held)} end
      hold.held = hold.held - amount
      reserved = reserved - amount
      if kind == 'settle' then
        hold.charged = hold.charged + amount
        used = used + amount
      else
        available = available + amount
      end
      entries[#entries + 1] = i
    end
  end
end

-- The results, their duplicates' copies, and the job's counters. A position placed already
-- (a copy given earlier in this call, or a result of its own) is not placed again.
local results, scores, cleared, answered, placed = {}, {}, {}, {}, {}
local counts = {valid = 0, invalid = 0, risky = 0}
local processed = 0
for _, i in ipairs(fresh) do
  local p = positions[i]
  if not placed[p] then
    placed[p] = true
    -- An item is JSON.stringify({ email, billable, duplicateOf }) (batch-store.ts): its
    -- end tells whether it repeats an earlier one, without decoding the address.
    local own = string.sub(items[i], -19) == '"duplicateOf":null}' and 'false' or 'true'
    local record = arg(i, 3)
    results[#results + 1] = p
    results[#results + 1] = '{"record":' .. record .. ',"duplicate":' .. own .. '}'
    scores[#scores + 1] = p
    scores[#scores + 1] = p
    cleared[#cleared + 1] = p
    local count = 1
    if waiting[i] then
      for _, later in ipairs(cjson.decode(waiting[i])) do
        local at = num(later)
        if not placed[at] and not redis.call('zscore', KEYS[11], at) then
          placed[at] = true
          results[#results + 1] = at
          results[#results + 1] = '{"record":' .. record .. ',"duplicate":true}'
          scores[#scores + 1] = at
          scores[#scores + 1] = at
          count = count + 1
        end
      end
      answered[#answered + 1] = p
    end
    local counter = arg(i, 2)
    counts[counter] = counts[counter] + count
    processed = processed + count
  end
end
if #fresh == 0 then return {'ok', jobText} end
-- The job's text as JSON.stringify wrote it, with only its four counters changed.
local updated = jobText
for field, value in pairs({processed = job.processed + processed, valid = job.valid + counts.valid,
    invalid = job.invalid + counts.invalid, risky = job.risky + counts.risky}) do
  local found
  updated, found = string.gsub(updated, '"' .. field .. '":%d+', '"' .. field .. '":' .. num(value), 1)
  if found ~= 1 then return redis.error_reply('job ' .. jobId .. ' has no ' .. field .. ' counter') end
end

-- Decided: write. The seq counter first, so that a Redis out of memory refuses it untouched.
if #entries > 0 then
  local last = redis.call('incrby', KEYS[4], #entries)
  local texts, seqs = {}, {}
  for j, i in ipairs(entries) do
    local seq = num(last - #entries + j)
    texts[#texts + 1] = arg(i, 5)
    texts[#texts + 1] = '{"seq":' .. seq .. ',' .. arg(i, 9)
    seqs[#seqs + 1] = seq
    seqs[#seqs + 1] = arg(i, 5)
  end
  many('hset', KEYS[2], texts)
  many('zadd', KEYS[3], seqs)
end
for _, ref in ipairs(order) do
  local hold = holds[ref]
  redis.call('hset', KEYS[5], ref, '{"ref":' .. hold.json .. ',"held":' .. num(hold.held) ..
    ',"charged":' .. num(hold.charged) .. ',"expiresAt":' .. num(hold.expiresAt) .. '}')
  local member = '[' .. accountJson .. ',' .. hold.json .. ']'
  if hold.held > 0 then
    redis.call('zadd', KEYS[6], num(hold.expiresAt), ref)
    redis.call('zadd', KEYS[7], num(hold.expiresAt), member)
  else
    redis.call('zrem', KEYS[6], ref)
    redis.call('zrem', KEYS[7], member)
  end
end
if available ~= 0 then redis.call('hincrby', KEYS[1], 'available', num(available)) end
if reserved ~= 0 then redis.call('hincrby', KEYS[1], 'reserved', num(reserved)) end
if used ~= 0 then redis.call('hincrby', KEYS[1], 'used', num(used)) end
many('hset', KEYS[10], results)
many('zadd', KEYS[11], scores)
many('zrem', KEYS[12], cleared)
if #answered > 0 then many('hdel', KEYS[13], answered) end
redis.call('hset', KEYS[8], jobId, updated)
redis.call('hincrby', KEYS[1], 'v', 1)
return {'ok', updated}
`;

/** Whether the script can take `writes`: well-formed requests of its two kinds only. */
export function scriptable(writes: readonly JobResultWrite[]): boolean {
  return writes.every(
    ({ ledger }) =>
      ledger === undefined ||
      ((ledger.kind === 'settle' || ledger.kind === 'release') &&
        ledger.amount !== undefined &&
        ledgerRequestProblem(ledger) === undefined),
  );
}

/**
 * Stores `writes` (scriptable ones) with their settles and releases in one script: the
 * recordJobResults of the Redis store, whatever other processes write meanwhile.
 */
export async function recordResultsByScript(
  connection: RedisConnection,
  keys: RedisKeys,
  accountId: string,
  jobId: string,
  writes: readonly JobResultWrite[],
  at: number,
): Promise<JobWriteOutcome> {
  const args: (string | number)[] = [accountId, JSON.stringify(accountId), jobId];
  for (const write of writes) {
    const { position, record, state, ledger } = write;
    args.push(
      position,
      COUNTER[state],
      // The script stores JSON.stringify({ record, duplicate }) of the TypeScript path.
      JSON.stringify(record),
    );
    if (ledger === undefined) args.push('', '', '', '', '', '');
    else {
      const request = ledger as Extract<LedgerRequest, { kind: 'settle' | 'release' }>;
      const amount = request.amount as number;
      args.push(
        request.kind,
        request.ref,
        request.reservation,
        JSON.stringify(request.reservation),
        amount,
        // The entry of store/rules/ledger.ts's entryOf, in its key order, after `{"seq":N,`.
        JSON.stringify({
          accountId,
          ref: request.ref,
          kind: request.kind,
          amount,
          delta: request.kind === 'settle' ? 0 : amount,
          reservation: request.reservation,
          note: request.note ?? null,
          createdAt: at,
        }).slice(1),
      );
    }
  }
  const reply = await connection.script<[string, string?]>(
    RECORD_RESULTS,
    [
      keys.ledger(accountId),
      keys.entries(accountId),
      keys.entrySeqs(accountId),
      keys.seq,
      keys.holds(accountId),
      keys.holding(accountId),
      keys.holdExpiries,
      keys.jobs,
      keys.jobItems(jobId),
      keys.jobResults(jobId),
      keys.jobDone(jobId),
      keys.jobPending(jobId),
      keys.jobDuplicates(jobId),
    ],
    args,
  );
  const [code, detail = ''] = reply;
  switch (code) {
    case 'ok':
      return { ok: true, job: JSON.parse(detail) as JobRecord };
    case 'job_not_found':
    case 'job_finished':
      return { ok: false, code };
    case 'ref_twice':
      throw new StoreError('invalid', `ref ${detail} appears twice in one commit`);
    case 'no_account':
      throw new StoreError('not_found', `No account ${accountId}.`);
    case 'unknown_reservation':
      return { ok: false, code, reservation: detail };
    case 'exceeds_reservation':
      return { ok: false, code, limit: Number(detail) };
    case 'reference_conflict':
      return { ok: false, code, existing: JSON.parse(detail) };
    default:
      throw new StoreError('io', `Redis answered the results script with ${String(code)}.`);
  }
}
