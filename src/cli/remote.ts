import { ApiError, createClient, type Client, type MethodName } from '../client.js';
import type { ResultRecord } from '../format/shapes.js';
import { MAX_BATCH_EMAILS } from '../service/request-fields.js';
import type { EngineFlags } from './engine-options.js';
import { UsageError } from './exit-codes.js';

/** How `verify` and `batch` reach a running server instead of verifying here. */
export interface RemoteFlags {
  /** `--server`, or MAILVERDICT_SERVER. */
  readonly server?: string;
  /** `--api-key`, or MAILVERDICT_API_KEY. */
  readonly apiKey?: string;
  /** The key came as `--api-key` (not from the environment): then it needs a server. */
  readonly apiKeyFlag?: boolean;
}

/**
 * The flags that configure verification in this process: a server does its own DNS and SMTP,
 * so with `--server` each of them would be silently ignored. Named as the user typed them.
 */
const LOCAL_ONLY: readonly [keyof EngineFlags, string][] = [
  ['offline', '--offline'],
  ['dnsServer', '--dns-server'],
  ['dnsTimeout', '--dns-timeout'],
  ['helo', '--helo'],
  ['mailFrom', '--mail-from'],
  ['smtpPort', '--smtp-port'],
  ['smtpTimeout', '--smtp-timeout'],
  ['smtpProxy', '--smtp-proxy'],
  ['concurrency', '--concurrency'],
  ['allowPrivateNetworks', '--allow-private-networks'],
];

/**
 * A batch of the CLI is sent as jobs of at most MAX_BATCH_EMAILS addresses, and at most this
 * many bytes of JSON: half the server's default body limit (16 MiB), so that a list of long
 * addresses is not refused whole with a 413.
 */
export const MAX_CHUNK_BYTES = 8 * 1024 * 1024;

/**
 * The client of the server the flags name, or undefined to verify here. `--server` without a
 * key, `--api-key` without a server, a server URL that is not http(s), or a local-only flag
 * beside `--server` are usage errors.
 */
export function remoteOf(
  flags: RemoteFlags & EngineFlags,
  signal?: AbortSignal,
): Client | undefined {
  if (flags.server === undefined) {
    if (flags.apiKeyFlag === true) {
      throw new UsageError('--api-key is for --server: name the server to send it to');
    }
    return undefined;
  }
  const local = LOCAL_ONLY.find(([name]) => flags[name] !== undefined && flags[name] !== false);
  const canary = flags.dnsCanary === false ? '--no-dns-canary' : undefined;
  const misplaced = local?.[1] ?? canary;
  if (misplaced !== undefined) {
    throw new UsageError(
      `${misplaced} configures verification here, but --server (or MAILVERDICT_SERVER) sends the addresses to a server: drop one of them`,
    );
  }
  if (flags.apiKey === undefined || flags.apiKey === '') {
    throw new UsageError('--server needs an API key: --api-key, or MAILVERDICT_API_KEY');
  }
  try {
    return createClient({
      baseUrl: flags.server,
      apiKey: flags.apiKey,
      ...(signal === undefined ? {} : { signal }),
    });
  } catch (error) {
    throw new UsageError(`--server: ${(error as Error).message}`);
  }
}

/** One address's record from the server, with the position and text it was sent with. */
export interface RemoteResult {
  /** Position in the addresses read, from 0. */
  readonly position: number;
  readonly input: string;
  readonly record: ResultRecord;
}

export interface RemoteRunOptions {
  readonly method: MethodName;
  readonly signal?: AbortSignal;
  /** Called as the server reports progress: addresses with a result so far, in all. */
  readonly onProgress?: (processed: number) => void;
  /** How large a job may be (tests make them small). */
  readonly limits?: ChunkLimits;
  /** Names the address at a position for a message (`line 12`). */
  readonly whereIs?: (position: number) => string;
}

export interface ChunkLimits {
  readonly addresses: number;
  readonly bytes: number;
}

