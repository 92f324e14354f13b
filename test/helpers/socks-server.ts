import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

export interface SocksServerOptions {
  /** Require RFC 1929 username/password with these credentials. Default: no authentication. */
  readonly auth?: { readonly user: string; readonly password: string };
  /** `connect` relays; `refuse` answers CONNECT with this RFC 1928 REP code; `stall` never greets. */
  readonly mode?: 'connect' | { readonly refuse: number } | 'stall';
}

/** One CONNECT request as the proxy received it. */
export interface ConnectTarget {
  /** RFC 1928 ATYP: 1 IPv4, 3 domain name, 4 IPv6. */
  readonly atyp: number;
  readonly host: string;
  readonly port: number;
}

export interface SocksServer {
  readonly port: number;
  /** Client connections accepted so far. */
  readonly connections: () => number;
  /** Sockets open now (clients and their relays). */
  readonly open: () => number;
  /** Most CONNECT sessions in progress at one time. */
  readonly maxConcurrent: () => number;
  readonly targets: ConnectTarget[];
  /** Authentications refused. */
  readonly authFailures: () => number;
  close(): Promise<void>;
}

/**
 * A minimal SOCKS5 server on 127.0.0.1 (RFC 1928 CONNECT, RFC 1929 username/password), relaying
 * to whatever target it is asked for: enough to test a client, nothing more.
 */
export async function startSocksServer(options: SocksServerOptions = {}): Promise<SocksServer> {
  const mode = options.mode ?? 'connect';
  const sockets = new Set<Socket>();
  /** Clients between their CONNECT request and their leaving (end or close). */
  const active = new Set<Socket>();
  const targets: ConnectTarget[] = [];
  let connections = 0;
  let maxConcurrent = 0;
  let authFailures = 0;

  const server: Server = createServer((client) => {
    connections++;
    sockets.add(client);
    client.on('close', () => {
      sockets.delete(client);
      active.delete(client);
    });
    client.on('end', () => active.delete(client));
    client.on('error', () => {});
    // A stalling proxy reads (so it sees the client leave) but never answers.
    if (mode === 'stall') {
      client.resume();
      return;
    }
    let buffer = Buffer.alloc(0);
    let stage: 'greeting' | 'auth' | 'request' | 'connecting' | 'relay' = 'greeting';
    const onData = (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const used = step();
        if (used === 0) return;
        buffer = buffer.subarray(used);
        if (stage === 'connecting') return;
      }
    };
    client.on('data', onData);

    /** Consumes one message from `buffer`; 0 when it is not complete yet. */
    function step(): number {
      if (stage === 'connecting' || stage === 'relay') return 0;
      if (stage === 'greeting') {
        if (buffer.length < 2 || buffer.length < 2 + (buffer[1] ?? 0)) return 0;
        const methods = [...buffer.subarray(2, 2 + (buffer[1] ?? 0))];
        const want = options.auth === undefined ? 0x00 : 0x02;
        if (!methods.includes(want)) {
          client.end(Buffer.from([5, 0xff]));
          return 0;
        }
        client.write(Buffer.from([5, want]));
        stage = want === 0x02 ? 'auth' : 'request';
        return 2 + (buffer[1] ?? 0);
      }
      if (stage === 'auth') {
        const ulen = buffer[1] ?? 0;
        if (buffer.length < 3 + ulen) return 0;
        const plen = buffer[2 + ulen] ?? 0;
        if (buffer.length < 3 + ulen + plen) return 0;
        const user = buffer.subarray(2, 2 + ulen).toString('utf8');
        const password = buffer.subarray(3 + ulen, 3 + ulen + plen).toString('utf8');
        if (user !== options.auth?.user || password !== options.auth.password) {
          authFailures++;
          client.end(Buffer.from([1, 1]));
          return 0;
        }
        client.write(Buffer.from([1, 0]));
        stage = 'request';
        return 3 + ulen + plen;
      }
      // request: VER CMD RSV ATYP DST.ADDR DST.PORT
      if (buffer.length < 5) return 0;
      const atyp = buffer[3] ?? 0;
      const addressLength = atyp === 1 ? 4 : atyp === 4 ? 16 : 1 + (buffer[4] ?? 0);
      const total = 4 + addressLength + 2;
      if (buffer.length < total) return 0;
      const raw = buffer.subarray(4, 4 + addressLength);
      const host =
        atyp === 1
          ? [...raw].join('.')
          : atyp === 4
            ? (raw.toString('hex').match(/.{4}/g) ?? []).join(':')
            : raw.subarray(1).toString('utf8');
      const port = buffer.readUInt16BE(4 + addressLength);
      targets.push({ atyp, host, port });
      // Counted at the request, a few round trips after connecting: by then the server has
      // seen any earlier client of the same slot leave, so the count is the client's own.
      active.add(client);
      maxConcurrent = Math.max(maxConcurrent, active.size);
      const reply = (rep: number) => Buffer.from([5, rep, 0, 1, 0, 0, 0, 0, 0, 0]);
      if (typeof mode === 'object') {
        client.end(reply(mode.refuse));
        return 0;
      }
      if (buffer[1] !== 1 || atyp === 3) {
        // Only CONNECT to an address: a name here would mean the client let us resolve it.
        client.end(reply(atyp === 3 ? 8 : 7));
        return 0;
      }
      stage = 'connecting';
      const upstream = connect({ host, port });
      sockets.add(upstream);
      upstream.on('close', () => {
        sockets.delete(upstream);
        client.destroy();
      });
      upstream.on('error', () => {
        if (stage !== 'relay') client.end(reply(5));
      });
      client.on('close', () => upstream.destroy());
      upstream.once('connect', () => {
        stage = 'relay';
        client.removeListener('data', onData);
        client.write(reply(0));
        if (buffer.length > 0) upstream.write(buffer);
        client.pipe(upstream);
        upstream.pipe(client);
      });
      return total;
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => connections,
    open: () => sockets.size,
    maxConcurrent: () => maxConcurrent,
    targets,
    authFailures: () => authFailures,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
