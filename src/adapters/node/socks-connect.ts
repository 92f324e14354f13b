import { Socket } from 'node:net';
import { SocksClient } from 'socks';
import type { ProxySpec } from '../../smtp/proxy-url.js';

/** Simultaneous sessions through one proxy; each proxy is one egress IP, as polite as one MTA. */
export const MAX_CONNECTIONS_PER_PROXY = 10;

/** A socket to the target through a proxy, and the release of its proxy slot (after close). */
export type ProxyOpen =
  | { readonly kind: 'connected'; readonly socket: Socket; readonly release: () => void }
  | { readonly kind: 'failed'; readonly failure: 'no_connect' | 'timeout' };

/** A session waiting for a proxy slot; `exclude` is the proxy that just failed it, or -1. */
interface Waiter {
  readonly exclude: number;
  readonly grant: (index: number) => void;
}

/** What went wrong, and whether it is the proxy's own fault (another proxy may do better). */
interface Attempt {
  readonly failure: 'no_connect' | 'timeout';
  readonly proxyFault: boolean;
}

/**
 * SOCKS5 egress for SMTP probes (port 25 is blocked on most clouds). Each session takes a slot
 * on the least busy proxy under `perProxy` (ties go round robin, so idle proxies share evenly),
 * waiting when all are full. The target is always the IP literal the caller checked: the proxy
 * never resolves a name. A failure of the proxy itself (unreachable, auth refused, general
 * failure, not allowed by its rules) is tried once more on another proxy; a refusal about the
 * target (network or host unreachable, connection refused) is the target's answer.
 */
export class ProxyPool {
  readonly #proxies: readonly ProxySpec[];
  readonly #perProxy: number;
  readonly #busy: number[];
  #next = 0;
  readonly #waiting: Waiter[] = [];

  constructor(proxies: readonly ProxySpec[], perProxy: number) {
    if (proxies.length === 0) throw new RangeError('a proxy pool needs a proxy');
    if (!(perProxy >= 1)) throw new RangeError('maxConnectionsPerProxy must be >= 1');
    this.#proxies = proxies;
    this.#perProxy = perProxy;
    this.#busy = proxies.map(() => 0);
  }

  /**
   * Connects to `address`:`port` through a proxy within `timeoutMs` per attempt. Rejects only
   * when `signal` aborts; every other outcome is a value, and a failed attempt leaves no socket.
   */
  async open(
    address: string,
    port: number,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<ProxyOpen> {
    let exclude = -1;
    for (let tries = 0; ; tries++) {
      const index = await this.#acquire(exclude, signal);
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        this.#busy[index] = (this.#busy[index] ?? 1) - 1;
        this.#serve();
      };
      const result = await connectVia(
        this.#proxies[index] as ProxySpec,
        address,
        port,
        timeoutMs,
        signal,
      ).catch((error: unknown) => {
        release();
        throw error;
      });
      if (result instanceof Socket) return { kind: 'connected', socket: result, release };
      release();
      if (!result.proxyFault || tries >= 1 || this.#proxies.length < 2) {
        return { kind: 'failed', failure: result.failure };
      }
      exclude = index;
    }
  }

  #acquire(exclude: number, signal: AbortSignal | undefined): Promise<number> {
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        exclude,
        grant: (index: number) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(index);
        },
      };
      const onAbort = () => {
        const at = this.#waiting.indexOf(waiter);
        if (at >= 0) this.#waiting.splice(at, 1);
        reject(signal?.reason as Error);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiting.push(waiter);
      this.#serve();
    });
  }

  /** Grants waiters, first come first served, each the least busy proxy it may use. */
  #serve(): void {
    for (let i = 0; i < this.#waiting.length;) {
      const waiter = this.#waiting[i] as Waiter;
      const index = this.#leastBusy(waiter.exclude);
      if (index < 0) {
        i++;
        continue;
      }
      this.#waiting.splice(i, 1);
      this.#busy[index] = (this.#busy[index] ?? 0) + 1;
      waiter.grant(index);
    }
  }

  #leastBusy(exclude: number): number {
    const count = this.#proxies.length;
    let best = -1;
    for (let step = 0; step < count; step++) {
      const index = (this.#next + step) % count;
      const busy = this.#busy[index] ?? 0;
      if (index === exclude || busy >= this.#perProxy) continue;
      if (best < 0 || busy < (this.#busy[best] ?? 0)) best = index;
    }
    if (best >= 0) this.#next = (best + 1) % count;
    return best;
  }
}

/** RFC 1928 6 replies that speak about the target, not the proxy: 3, 4, 5 and 6 (TTL expired). */
const TARGET_REPLIES = ['NetworkUnreachable', 'HostUnreachable', 'ConnectionRefused', 'TTLExpired'];

/**
 * One SOCKS5 CONNECT. We own the TCP socket to the proxy (the socks package negotiates over it)
 * so that our timer and the caller's signal can destroy it at any step.
 */
function connectVia(
  proxy: ProxySpec,
  address: string,
  port: number,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<Socket | Attempt> {
  return new Promise((resolve, reject) => {
    const socket = new Socket();
    let settled = false;
    const timer = setTimeout(() => end({ failure: 'timeout', proxyFault: true }), timeoutMs);
    const onAbort = () => end(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });

    /** Settles once; on failure only after the socket closed, so no socket outlives the call. */
    function end(outcome: Socket | Attempt | unknown): void {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      const settle = () => {
        if (outcome instanceof Socket) resolve(outcome);
        else if (isAttempt(outcome)) resolve(outcome);
        else reject(outcome as Error);
      };
      if (outcome instanceof Socket) return settle();
      socket.removeAllListeners('connect');
      if (socket.destroyed) settle();
      else {
        socket.once('close', settle);
        socket.destroy();
      }
    }

    socket.on('error', () => end({ failure: 'no_connect', proxyFault: true }));
    socket.once('connect', () => {
      socket.removeAllListeners('error');
      SocksClient.createConnection({
        command: 'connect',
        proxy: {
          host: proxy.host,
          port: proxy.port,
          type: 5,
          ...(proxy.auth === undefined
            ? {}
            : { userId: proxy.auth.user, password: proxy.auth.password }),
        },
        // An IP literal, checked by the target policy: sent as ATYP 1 or 4, never a name.
        destination: { host: address, port },
        existing_socket: socket,
        // Our own timer rules; this one only must not fire first.
        timeout: timeoutMs + 1_000,
      }).then(
        () => end(socket),
        (error: unknown) => {
          const message = error instanceof Error ? error.message : '';
          const aboutTarget = TARGET_REPLIES.some((text) => message.includes(text));
          end({ failure: 'no_connect', proxyFault: !aboutTarget });
        },
      );
      // The socks client handles errors until it settles; after that, the session's do.
      socket.on('error', () => {});
    });
    socket.connect({ host: proxy.host, port: proxy.port });
  });
}

function isAttempt(value: unknown): value is Attempt {
  return typeof value === 'object' && value !== null && 'proxyFault' in value;
}
