import { setMaxListeners } from 'node:events';
import type { IpFilter } from '../ports/ip-filter.js';
import { Fifo } from '../fifo.js';
import { countOption, nextSlice, sliceMsOption, sliceSpent } from '../slices.js';
import type { MethodName } from './methods.js';
import type { Verdict } from './verdict.js';

export interface VerifyManyOptions {
  readonly method?: MethodName;
  /**
   * Domains verified at once. Default 50. Each domain's MX lookup is then one of this many
   * in flight, so 1,000 domains at 1 ms of DNS latency wait about 1,000 x 1 ms / 50.
   */
  readonly concurrency?: number;
  /**
   * Addresses of one domain verified at once. Default 50: one SMTP session's worth, asked
   * together so that the probe batcher puts them in one session.
   */
  readonly perDomain?: number;
  /** Stops the run: the iterator rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /** See VerifyOptions.retryGreylisted. Default false; batch jobs turn it on. */
  readonly retryGreylisted?: boolean;
  /**
   * See VerifyOptions.ipFilter. Asked inside each domain's work, after its MX lookup: the
   * domains' lookups still overlap, and the next domains' host addresses are looked up
   * ahead of their turn with their MX.
   */
  readonly ipFilter?: IpFilter;
  /**
   * How long the run may hold the event loop at a time, in milliseconds: once a slice is
   * spent, the next result waits for a later turn (src/slices.ts), so that a server running
   * an offline job (whose verdicts are all ready at once) still answers its requests. Default
   * SLICE_MS (5); `Infinity` never yields, 0 yields at every look at the clock (every 16
   * verifications started or results delivered).
   */
  readonly sliceMs?: number;
}

export interface VerifyManyResult {
  /** Position of the address in the input. */
  readonly index: number;
  readonly verdict: Verdict;
}

/** What verifyEach needs of the engine: one verification, synchronous when it did no I/O. */
export type VerifyOne = (
  address: string,
  options: { method?: MethodName; signal?: AbortSignal; retryGreylisted?: boolean },
) => Verdict | Promise<Verdict>;

/** What verifyMany returns: `for await` it, or call `return()` to stop it early. */
export interface VerifyManyIterator extends AsyncIterableIterator<VerifyManyResult> {
  /** Stops the run and closes the source (an async source's `return` is awaited). */
  return(): Promise<IteratorReturnResult<undefined>>;
}

export const VERIFY_MANY_CONCURRENCY = 50;
export const VERIFY_MANY_PER_DOMAIN = 50;

/**
 * MX lookups started ahead of their domain's turn, per domain slot. Bench/, 50,000 addresses
 * over 1,000 domains at 1 ms of DNS latency, 5 domain slots: one lookup ahead per slot took
 * 2.40x the ideal of domains x latency / slots, four took 1.40x. A lookup ahead is one UDP
 * query whose answer the DNS cache keeps (three with an IP filter: its host's A and AAAA
 * after the MX). The Node resolver bounds the queries in flight itself
 * (DNS_MAX_QUERIES_IN_FLIGHT, src/adapters/node/dns.ts): whatever a run asks beyond it waits
 * there, in order.
 */
const PREFETCH_PER_SLOT = 4;

/**
 * Pieces of work (a verification started, a result delivered) between two reads of the clock:
 * performance.now() costs 60 to 190 ns here, a fifth of an offline verification's time.
 */
const WORK_PER_CLOCK_READ = 16;

/** Addresses read ahead of the work, at least: enough to find the next domains to start. */
const MIN_LOOKAHEAD = 1_024;

/** One domain's addresses read but not yet started, and how many of its slots are held. */
interface DomainGroup {
  readonly key: string;
  readonly indexes: Fifo<number>;
  readonly addresses: Fifo<string>;
  /** Started and not yet consumed: a slot is held until the caller takes the result. */
  held: number;
  active: boolean;
  /** In the run's queue of groups waiting for a slice to start more. */
  deferred: boolean;
}

type Outcome = VerifyManyResult | { readonly error: unknown };

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