export const CHUNK_LIMITS: ChunkLimits = { addresses: MAX_BATCH_EMAILS, bytes: MAX_CHUNK_BYTES };

/**
 * Verifies `addresses` through the server: read in chunks (at most MAX_BATCH_EMAILS addresses
 * and MAX_CHUNK_BYTES), each submitted as a job (an idempotency key makes the client's retries
 * safe), waited for, and its records streamed back in input order, paired with what was sent.
 * Only one chunk's addresses are held at a time.
 */
export async function* remoteResults(
  client: Client,
  addresses: Iterable<string> | AsyncIterable<string>,
  options: RemoteRunOptions,
): AsyncGenerator<RemoteResult> {
  let done = 0;
  for await (const chunk of inChunks(addresses, options.limits)) {
    const { signal } = options;
    const job = await client
      .submitBatch(chunk, { method: options.method, ...(signal === undefined ? {} : { signal }) })
      .catch((error: unknown) => {
        throw refusedAddress(error, done, options.whereIs) ?? error;
      });
    const status = await client.waitForBatch(job.id, {
      ...(signal === undefined ? {} : { signal }),
      onProgress: (progress) => options.onProgress?.(done + progress.processed),
    });
    if (status.status === 'failed') {
      throw new Error(
        `the server's job ${job.id} failed${status.reason === undefined ? '' : `: ${status.reason}`}`,
      );
    }
    let offset = 0;
    for await (const record of client.batchResults(
      job.id,
      signal === undefined ? {} : { signal },
    )) {
      const input = chunk[offset];
      if (input === undefined) break;
      yield { position: done + offset, input, record };
      offset++;
    }
    if (offset !== chunk.length) {
      throw new Error(
        `the server's job ${job.id} gave ${offset} results for ${chunk.length} addresses`,
      );
    }
    done += chunk.length;
  }
}

const REFUSED_ITEM = /^emails\[(\d+)\] /;

/**
 * A submission refused for one of its addresses (`emails[12] contains a control character`),
 * as a usage error that says where that address is in the input; undefined for anything else.
 */
function refusedAddress(
  error: unknown,
  offset: number,
  whereIs: ((position: number) => string) | undefined,
): UsageError | undefined {
  if (!(error instanceof ApiError) || error.status !== 400 || whereIs === undefined) {
    return undefined;
  }
  const item = REFUSED_ITEM.exec(error.message);
  if (item === null) return undefined;
  const reason = error.message.slice(item[0].length);
  return new UsageError(
    `${whereIs(offset + Number(item[1]))}: the server refuses this address: it ${reason}`,
  );
}

/** The addresses in chunks a job takes, read as they are needed. */
export async function* inChunks(
  addresses: Iterable<string> | AsyncIterable<string>,
  limits: ChunkLimits = CHUNK_LIMITS,
): AsyncGenerator<string[]> {
  let chunk: string[] = [];
  let bytes = 0;
  for await (const address of addresses) {
    // As it travels: JSON-quoted, with its comma.
    const size = Buffer.byteLength(JSON.stringify(address)) + 1;
    if (chunk.length === limits.addresses || (chunk.length > 0 && bytes + size > limits.bytes)) {
      yield chunk;
      chunk = [];
      bytes = 0;
    }
    chunk.push(address);
    bytes += size;
  }
  if (chunk.length > 0) yield chunk;
}

/**
 * What a failure of the server means for the CLI: a refusal (4xx: a bad key, no credits, an
 * address the server will not take) is a usage error, exit 2, like the service's refusals in
 * the admin commands; anything else (unreachable, 5xx, a bad answer) fails the run, exit 4.
 */
export function remoteFailure(error: unknown): { usage: boolean; message: string } | undefined {
  if (!(error instanceof ApiError)) return undefined;
  if (error.status === 0) return { usage: false, message: `the server: ${error.message}` };
  const field = typeof error.details.field === 'string' ? ` (${error.details.field})` : '';
  return {
    usage: error.status < 500,
    message: `the server refused (${error.status} ${error.code}${field}): ${error.message}`,
  };
}
