import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine } from '../../src/compose/engine.js';
import { createMemoryDns } from '../../src/dns/memory-dns.js';

/**
 * Raw node:net servers that misbehave on purpose. Each test ends in a classified verdict,
 * ended by our own timers or checks (never by the server giving up), with no socket open.
 */
interface FaultServer {
  readonly port: number;
  readonly open: () => number;
  readonly connections: () => number;
  close(): Promise<void>;
}

const running: FaultServer[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((server) => server.close()));
});

async function faultServer(
  onSocket: (socket: Socket, index: number) => void,
): Promise<FaultServer> {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    onSocket(socket, connections++);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const fault: FaultServer = {
    port: (server.address() as AddressInfo).port,
    open: () => sockets.size,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
  running.push(fault);
  return fault;
}

/** A minimal well-behaved responder for the lines after whatever the fault is. */
function answerPolitely(socket: Socket, extensions = ['PIPELINING']): void {
  let buffer = '';
  socket.on('data', (chunk) => {
    buffer += chunk.toString('latin1');
    let newline: number;
    while ((newline = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, newline).trim().toUpperCase();
      buffer = buffer.slice(newline + 1);
      if (line.startsWith('EHLO')) {
        const lines = ['fault.test', ...extensions];
        socket.write(
          lines.map((text, i) => `250${i < lines.length - 1 ? '-' : ' '}${text}\r\n`).join(''),
        );
      } else if (line === 'QUIT') socket.end('221 bye\r\n');
      else socket.write('250 ok\r\n');
    }
  });
}

async function verifyAgainst(server: FaultServer, sessionDeadlineMs = 2_000) {
  const engine = createEngine({
    dns: createMemoryDns(
      { 'example.org': ['mx.example.net'] },
      { 'mx.example.net': ['127.0.0.1'] },
    ),
    smtpOptions: {
      port: server.port,
      allowPrivateNetworks: true,
      heloName: 'probe.example.net',
      mailFrom: 'verify@example.net',
      connectTimeoutMs: 500,
      bannerTimeoutMs: 400,
      commandTimeoutMs: 400,
      sessionDeadlineMs,
    },
  });
  const verdict = await engine.verify('ann@example.org', { method: 'smtp' });
  // The probe resolves only after its socket closed; give the server's side a moment.
  for (let i = 0; i < 50 && server.open() > 0; i++) await new Promise((r) => setTimeout(r, 20));
  expect(server.open()).toBe(0);
  return verdict;
}

describe('SMTP faults on loopback', () => {
  it('tarpit: a server that never greets ends in timeout', async () => {
    const server = await faultServer(() => {});
    const verdict = await verifyAgainst(server);
    expect([verdict.state, verdict.reason]).toEqual(['risky', 'timeout']);
  });

  it('slow drip: a banner one byte every 300 ms ends in timeout', async () => {
    const server = await faultServer((socket) => {
      const banner = '220 slow.fault.test ESMTP\r\n';
      let sent = 0;
      const timer = setInterval(() => {
        if (socket.destroyed || sent >= banner.length) return clearInterval(timer);
        socket.write(banner[sent++] as string);
      }, 300);
      socket.on('close', () => clearInterval(timer));
    });
    const verdict = await verifyAgainst(server);
    expect(verdict.reason).toBe('timeout');
  });

  it('slow replies: each inside the command timeout, together past the session deadline', async () => {
    const server = await faultServer((socket) => {
      const later = (text: string) =>
        setTimeout(() => !socket.destroyed && socket.write(text), 300);
      later('220 slow.fault.test ESMTP\r\n');
      socket.on('data', () => later('250 ok\r\n'));
    });
    const verdict = await verifyAgainst(server, 1_000);
    expect(verdict.reason).toBe('timeout');
  });

  it('garbage banner: a stream that is not SMTP is invalid_smtp', async () => {
    const server = await faultServer((socket) => socket.write('HTTP/1.1 400 Bad Request\r\n\r\n'));
    const verdict = await verifyAgainst(server);
    expect([verdict.state, verdict.reason]).toEqual(['risky', 'invalid_smtp']);
  });

  it('reset after EHLO: a dropped connection is no_connect, never rejected', async () => {
    const server = await faultServer((socket) => {
      socket.write('220 fault.test ESMTP\r\n');
      socket.once('data', () => socket.resetAndDestroy());
    });
    const verdict = await verifyAgainst(server);
    expect([verdict.state, verdict.reason]).toEqual(['risky', 'no_connect']);
  });

  it('a 20,000-line reply is cut off at the reply cap and is invalid_smtp', async () => {
    const server = await faultServer((socket) => {
      socket.write('220 fault.test ESMTP\r\n');
      socket.once('data', () => {
        const line = '250-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\r\n';
        socket.write(line.repeat(20_000));
      });
    });
    const verdict = await verifyAgainst(server);
    expect(verdict.reason).toBe('invalid_smtp');
  });

  it('garbage after STARTTLS: the TLS failure is retried in plain text and answered', async () => {
    const server = await faultServer((socket, index) => {
      socket.write('220 fault.test ESMTP\r\n');
      if (index > 0) return answerPolitely(socket, ['STARTTLS', 'PIPELINING']);
      socket.once('data', () => {
        socket.write('250-fault.test\r\n250 STARTTLS\r\n');
        socket.once('data', () => {
          socket.write('220 go ahead\r\n');
          // Our ClientHello gets text back instead of a ServerHello.
          socket.once('data', () => socket.write('this is not a TLS handshake\r\n'));
        });
      });
    });
    const verdict = await verifyAgainst(server);
    expect([verdict.state, verdict.reason]).toEqual(['risky', 'low_deliverability']);
    expect(server.connections()).toBe(2);
  });

  it('a 421 greeting from every host is unavailable, not rejected', async () => {
    const server = await faultServer((socket) => socket.end('421 fault.test too busy\r\n'));
    const verdict = await verifyAgainst(server);
    expect([verdict.state, verdict.reason]).toEqual(['risky', 'unavailable_smtp']);
  });

  it('nothing listening: connection refused is no_connect', async () => {
    const server = await faultServer(() => {});
    await server.close();
    running.splice(running.indexOf(server), 1);
    const verdict = await verifyAgainst({ ...server, open: () => 0 });
    expect([verdict.state, verdict.reason]).toEqual(['risky', 'no_connect']);
  });
});
