/**
 * The loopback DNS server of bench/dns-child.ts in a child process: a real resolver is
 * elsewhere, so its latency timers must not share the measured process's event loop.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

export interface DnsChild {
  /** `127.0.0.1:port`, for dnsOptions.servers. */
  readonly address: string;
  /** MX questions the server has answered so far. */
  mxQueries(): Promise<number>;
  stop(): Promise<unknown>;
}

/**
 * The address of `mx.domain<d>.com`, in the benchmarking range of RFC 2544 (198.18.0.0/15):
 * one domain in ten has its mail host in 198.18.0.0/24, the range an IP filter bench blocks.
 */
export function mailHostIp(d: number): string {
  return `198.18.${d % 10}.${Math.floor(d / 10) % 256}`;
}

/**
 * `domain0.com` ... `domain<domains-1>.com`, each with one MX (`mx.domain<d>.com`, whose A
 * record is `mailHostIp(d)`), answered after `latencyMs`.
 */
export async function startDnsChild(domains: number, latencyMs: number): Promise<DnsChild> {
  const child: ChildProcess = fork(
    fileURLToPath(new URL('./dns-child.ts', import.meta.url)),
    [JSON.stringify({ domains, latencyMs })],
    { execArgv: ['--import', 'tsx'] },
  );
  const [ready] = (await once(child, 'message')) as [{ address: string }];
  return {
    address: ready.address,
    async mxQueries() {
      child.send('count');
      const [reply] = (await once(child, 'message')) as [{ mxQueries: number }];
      return reply.mxQueries;
    },
    stop: () => {
      child.disconnect();
      return once(child, 'exit');
    },
  };
}
