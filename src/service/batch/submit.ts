import { createHash } from 'node:crypto';
import { firstAnswer } from '../idempotency.js';
import type { ParseResult } from '../../address/parse.js';
import { freeVerdict } from '../../engine/free-verdict.js';
import type { MethodName } from '../../engine/methods.js';
import type { Verdict } from '../../engine/verdict.js';
import { toResultRecord } from '../../format/shapes.js';
import type {
  FilterAction,
  JobRecord,
  JobResult,
  LedgerCommit,
  NewJobItem,
} from '../../ports/store.js';
import { randomBase62 } from '../api-keys.js';
import type { ServiceContext } from '../context.js';
import { domainChain, emailKey } from '../filter-values.js';
import { SERVICE_REF_PREFIX } from '../../store/rules/ledger.js';
import { nextSlice, sliceSpent } from '../../slices.js';
import { methodOf, requestIdOf, requireEmails } from '../request-fields.js';
import { ServiceError } from '../service-error.js';
import {
  optionalObject,
  requireAccountRef,
  requireObject,
  requireUsableMethod,
} from '../validate.js';
import { requireCallbackUrl, type CallbackPolicy } from './callback-url.js';
import { repeatFinder } from './repeats.js';
import { chooseBaseUrl, type BaseUrlChoice } from './results.js';

/** Filter values looked up per store read at submission. */
const FILTER_LOOKUP_CHUNK = 500;

export interface NewBatch {
  readonly emails: readonly string[];
  readonly method?: MethodName;
  /** Where the completion webhook goes (`callback_url` on the wire). */
  readonly callbackUrl?: string | null;
}

/**
 * `baseUrl` and `defaultBaseUrl` say where the job's `download_url` is built, kept with the
 * job (chooseBaseUrl: `baseUrl`, else the service's `batch.baseUrl`, else `defaultBaseUrl`):
 * a host's configuration, never a request's Host.
 */
export interface SubmitBatchOptions extends BaseUrlChoice {
  /** An idempotency key: the same key and request within 24 hours answer the same job. */
  readonly requestId?: string | undefined;
}

/** `POST /v1/verify` -> 202: the job as stored, still processing. */
export interface BatchCreated {
  readonly id: string;
  readonly status: 'processing';
  readonly total_emails: number;
  readonly message: string;
}

export interface SubmitSettings {
  /** The service's base URL (as baseUrlOf makes it), or null: kept with each job it takes. */
  readonly baseUrl: string | null;
  /** Kept with each job too, for whichever process sends its webhook. */
  readonly callbackPolicy: CallbackPolicy;
  readonly holdTtlMs: number;
  /** How long the checks of one submission hold the event loop at a time. */
  readonly sliceMs: number;
  /** Starts a stored job. */
  start(job: JobRecord): void;
}

/** A job's references in the service's own ledger namespace (SERVICE_REF_PREFIX). */
export const jobHoldRef = (jobId: string, hold: number) =>
  `${SERVICE_REF_PREFIX}batch:${jobId}:hold:${hold}`;
export const jobItemRef = (jobId: string, position: number) =>
  `${SERVICE_REF_PREFIX}batch:${jobId}:item:${position}`;

/** The record of a verdict, as stored and downloaded, with the state it counts as. */
export function resultOf(verdict: Verdict): JobResult {
  return { record: JSON.stringify(toResultRecord(verdict)), state: verdict.state };
}