/**
 * Runs `verify` over every address of a stream, in linear time and bounded memory. Work is
 * counted in domains: up to `concurrency` domains are in flight, each with up to `perDomain`
 * addresses, so the MX lookups of many domains overlap and one domain's addresses reach the
 * SMTP stage together (one session). The input is read only as far ahead as the work needs
 * (a window of addresses, grouped by domain inside it), and a slot is held until its result
 * is consumed: a slow consumer stops the reading, so memory depends on the concurrency,
 * never on the input's size. Results come in completion order, each with its input index.
 *
 * An iterator object rather than an async generator: a result that is ready costs one
 * resolved promise, as a plain `await verify()` loop does (bench/: the generator's extra
 * ticks made an offline run half as fast as that loop).
 */
export function verifyEach(
  addresses: Iterable<string> | AsyncIterable<string>,
  options: VerifyManyOptions,
  verify: VerifyOne,
  io: DomainIo = { groupByDomain: true },
): VerifyManyIterator {
  return new VerifyManyRun(addresses, options, verify, io);
}

/** What the engine tells verifyEach about its I/O. */
export interface DomainIo {
  /**
   * Off for an engine without I/O: grouping only lets addresses share lookups and sessions,
   * and reading each domain cost an offline run a third of its speed (bench/).
   */
  readonly groupByDomain: boolean;
  /**
   * Starts the MX lookup of an address's domain (into the engine's DNS cache) before its turn,
   * so that the next domains' lookups overlap the verification of the current ones.
   */
  readonly prefetch?: (address: string) => Promise<unknown>;
}

