import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/** What one connection has seen so far, for scripts that answer by state. */
export interface LineSession {
  /** 0 for the first connection, 1 for the second... */
  readonly connection: number;
  /** RCPT commands since the last MAIL FROM (the current transaction). */
  rcptsInTransaction: number;
  /** RCPT commands on this connection. */
  rcptsInSession: number;
  /** True once the client half-closed or closed its side. */
  clientEnded: boolean;
}

/**
 * Answers one command line (without CRLF, as sent): the reply text with its CRLFs, or
 * `undefined` to stay silent (a stall). QUIT, EHLO and MAIL FROM have defaults when the
 * script returns `null`.
 */
export type LineScript = (command: string, session: LineSession) => string | null | undefined;

export interface LineServer {
  readonly port: number;
  /** Every command received, in order, across connections. */
  readonly commands: string[];
  readonly connections: () => number;
  readonly open: () => number;
  /** Per connection: whether our client still had its side open when the 221 went out. */
  readonly openAtGoodbye: boolean[];
  close(): Promise<void>;
}

/**
 * A raw node:net SMTP server on 127.0.0.1 driven line by line by a script: for dialogues
 * nodemailer's smtp-server will not produce (stalls mid-group, per-transaction limits, texts of
 * other MTAs), so that each can be replayed exactly as a real server says it.
 */
export async function startLineServer(
  script: LineScript,
  options: { extensions?: readonly string[]; banner?: string; quitDelayMs?: number } = {},
): Promise<LineServer> {
  const extensions = options.extensions ?? ['PIPELINING', 'ENHANCEDSTATUSCODES'];
  const sockets = new Set<Socket>();
  const commands: string[] = [];
  const openAtGoodbye: boolean[] = [];
  let connections = 0;
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    const session: LineSession = {
      connection: connections++,
      rcptsInTransaction: 0,
      rcptsInSession: 0,
      clientEnded: false,
    };
    socket.on('close', () => sockets.delete(socket));
    socket.on('end', () => (session.clientEnded = true));
    socket.on('error', () => {});
    socket.write(options.banner ?? '220 line.test ESMTP\r\n');
    let buffer = '';
    socket.on('data', (chunk) => {
      buffer += chunk.toString('latin1');
      let newline: number;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, newline).replace(/\r$/, '');
        buffer = buffer.slice(newline + 1);
        commands.push(line);
        answer(line, socket, session);
      }
    });
  });

  function answer(line: string, socket: Socket, session: LineSession): void {
    const verb = line.slice(0, 4).toUpperCase();
    if (verb === 'MAIL') session.rcptsInTransaction = 0;
    if (verb === 'RCPT') {
      session.rcptsInTransaction++;
      session.rcptsInSession++;
    }
    const scripted = script(line, session);
    if (scripted === undefined) return;
    if (scripted !== null) {
      socket.write(scripted);
      return;
    }
    if (verb === 'EHLO') {
      const lines = ['line.test', ...extensions];
      socket.write(
        lines.map((text, i) => `250${i < lines.length - 1 ? '-' : ' '}${text}\r\n`).join(''),
      );
    } else if (verb === 'QUIT') {
      const goodbye = () => {
        openAtGoodbye[session.connection] = !session.clientEnded && !socket.destroyed;
        if (!socket.destroyed) socket.end('221 2.0.0 bye\r\n');
      };
      if (options.quitDelayMs === undefined) goodbye();
      else setTimeout(goodbye, options.quitDelayMs);
    } else {
      socket.write('250 2.0.0 ok\r\n');
    }
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    commands,
    connections: () => connections,
    open: () => sockets.size,
    openAtGoodbye,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