export function createSubmit(ctx: ServiceContext, settings: SubmitSettings) {
  const { engine, store, clock } = ctx;

  /** Email and domain filters of the account that match any of the addresses, by value. */
  async function filterActions(
    accountId: string,
    parsed: readonly ParseResult[],
  ): Promise<{ email: Map<string, FilterAction>; domain: Map<string, FilterAction> }> {
    const emails = new Set<string>();
    const domains = new Set<string>();
    for (const p of parsed) {
      if (sliceSpent(settings.sliceMs)) await nextSlice();
      if (!p.ok) continue;
      emails.add(emailKey(p));
      if (!p.domainLiteral) for (const d of domainChain(p.asciiDomain)) domains.add(d);
    }
    const lookup = async (type: 'email' | 'domain', values: Set<string>) => {
      const found = new Map<string, FilterAction>();
      const list = [...values];
      for (let i = 0; i < list.length; i += FILTER_LOOKUP_CHUNK) {
        if (sliceSpent(settings.sliceMs)) await nextSlice();
        const chunk = list.slice(i, i + FILTER_LOOKUP_CHUNK);
        for (const filter of await store.findFilters(accountId, type, chunk)) {
          found.set(filter.value, filter.action);
        }
      }
      return found;
    };
    return { email: await lookup('email', emails), domain: await lookup('domain', domains) };
  }

  /**
   * Duplicates, test addresses and email or domain filter matches are free and answered
   * here; every other address is billable. IP filters need DNS: when the job runs, the engine
   * asks them inside each domain's work, and a match's credits are given back.
   */
  async function classify(
    accountId: string,
    emails: readonly string[],
    method: MethodName,
  ): Promise<NewJobItem[]> {
    // 50,000 addresses take some 150 ms to parse and as long again to classify: in slices,
    // so that the requests of others are answered meanwhile.
    const parsed: ParseResult[] = [];
    for (const email of emails) {
      parsed.push(engine.parse(email));
      if (sliceSpent(settings.sliceMs)) await nextSlice();
    }
    const filters = await filterActions(accountId, parsed);
    const earlierOf = repeatFinder();
    const items: NewJobItem[] = [];
    for (const [position, email] of emails.entries()) {
      items.push(classifyOne(email, parsed[position] as ParseResult, position));
      if (sliceSpent(settings.sliceMs)) await nextSlice();
    }
    return items;

    function classifyOne(email: string, p: ParseResult, position: number): NewJobItem {
      const earlier = earlierOf(email, p, position);
      if (earlier !== undefined) {
        return { email, billable: false, duplicateOf: earlier, result: null };
      }
      const verdict = freeVerdict(email, p, method, (valid) => {
        const action = filters.email.get(emailKey(valid));
        if (action !== undefined || valid.domainLiteral) return action;
        for (const d of domainChain(valid.asciiDomain)) {
          const byDomain = filters.domain.get(d);
          if (byDomain !== undefined) return byDomain;
        }
        return undefined;
      });
      return verdict === undefined
        ? { email, billable: true, duplicateOf: null, result: null }
        : { email, billable: false, duplicateOf: null, result: resultOf(verdict) };
    }
  }

  return async function submitBatch(
    caller: unknown,
    input: unknown,
    submitOptions: unknown = {},
  ): Promise<BatchCreated> {
    // Every argument checked before anything is read or stored (issue 11: hostile arguments).
    const accountId = requireAccountRef(caller);
    const fields = requireObject(input, 'batch');
    const emails = requireEmails(fields.emails);
    const method = methodOf(fields.method);
    const callbackUrl = requireCallbackUrl(
      fields.callbackUrl ?? fields.callback_url,
      settings.callbackPolicy,
    );
    const options = optionalObject(submitOptions, 'options');
    const requestId = options.requestId === undefined ? undefined : requestIdOf(options.requestId);
    const baseUrl = chooseBaseUrl(options, settings.baseUrl);

    const fingerprint = requestId === undefined ? '' : fingerprintOf(method, callbackUrl, emails);
    if (requestId !== undefined) {
      const held = await store.idempotencyRecord(accountId, requestId, clock.now());
      if (held !== undefined) return firstAnswer<BatchCreated>(held, fingerprint);
    }

    const items = await classify(accountId, emails, method);
    const billable = items.reduce((n, item) => n + (item.billable ? 1 : 0), 0);
    // Test addresses and filter matches need no engine; anything else needs one that can.
    if (billable > 0) requireUsableMethod(method, engine.canProbe);
    const cost = engine.cost(method);
    const now = clock.now();
    const id = ctx.newId('batch');
    const reservation = billable === 0 ? null : jobHoldRef(id, 1);
    const job: JobRecord = {
      id,
      accountId,
      method,
      status: 'processing',
      totalEmails: emails.length,
      billable,
      cost,
      reservation,
      holds: reservation === null ? 0 : 1,
      callbackUrl,
      baseUrl,
      callbackPolicy: settings.callbackPolicy,
      processed: 0,
      valid: 0,
      invalid: 0,
      risky: 0,
      createdAt: now,
      completedAt: null,
      failureReason: null,
      purgeAt: null,
    };
    const created: BatchCreated = {
      id,
      status: 'processing',
      total_emails: emails.length,
      message: `Batch accepted: ${counted(emails.length, 'address', 'addresses')} ${emails.length === 1 ? 'is' : 'are'} being verified (${counted(billable * cost, 'credit', 'credits')} reserved).`,
    };
    const commit: LedgerCommit = {
      requests:
        reservation === null
          ? []
          : [
              {
                kind: 'reserve',
                ref: reservation,
                amount: billable * cost,
                expiresAt: now + settings.holdTtlMs,
                note: `batch ${id}`,
              },
            ],
      ...(requestId === undefined
        ? {}
        : {
            idempotency: {
              op: 'claim',
              record: {
                key: requestId,
                fingerprint,
                attempt: randomBase62(16, ctx.random),
                answer: JSON.stringify(created),
                leaseUntil: now,
              },
            },
          }),
    };
    const outcome = await store.createJob(job, items, commit, now);
    if (!outcome.ok) {
      if (outcome.code === 'idempotency_taken')
        return firstAnswer<BatchCreated>(outcome.record, fingerprint);
      if (outcome.code === 'insufficient_credits') {
        throw new ServiceError(
          'insufficient_credits',
          `Not enough credits: ${outcome.needed} needed, ${outcome.available} available.`,
          { needed: outcome.needed, available: outcome.available },
        );
      }
      throw new ServiceError(
        'internal_error',
        'The batch could not be stored.',
        {},
        {
          cause: outcome,
        },
      );
    }
    ctx.logger.info(
      {
        event: 'job.submitted',
        job_id: id,
        account_id: accountId,
        method,
        total_emails: emails.length,
        billable,
        callback: callbackUrl === null ? null : new URL(callbackUrl).origin,
      },
      'Batch job submitted',
    );
    settings.start(outcome.job);
    return created;
  };
}

function fingerprintOf(method: string, callbackUrl: string | null, emails: readonly string[]) {
  const hash = createHash('sha256').update(`batch\u0000${method}\u0000${callbackUrl ?? ''}`);
  for (const email of emails) hash.update(`\u0000${email}`);
  return hash.digest('base64url');
}

/** `1 address`, `2 addresses`: a message reads right for one as for many. */
function counted(count: number, one: string, many: string): string {
  return `${count} ${count === 1 ? one : many}`;
}
