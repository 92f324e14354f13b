/**
 * A loopback DNS server in its own process, for benchmarks: a real resolver is elsewhere,
 * so its latency timers must not share our event loop. Started by `startDnsChild`.
 */
import { startDnsServer } from '../test/helpers/dns-server.js';
import { mailHostIp } from './dns-process.js';

const { domains, latencyMs } = JSON.parse(process.argv[2] as string) as {
  domains: number;
  latencyMs: number;
};
const zone: Parameters<typeof startDnsServer>[0] = {};
for (let d = 0; d < domains; d++) {
  zone[`domain${d}.com`] = { mx: [{ exchange: `mx.domain${d}.com`, preference: 10 }] };
  zone[`mx.domain${d}.com`] = { a: [mailHostIp(d)] };
}
const server = await startDnsServer(zone, { rcode: 'NXDOMAIN' }, latencyMs);
process.send?.({ address: server.address });
process.on('message', (message) => {
  if (message === 'count') {
    process.send?.({ mxQueries: server.questions.filter((q) => q.startsWith('MX ')).length });
  }
});
process.on('disconnect', () => void server.close().then(() => process.exit(0)));