class VerifyManyRun implements VerifyManyIterator {
  readonly #verify: VerifyOne;
  readonly #verifyOptions: {
    method?: MethodName;
    retryGreylisted?: boolean;
    signal?: AbortSignal;
  };
  readonly #concurrency: number;
  readonly #perDomain: number;
  readonly #lookahead: number;
  readonly #sliceMs: number;
  /**
   * A slice was just given (or the run just began): one piece of work (a verification
   * started, a result delivered) goes ahead before the clock is read, so that each slice
   * makes progress whatever its length.
   */
  #sliceGiven = true;
  #sliceOver = false;
  #sinceClockRead = 0;
  /** Active groups with addresses to start that waited for a slice, each once. */
  readonly #deferred = new Fifo<DomainGroup>();
  readonly #io: DomainIo;
  /** Queued domains whose MX lookup may start early, and how many such lookups are running. */
  readonly #toPrefetch = new Fifo<DomainGroup>();
  #prefetching = 0;
  readonly #signal: AbortSignal | undefined;
  readonly #source: Reader;
  readonly #groups = new Map<string, DomainGroup>();
  /** Groups with addresses waiting and no slot yet, in the order their domains were first seen. */
  readonly #queued = new Fifo<DomainGroup>();
  /** Finished results not yet taken, and beside each the group whose slot it holds. */
  readonly #ready = new Fifo<Outcome>();
  readonly #readyGroups = new Fifo<DomainGroup | undefined>();
  #held = 0;
  #activeDomains = 0;
  #buffered = 0;
  #nextIndex = 0;
  #exhausted = false;
  #finished = false;
  /**
   * A bad item, or a source that failed, ends the reading; the error is thrown once the
   * results before it are delivered.
   */
  #badInput: { readonly error: unknown } | undefined;
  /** The source's next item, while an async source has not given it yet. */
  #reading: Promise<void> | undefined;
  /** Takes the run's abort listener off the caller's signal. */
  #stopListening: (() => void) | undefined;
  #wake: (() => void) | undefined;
  #waiting: Promise<IteratorResult<VerifyManyResult, undefined>> | undefined;

  constructor(
    addresses: Iterable<string> | AsyncIterable<string>,
    options: VerifyManyOptions,
    verify: VerifyOne,
    io: DomainIo,
  ) {
    this.#verify = verify;
    this.#io = io;
    this.#concurrency = countOption(
      options.concurrency,
      'verifyMany concurrency',
      VERIFY_MANY_CONCURRENCY,
    );
    this.#perDomain = countOption(
      options.perDomain,
      'verifyMany perDomain',
      VERIFY_MANY_PER_DOMAIN,
    );
    this.#lookahead = Math.max(MIN_LOOKAHEAD, this.#concurrency * this.#perDomain);
    this.#sliceMs = sliceMsOption(options.sliceMs, 'verifyMany sliceMs');
    this.#signal = options.signal;
    // Every verification in flight listens to the caller's signal: thousands, by design.
    if (options.signal !== undefined) setMaxListeners(0, options.signal);
    const { signal } = options;
    if (signal !== undefined && !signal.aborted) {
      // An abort ends any wait, a wait on a silent source too: the next step sees the signal.
      // A listener that wakes the run, not a promise raced at each wait, which would gather a
      // reaction per wait for as long as the run lasts (`tail -f`). Removed when the run
      // finishes: a signal that outlives the run (a host's shutdown signal) would hold it.
      const onAbort = () => this.#wakeUp();
      signal.addEventListener('abort', onAbort, { once: true });
      this.#stopListening = () => signal.removeEventListener('abort', onAbort);
    }
    this.#verifyOptions = {
      ...(options.method === undefined ? {} : { method: options.method }),
      ...(options.retryGreylisted === undefined
        ? {}
        : { retryGreylisted: options.retryGreylisted }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    };
    this.#source = readerOf(addresses);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<VerifyManyResult, undefined>> {
    // One step at a time: a caller that does not await its next() is queued behind it.
    if (this.#waiting !== undefined) return this.#waiting.then(() => this.next());
    try {
      return this.#step();
    } catch (error) {
      return this.#fail(error);
    }
  }

  /** Stops the run and closes the source. */
  async return(): Promise<IteratorReturnResult<undefined>> {
    await this.#finish();
    return DONE;
  }

  #step(): Promise<IteratorResult<VerifyManyResult, undefined>> {
    if (this.#finished) return Promise.resolve(DONE);
    // Checked first: an offline run always has a result ready and would never look otherwise.
    if (this.#signal?.aborted === true) return this.#fail(this.#signal.reason);
    const reading = this.#fill();
    // An offline run has a result ready at every step, and a caller's `for await` over it
    // never let the event loop turn: a ready result, like a verification to start, waits for
    // the next slice once this one is spent.
    if (this.#ready.size > 0 ? !this.#mayWork() : this.#deferred.size > 0) {
      return this.#wait(nextSlice().then(() => void (this.#sliceGiven = true)));
    }
    this.#sliceGiven = false;
    // A result that is ready goes out even while the source has not given its next item: a
    // source that is slow to write (`tail -f log | mailverdict batch -`) held every result
    // until the window of 1,024 addresses or more had been read.
    const outcome = this.#ready.shift();
    if (outcome !== undefined) {
      const group = this.#readyGroups.shift();
      if ('error' in outcome) return this.#fail(outcome.error);
      this.#release(group as DomainGroup);
      return Promise.resolve({ done: false, value: outcome });
    }
    const settled = new Promise<void>((resolve) => (this.#wake = resolve));
    if (reading !== undefined) {
      return this.#wait(Promise.race([reading, settled]));
    }
    if (this.#exhausted && this.#held === 0 && this.#buffered === 0) {
      const bad = this.#badInput;
      return bad === undefined ? this.#finish().then(() => DONE) : this.#fail(bad.error);
    }
    return this.#wait(settled);
  }

  #wait(until: Promise<void>): Promise<IteratorResult<VerifyManyResult, undefined>> {
    const waiting = until.then(() => {
      this.#waiting = undefined;
      return this.next();
    });
    this.#waiting = waiting;
    return waiting;
  }

  async #fail(error: unknown): Promise<never> {
    await this.#finish();
    throw error;
  }

  /**
   * Ends the run and closes the source. Verifications still in flight (at most the slots)
   * finish on their own and are dropped; the caller's signal is how to cut them short.
   */
  async #finish(): Promise<void> {
    if (this.#finished) return;
    this.#finished = true;
    this.#stopListening?.();
    await this.#source.close();
  }

  #settle(outcome: Outcome, group: DomainGroup | undefined): void {
    this.#ready.push(outcome);
    this.#readyGroups.push(group);
    this.#wakeUp();
  }

  /** Ends the step's wait, if one is waiting. */
  #wakeUp(): void {
    const wake = this.#wake;
    if (wake !== undefined) {
      this.#wake = undefined;
      wake();
    }
  }

  /**
   * Whether a piece of work may go ahead in this slice. The clock is read once every
   * WORK_PER_CLOCK_READ pieces: read at each, it cost an offline run a sixth of its speed.
   */
  #mayWork(): boolean {
    if (this.#sliceGiven) {
      this.#sliceGiven = false;
      this.#sliceOver = false;
      this.#sinceClockRead = 0;
      return true;
    }
    if (this.#sliceOver) return false;
    if (++this.#sinceClockRead < WORK_PER_CLOCK_READ) return true;
    this.#sinceClockRead = 0;
    this.#sliceOver = sliceSpent(this.#sliceMs);
    return !this.#sliceOver;
  }

  /**
   * Starts the group's next addresses, as many as its slots allow and the slice has time for
   * (an engine without I/O verifies as it is asked: 50 domains of 50 addresses started at once
   * were some 100 ms); the rest wait for the next slice.
   *
   * With I/O, a domain's free slots are filled in one turn once the group may start: the
   * engine's probe batcher puts the SMTP probes asked in one turn into one session, and a
   * group cut at a slice's end opened a second session to the same host (45 addresses, 10
   * recipients a session: 6 sessions instead of 5 on a loaded machine). One group is at most
   * perDomain verifications, whose synchronous part ends at their first lookup or probe.
   */
  #start(group: DomainGroup): void {
    const wholeGroup = this.#io.groupByDomain;
    let first = true;
    while (group.held < this.#perDomain && group.addresses.size > 0) {
      // Every piece of work counts towards the slice (the clock is read every
      // WORK_PER_CLOCK_READ); with I/O, only the group's first may stop it.
      if (!this.#mayWork() && (!wholeGroup || first)) {
        if (!group.deferred) {
          group.deferred = true;
          this.#deferred.push(group);
        }
        return;
      }
      first = false;
      const index = group.indexes.shift() as number;
      const address = group.addresses.shift() as string;
      this.#buffered--;
      this.#held++;
      group.held++;
      let verdict: Verdict | Promise<Verdict>;
      try {
        verdict = this.#verify(address, this.#verifyOptions);
      } catch (error) {
        this.#settle({ error }, group);
        continue;
      }
      if (verdict instanceof Promise) {
        verdict.then(
          (done) => this.#settle({ index, verdict: done }, group),
          (error: unknown) => this.#settle({ error }, group),
        );
      } else {
        this.#ready.push({ index, verdict });
        this.#readyGroups.push(group);
      }
    }
  }

  /** Gives free domain slots to the domains that have waited longest. */
  #admit(): void {
    // First the groups that waited for a slice, in the order they did.
    for (let waiting = this.#deferred.size; waiting > 0; waiting--) {
      const group = this.#deferred.shift() as DomainGroup;
      group.deferred = false;
      this.#start(group);
    }
    while (this.#activeDomains < this.#concurrency && this.#queued.size > 0) {
      const group = this.#queued.shift() as DomainGroup;
      group.active = true;
      this.#activeDomains++;
      this.#start(group);
    }
    this.#prefetch();
  }

  #add(address: unknown): void {
    const index = this.#nextIndex++;
    if (typeof address !== 'string') {
      this.#badInput = {
        error: new TypeError(
          `verifyMany expects strings; the address at index ${index} is not one`,
        ),
      };
      this.#exhausted = true;
      return;
    }
    const key = this.#io.groupByDomain ? domainKey(address) : '';
    let group = this.#groups.get(key);
    if (group === undefined) {
      group = {
        key,
        indexes: new Fifo(),
        addresses: new Fifo(),
        held: 0,
        active: false,
        deferred: false,
      };
      this.#groups.set(key, group);
    }
    group.indexes.push(index);
    group.addresses.push(address);
    this.#buffered++;
    if (group.active) this.#start(group);
    else if (group.addresses.size === 1) {
      this.#queued.push(group);
      if (this.#io.prefetch !== undefined) this.#toPrefetch.push(group);
    }
  }

  /**
   * Looks up the MX of domains still waiting for a slot, PREFETCH_PER_SLOT per domain slot:
   * while the current domains verify, the next ones' answers are on their way.
   */
  #prefetch(): void {
    const prefetch = this.#io.prefetch;
    if (prefetch === undefined) return;
    while (this.#prefetching < this.#concurrency * PREFETCH_PER_SLOT && this.#toPrefetch.size > 0) {
      const group = this.#toPrefetch.shift() as DomainGroup;
      const address = group.addresses.peek();
      if (group.active || address === undefined) continue;
      this.#prefetching++;
      const done = () => {
        this.#prefetching--;
        if (!this.#finished) this.#prefetch();
      };
      prefetch(address).then(done, done);
    }
  }

  /**
   * Reads ahead while the window has room; returns a promise while an async source has not
   * given its next item (one read at a time: the pending one, if any).
   */
  #fill(): Promise<void> | undefined {
    // What was read starts now, whether or not the source has more: a queued domain waited
    // for the window to fill (or the source to end) before, so a slow source started nothing.
    if (this.#reading !== undefined) {
      this.#admit();
      return this.#reading;
    }
    while (!this.#exhausted && this.#buffered < this.#lookahead) {
      let next: IteratorResult<unknown> | Promise<IteratorResult<unknown>>;
      try {
        next = this.#source.next();
      } catch (error) {
        this.#endReading(error);
        break;
      }
      if (next instanceof Promise) {
        // Caught here: the run may be delivering results, not waiting on this read, when the
        // source fails, and the error is the run's to throw after them.
        this.#reading = next.then(
          (result) => {
            this.#reading = undefined;
            if (result.done === true) this.#exhausted = true;
            else this.#add(result.value);
          },
          (error: unknown) => {
            this.#reading = undefined;
            this.#endReading(error);
          },
        );
        this.#admit();
        return this.#reading;
      }
      if (next.done === true) this.#exhausted = true;
      else this.#add(next.value);
    }
    this.#admit();
    return undefined;
  }

  /** The source failed: nothing more is read, and its error ends the run after the results. */
  #endReading(error: unknown): void {
    this.#badInput ??= { error };
    this.#exhausted = true;
  }

  /** The caller took a result: its slot frees, and the domain goes when it has nothing left. */
  #release(group: DomainGroup): void {
    this.#held--;
    group.held--;
    if (group.addresses.size > 0) {
      this.#start(group);
    } else if (group.held === 0 && group.active) {
      group.active = false;
      this.#activeDomains--;
      this.#groups.delete(group.key);
    }
  }
}

interface Reader {
  next(): IteratorResult<unknown> | Promise<IteratorResult<unknown>>;
  close(): Promise<void>;
}

/** One way to read any iterable or async iterable, item by item. */
function readerOf(addresses: Iterable<string> | AsyncIterable<string>): Reader {
  if (Symbol.asyncIterator in addresses) {
    const iterator = addresses[Symbol.asyncIterator]();
    return {
      next: () => iterator.next(),
      close: async () => {
        await iterator.return?.();
      },
    };
  }
  const iterator = addresses[Symbol.iterator]();
  return {
    next: () => iterator.next(),
    close: () => {
      iterator.return?.();
      return Promise.resolve();
    },
  };
}

/** The domain part as written, lower-cased: enough to keep one domain's addresses together. */
function domainKey(address: string): string {
  return address.slice(address.lastIndexOf('@') + 1).toLowerCase();
}
