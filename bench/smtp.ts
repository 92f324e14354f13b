/**
 * The SMTP table of `npm run bench`: N addresses over 100 domains, verified against nodemailer's
 * smtp-server on loopback, once with mailverdict's session reuse (verifyMany: one MX lookup
 * and one pipelined SMTP session per domain group) and once with one connection per address,
 * the way deep-email-validator and most peers probe (connect, EHLO, MAIL, RCPT, QUIT for
 * each address). Both use the same prober, server and connection limit.
 */
import { createNodeSmtp } from '../src/adapters/node/smtp.js';
import { mailHosts } from '../src/checks/mx.js';
import { createMemoryDns } from '../src/dns/memory-dns.js';
import { createEngine } from '../src/compose/engine.js';
import { startScriptedServer } from '../test/helpers/smtp-server.js';
import { seededRandom } from './corpus.js';

const ADDRESSES = Number(process.env.SMTP_BENCH_ADDRESSES ?? 10_000);
const DOMAINS = 100;
const CONNECTIONS = 20;

export interface SmtpRow {
  readonly name: string;
  readonly connections: number;
  readonly seconds: number;
  readonly verdicts: number;
}

export async function smtpBench(): Promise<SmtpRow[]> {
  const random = seededRandom(25);
  const domains = Array.from({ length: DOMAINS }, (_, i) => `company${i}.com`);
  const addresses = Array.from(
    { length: ADDRESSES },
    (_, i) => `user${i}@${domains[Math.floor(random() * DOMAINS)]}`,
  );
  // Two in three user mailboxes exist; the rest, and the catch-all probe, are unknown (550 5.1.1).
  const server = await startScriptedServer({
    rcpt: (address) => {
      const number = /^user(\d+)@/.exec(address)?.[1];
      return number !== undefined && Number(number) % 3 !== 2 ? 'accept' : undefined;
    },
  });
  const dns = createMemoryDns(
    Object.fromEntries(domains.map((domain) => [domain, [`mx.${domain}`]])),
    Object.fromEntries(domains.map((domain) => [`mx.${domain}`, ['127.0.0.1']])),
  );
  const smtpOptions = {
    port: server.port,
    allowPrivateNetworks: true,
    heloName: 'bench.example.net',
    mailFrom: 'verify@example.net',
    maxConnectionsPerHost: CONNECTIONS,
    maxConnections: CONNECTIONS,
  };
  // Connections opened and wall time of one mode; `pass` returns its definite answers.
  const measured = async (name: string, pass: () => Promise<number>): Promise<SmtpRow> => {
    const before = server.connections();
    const started = performance.now();
    const verdicts = await pass();
    const seconds = (performance.now() - started) / 1000;
    return { name, connections: server.connections() - before, seconds, verdicts };
  };
  const rows: SmtpRow[] = [];
  try {
    // mailverdict: verifyMany with the smtp method (MX lookup, session reuse, catch-all probe).
    const engine = createEngine({ dns, smtpOptions });
    rows.push(
      await measured('mailverdict verifyMany (session reuse, pipelining)', async () => {
        let verdicts = 0;
        for await (const { verdict } of engine.verifyMany(addresses, {
          method: 'smtp',
          concurrency: 500,
        })) {
          if (verdict.reason === 'accepted_email' || verdict.reason === 'rejected_email') {
            verdicts++;
          }
        }
        return verdicts;
      }),
    );

    // One connection per address, CONNECTIONS at a time, same prober and server.
    const perAddress = createNodeSmtp({
      ...smtpOptions,
      recipientsPerSession: 1,
      resolveHost: (host) => dns.addresses(host),
    });
    rows.push(
      await measured('one connection per address (how peers probe)', async () => {
        let verdicts = 0;
        let next = 0;
        const worker = async () => {
          while (next < addresses.length) {
            const address = addresses[next++] as string;
            const domain = address.slice(address.indexOf('@') + 1);
            const hosts = mailHosts(await dns.mx(domain)).map((host) => host.exchange);
            const report = await perAddress.probe({
              domain,
              hosts,
              recipients: [{ address, smtpUtf8: false }],
            });
            const answer = report.recipients[0]?.class;
            if (answer === 'accepted' || answer === 'rejected') verdicts++;
          }
        };
        await Promise.all(Array.from({ length: CONNECTIONS }, worker));
        return verdicts;
      }),
    );
  } finally {
    await server.close();
  }
  return rows;
}

export function printSmtpTable(rows: readonly SmtpRow[]): void {
  const single = rows[1];
  console.log(
    `\nSMTP: ${ADDRESSES.toLocaleString('en')} addresses over ${DOMAINS} domains, smtp-server on loopback, at most ${CONNECTIONS} connections\n`,
  );
  console.log(
    '| mode | connections | wall s | addresses/s | definite answers | vs one per address |',
  );
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const row of rows) {
    const speedup = single === undefined ? 1 : single.seconds / row.seconds;
    console.log(
      `| ${row.name} | ${row.connections.toLocaleString('en')} | ${row.seconds.toFixed(2)} | ${Math.round(ADDRESSES / row.seconds).toLocaleString('en')} | ${row.verdicts.toLocaleString('en')} | ${speedup.toFixed(1)}x |`,
    );
  }
}
