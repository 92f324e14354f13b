import { createSocket, type Socket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import * as dnsPacket from 'dns-packet';

/** How the test server answers one name: records, an rcode, or silence. */
export type ZoneEntry =
  | { mx?: Array<{ exchange: string; preference: number }>; a?: string[]; aaaa?: string[] }
  | { rcode: 'NXDOMAIN' | 'SERVFAIL' | 'REFUSED' }
  | { silent: true };

export interface TestDnsServer {
  /** `127.0.0.1:port`, for Resolver.setServers. */
  readonly address: string;
  /** Every question received, as `TYPE name`. */
  readonly questions: string[];
  close(): Promise<void>;
}

/**
 * A real authoritative-style DNS server on UDP loopback (port picked by the OS), answering
 * from a zone table. An unknown name gets `otherwise`: NXDOMAIN unless told (a resolver that
 * lies answers every name).
 */
export async function startDnsServer(
  zone: Record<string, ZoneEntry>,
  otherwise: ZoneEntry = { rcode: 'NXDOMAIN' },
  /** Each answer leaves this long after its question: a resolver's latency, for benchmarks. */
  delayMs = 0,
): Promise<TestDnsServer> {
  const socket: Socket = createSocket('udp4');
  const questions: string[] = [];
  socket.on('message', (message, remote) => {
    let query: dnsPacket.Packet;
    try {
      query = dnsPacket.decode(message);
    } catch {
      return;
    }
    const question = query.questions?.[0];
    if (question === undefined) return;
    questions.push(`${question.type} ${question.name}`);
    const entry = zone[question.name.toLowerCase()] ?? otherwise;
    if ('silent' in entry) return;
    const rcode = 'rcode' in entry ? entry.rcode : 'NOERROR';
    const answers: dnsPacket.Answer[] = [];
    if (!('rcode' in entry)) {
      if (question.type === 'MX') {
        for (const mx of entry.mx ?? [])
          answers.push({ type: 'MX', name: question.name, ttl: 60, data: mx });
      } else if (question.type === 'A') {
        for (const ip of entry.a ?? [])
          answers.push({ type: 'A', name: question.name, ttl: 60, data: ip });
      } else if (question.type === 'AAAA') {
        for (const ip of entry.aaaa ?? [])
          answers.push({ type: 'AAAA', name: question.name, ttl: 60, data: ip });
      }
    }
    const response = dnsPacket.encode({
      id: query.id,
      type: 'response',
      flags: dnsPacket.AUTHORITATIVE_ANSWER | dnsPacket.RECURSION_DESIRED | rcodeFlag(rcode),
      questions: query.questions ?? [],
      answers,
    });
    if (delayMs > 0) setTimeout(() => socket.send(response, remote.port, remote.address), delayMs);
    else socket.send(response, remote.port, remote.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const { port } = socket.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    questions,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

function rcodeFlag(rcode: string): number {
  // The rcode lives in the low four bits of the flags word (RFC 1035 4.1.1).
  return { NOERROR: 0, SERVFAIL: 2, NXDOMAIN: 3, REFUSED: 5 }[rcode] ?? 0;
}
