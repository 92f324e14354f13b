import { lookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { raceAbort } from '../../dns/abortable.js';
import type { WebhookResponse, WebhookSender } from '../../ports/webhook.js';
import { isPublicAddress } from '../../smtp/target-policy.js';

export interface NodeWebhookOptions {
  /**
   * Lets callbacks reach loopback, private, link-local and other non-public addresses. Off by
   * default (the SSRF guard); tests and intranet deployments turn it on.
   */
  readonly allowPrivateNetworks?: boolean;
  /** Resolves a host name to all its addresses. Default: the system resolver (node:dns). */
  readonly resolve?: (host: string) => Promise<readonly string[]>;
  /** Extra trusted CA certificates for https callbacks (tests with a self-signed receiver). */
  readonly ca?: string | Buffer;
}

const systemResolve = async (host: string): Promise<readonly string[]> =>
  (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);

/**
 * Sends webhooks over node:http(s), guarded against SSRF: the callback host is resolved once,
 * every address it resolves to must be public (loopback, RFC 1918, link-local, CGNAT,
 * IPv4-mapped and NAT64 forms of them are refused, by `isPublicAddress`), and the connection
 * goes to the address that was checked (a `lookup` that answers it), so a second resolution
 * cannot rebind the name to our network. Redirects are statuses, never followed.
 *
 * @example
 * const service = createService({ engine, store, batch: { webhookSender: createNodeWebhookSender() } });
 */
export function createNodeWebhookSender(options: NodeWebhookOptions = {}): WebhookSender {
  const resolve = options.resolve ?? systemResolve;
  const allowPrivate = options.allowPrivateNetworks === true;
  return {
    async send(request) {
      let url: URL;
      try {
        url = new URL(request.url);
      } catch {
        return { kind: 'error', code: 'other', message: 'The callback URL does not parse.' };
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        return { kind: 'error', code: 'other', message: `Scheme ${url.protocol} is not sent to.` };
      }
      // WHATWG URL parsing has turned 2130706433, 0x7f.1 and 017700000001 into 127.0.0.1.
      const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
      let addresses: readonly string[];
      if (ipaddr.isValid(host)) addresses = [host];
      else {
        try {
          // The lookup counts against the attempt's deadline: a resolver that never answers
          // would otherwise hold the attempt (and its outbox lease) past it.
          addresses = await raceAbort(resolve(host), AbortSignal.timeout(request.timeoutMs));
        } catch (error) {
          return {
            kind: 'error',
            code: 'dns',
            message: `${host} did not resolve.`,
            detail: message(error),
          };
        }
      }
      const pinned = addresses[0];
      if (pinned === undefined) {
        return { kind: 'error', code: 'dns', message: `${host} has no address.` };
      }
      const refused =
        (request.allowPrivateNetworks ?? allowPrivate)
          ? undefined
          : addresses.find((a) => !isPublicAddress(a));
      if (refused !== undefined) {
        return {
          kind: 'error',
          code: 'forbidden_address',
          message: `${host} resolves to ${refused}, which is not a public address.`,
        };
      }
      return post(url, pinned, request, options.ca);
    },
  };
}

function post(
  url: URL,
  pinned: string,
  request: Parameters<WebhookSender['send']>[0],
  ca: string | Buffer | undefined,
): Promise<WebhookResponse> {
  const family = pinned.includes(':') ? 6 : 4;
  const pinnedLookup: LookupFunction = (_host, lookupOptions, callback) => {
    if (lookupOptions.all === true) {
      (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [
        { address: pinned, family },
      ]);
    } else callback(null, pinned, family);
  };
  return new Promise((resolve) => {
    let settled = false;
    const done = (response: WebhookResponse) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.signal?.removeEventListener('abort', onAbort);
      resolve(response);
    };
    const transport = url.protocol === 'https:' ? https : http;
    const req = transport.request(url, {
      method: 'POST',
      headers: { ...request.headers, 'content-length': String(Buffer.byteLength(request.body)) },
      lookup: pinnedLookup,
      agent: false,
      ...(ca === undefined ? {} : { ca }),
    });
    const timer = setTimeout(() => {
      done({
        kind: 'error',
        code: 'timeout',
        message: `No answer within ${request.timeoutMs} ms.`,
      });
      req.destroy();
    }, request.timeoutMs);
    const onAbort = () => {
      done({ kind: 'error', code: 'aborted', message: 'The delivery was stopped.' });
      req.destroy();
    };
    request.signal?.addEventListener('abort', onAbort, { once: true });
    if (request.signal?.aborted === true) onAbort();
    req.on('response', (response) => {
      done({ kind: 'status', status: response.statusCode ?? 0 });
      // The body says nothing we act on, and the socket is never reused (agent: false): close
      // it now. Reading it to its end let a receiver that never ends it hold the socket.
      response.on('error', () => undefined);
      req.destroy();
    });
    req.on('error', (error) => {
      const code = (error as NodeJS.ErrnoException).code;
      const connect = code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === 'EHOSTUNREACH';
      done({
        kind: 'error',
        code: connect ? 'connect' : 'other',
        // Node's words name addresses and TLS internals: the log's, not the API client's.
        message: connect
          ? 'The connection was refused or reset.'
          : 'The request failed before an answer.',
        detail: message(error),
      });
    });
    req.end(request.body);
  });
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
