import { createServer } from 'node:net';

/**
 * A loopback TCP port free at the time of asking, for a server that must be told its port
 * (redis-server, Exim, Haraka), or as a port nothing listens on (a connection there is refused).
 * Another process can take it before the server binds it: callers retry a failed start on a
 * fresh port.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}
