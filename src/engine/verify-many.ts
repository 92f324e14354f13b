import { optional } from '../optional.js';
import type { MethodName } from './methods.js';
import type { Verdict } from './verdict.js';

export interface VerifyManyOptions {
  readonly method?: MethodName;
  /** Verifications in flight at once. Default 50. */
  readonly concurrency?: number;
  /** Stops the run: the iterator rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /** See VerifyOptions.retryGreylisted. Default false; batch jobs turn it on. */
  readonly retryGreylisted?: boolean;
}

export interface VerifyManyResult {
  /** Position of the address in the input. */
  readonly index: number;
  readonly verdict: Verdict;
}

type VerifyOne = (
  address: string,
  options: { method?: MethodName; signal?: AbortSignal; retryGreylisted?: boolean },
) => Promise<Verdict>;

export const VERIFY_MANY_CONCURRENCY = 50;

/**
 * Runs `verify` over every address with bounded concurrency, in an order that puts the
 * addresses of one domain side by side: they then wait on one shared MX lookup and reach the
 * SMTP stage together, where the probe batcher turns them into one session.
 */
export async function* verifyEach(
  addresses: Iterable<string>,
  options: VerifyManyOptions,
  verify: VerifyOne,
): AsyncIterableIterator<VerifyManyResult> {
  const inputs = [...addresses];
  const bad = inputs.findIndex((input) => typeof input !== 'string');
  if (bad >= 0) {
    throw new TypeError(`verifyMany expects strings; the address at index ${bad} is not one`);
  }
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? VERIFY_MANY_CONCURRENCY));
  const order = groupedByDomain(inputs);
  const { signal } = options;
  const verifyOptions = {
    ...optional('method', options.method),
    ...optional('signal', signal),
    ...optional('retryGreylisted', options.retryGreylisted),
  };

  const done: Array<VerifyManyResult | { error: unknown }> = [];
  let wake: (() => void) | undefined;
  let next = 0;
  let inFlight = 0;
  const start = () => {
    while (inFlight < concurrency && next < order.length) {
      const index = order[next++] as number;
      inFlight++;
      verify(inputs[index] as string, verifyOptions).then(
        (verdict) => settle({ index, verdict }),
        (error: unknown) => settle({ error }),
      );
    }
  };
  const settle = (result: VerifyManyResult | { error: unknown }) => {
    inFlight--;
    done.push(result);
    wake?.();
  };

  start();
  let yielded = 0;
  while (yielded < inputs.length) {
    if (done.length === 0) {
      await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
      continue;
    }
    const result = done.shift() as VerifyManyResult | { error: unknown };
    if ('error' in result) throw result.error;
    yielded++;
    start();
    yield result;
  }
}

/** Indices of `inputs`, stable, with each domain's addresses together in first-seen order. */
function groupedByDomain(inputs: readonly string[]): number[] {
  const groups = new Map<string, number[]>();
  inputs.forEach((input, index) => {
    const key = input.slice(input.lastIndexOf('@') + 1).toLowerCase();
    let group = groups.get(key);
    if (group === undefined) groups.set(key, (group = []));
    group.push(index);
  });
  return [...groups.values()].flat();
}
