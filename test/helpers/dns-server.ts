import { createSocket, type Socket } from 'node:dgram';
import {
  createServer,
  type AddressInfo,
  type Server as NetServer,
  type Socket as NetSocket,
} from 'node:net';
import * as dnsPacket from 'dns-packet';

/** The server socket's receive buffer: room for thousands of questions at once. */
const RECEIVE_BUFFER_BYTES = 4 << 20;

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
  /**
   * The most questions received and not yet answered at one time, since the start or the
   * last reset: the queries a client had in flight (with `delayMs`, every answer waits).
   */
  mostUnanswered(): number;
  resetMostUnanswered(): void;
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
  let unanswered = 0;
  let mostUnanswered = 0;
  const answer = (response: Buffer, port: number, address: string) => {
    unanswered--;
    socket.send(response, port, address);
  };
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
    mostUnanswered = Math.max(mostUnanswered, ++unanswered);
    if (delayMs > 0) setTimeout(() => answer(response, remote.port, remote.address), delayMs);
    else answer(response, remote.port, remote.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  // A batch asks hundreds of questions at once (MX lookups ahead, hosts' addresses for IP
  // filters): on a busy machine they wait for this process's turn, and the default buffer
  // (208 KB on Linux, some 200 questions) dropped the rest, which c-ares then timed out.
  // The kernel caps the size at net.core.rmem_max.
  socket.setRecvBufferSize(RECEIVE_BUFFER_BYTES);
  const { port } = socket.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    questions,
    mostUnanswered: () => mostUnanswered,
    resetMostUnanswered: () => void (mostUnanswered = unanswered),
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

function rcodeFlag(rcode: string): number {
  // The rcode lives in the low four bits of the flags word (RFC 1035 4.1.1).
  return { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 }[rcode] ?? 0;
}

/** One question as a scripted server received it. */
export interface ScriptedQuestion {
  readonly name: string;
  readonly type: string;
  readonly transport: 'udp' | 'tcp';
}

/**
 * What a scripted server sends back for one question: records and an rcode, with knobs for
 * misbehaving servers. `null` is silence.
 */
export interface ScriptedReply {
  readonly rcode?: 'NOERROR' | 'SERVFAIL' | 'NXDOMAIN' | 'REFUSED' | 'NOTIMP' | 'FORMERR';
  readonly answers?: dnsPacket.Answer[];
  readonly authorities?: dnsPacket.Answer[];
  /** Over UDP, send only the header and question with the TC bit (RFC 1035 4.2.1): ask TCP. */
  readonly truncateUdp?: boolean;
  /** Answer with another id than the question's (a spoofed or confused reply). */
  readonly wrongId?: boolean;
  /** Answer about another name than the one asked. */
  readonly questionName?: string;
  /** Send the answer this long after the question (a slow server). */
  readonly delayMs?: number;
}

export interface ScriptedDnsServer {
  /** `127.0.0.1:port` or `[::1]:port`, for Resolver.setServers. */
  readonly address: string;
  readonly port: number;
  /** Every question received, in order. */
  readonly questions: ScriptedQuestion[];
  close(): Promise<void>;
}

/**
 * A DNS server on loopback, UDP and TCP on one OS-picked port, that answers each question
 * with what `script` says: for the cases a zone table cannot express (truncation, wrong ids
 * or questions, TTLs, many records).
 */
export async function startScriptedDnsServer(
  script: (question: ScriptedQuestion) => ScriptedReply | null,
  host: '127.0.0.1' | '::1' = '127.0.0.1',
  /** `false`: no TCP listener, so a truncated answer cannot be followed. */
  tcpToo = true,
): Promise<ScriptedDnsServer> {
  const questions: ScriptedQuestion[] = [];
  const respond = (
    message: Buffer,
    transport: 'udp' | 'tcp',
  ): { response: Buffer; delayMs: number } | undefined => {
    let query: dnsPacket.Packet;
    try {
      query = dnsPacket.decode(message);
    } catch {
      return undefined;
    }
    const asked = query.questions?.[0];
    if (asked === undefined) return undefined;
    const question = { name: asked.name, type: asked.type, transport };
    questions.push(question);
    const reply = script(question);
    if (reply === null) return undefined;
    const truncated = transport === 'udp' && reply.truncateUdp === true;
    const response = dnsPacket.encode({
      id: reply.wrongId === true ? ((query.id ?? 0) + 1) & 0xffff : (query.id ?? 0),
      type: 'response',
      flags:
        dnsPacket.AUTHORITATIVE_ANSWER |
        dnsPacket.RECURSION_DESIRED |
        (truncated ? dnsPacket.TRUNCATED_RESPONSE : 0) |
        rcodeFlag(reply.rcode ?? 'NOERROR'),
      questions: [{ ...asked, name: reply.questionName ?? asked.name }],
      answers: truncated ? [] : (reply.answers ?? []),
      authorities: truncated ? [] : (reply.authorities ?? []),
    });
    return { response, delayMs: reply.delayMs ?? 0 };
  };
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const later = (delayMs: number, send: () => void) => {
    if (delayMs <= 0) return send();
    const timer = setTimeout(() => {
      timers.delete(timer);
      send();
    }, delayMs);
    timers.add(timer);
  };

  const udp: Socket = createSocket(host === '::1' ? 'udp6' : 'udp4');
  udp.on('message', (message, remote) => {
    const answer = respond(message, 'udp');
    if (answer !== undefined) {
      later(answer.delayMs, () => udp.send(answer.response, remote.port, remote.address));
    }
  });
  await new Promise<void>((resolve) => udp.bind(0, host, resolve));
  const { port } = udp.address() as AddressInfo;

  // RFC 1035 4.2.2: over TCP each message is preceded by its two-octet length.
  const sockets = new Set<NetSocket>();
  const tcp: NetServer = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 2) {
        const length = buffered.readUInt16BE(0);
        if (buffered.length < 2 + length) break;
        const answer = respond(buffered.subarray(2, 2 + length), 'tcp');
        buffered = buffered.subarray(2 + length);
        if (answer !== undefined) {
          const prefix = Buffer.alloc(2);
          prefix.writeUInt16BE(answer.response.length);
          later(answer.delayMs, () => {
            if (!socket.destroyed) socket.write(Buffer.concat([prefix, answer.response]));
          });
        }
      }
    });
  });
  // The TCP port is the UDP one; were it taken, the server would still answer over UDP.
  await new Promise<void>((resolve) => {
    if (!tcpToo) return resolve();
    tcp.once('error', () => resolve());
    tcp.listen(port, host, () => resolve());
  });
  return {
    address: host === '::1' ? `[::1]:${port}` : `127.0.0.1:${port}`,
    port,
    questions,
    async close() {
      for (const timer of timers) clearTimeout(timer);
      for (const socket of sockets) socket.destroy();
      await Promise.all([
        new Promise<void>((resolve) => udp.close(() => resolve())),
        new Promise<void>((resolve) => (tcp.listening ? tcp.close(() => resolve()) : resolve())),
      ]);
    },
  };
}
