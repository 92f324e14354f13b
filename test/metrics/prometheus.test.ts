import { describe, expect, it } from 'vitest';
import { createPrometheusMetrics } from '../../src/adapters/prometheus/metrics.js';
import { createCachedDns } from '../../src/dns/cached-dns.js';
import { createMemoryDns } from '../../src/dns/memory-dns.js';
import { createEngine } from '../../src/compose/engine.js';
import { createService } from '../../src/compose/service.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { createMemorySmtp, createMemoryWebhookSender } from '../../src/testing.js';
import { parseSamples, valueOf } from './prometheus-text.js';

function world() {
  const metrics = createPrometheusMetrics({ processMetrics: false });
  const zones = createMemoryDns({ 'example.org': ['mx.example.org'] });
  const dns = createCachedDns(zones, { observer: metrics.observer });
  const smtp = createMemorySmtp({ mailboxes: { 'ann@example.org': 'accepted' } });
  const webhooks = createMemoryWebhookSender();
  const engine = createEngine({ dns, smtp, observer: metrics.observer });
  const store = createMemoryStore();
  // The engine's observer reaches the service built over it: no second wiring.
  const service = createService({ engine, store, batch: { webhookSender: webhooks } });
  return { metrics, zones, engine, service, store, webhooks };
}

describe('Prometheus metrics through the observer port', () => {
  it('counts verdicts, DNS queries and hits, SMTP sessions, a batch job and its webhook', async () => {
    const { metrics, zones, engine, service, store, webhooks } = world();

    const verdicts = [
      await engine.verify('ann@example.org', { method: 'smtp' }),
      await engine.verify('bob@example.org', { method: 'standard' }),
      await engine.verify('nobody@nowhere-at-all.org', { method: 'standard' }),
    ];
    expect(verdicts.map((verdict) => verdict.state)).toEqual([
      'deliverable',
      'deliverable',
      'undeliverable',
    ]);
    let samples = parseSamples(await metrics.render());
    for (const { method, state, reason } of verdicts) {
      expect(valueOf(samples, 'mailverdict_verifications_total', { method, state, reason })).toBe(
        1,
      );
    }
    expect(valueOf(samples, 'mailverdict_verifications_total')).toBe(3);
    // example.org once, nowhere-at-all.org once; bob@example.org's MX came from the cache.
    expect(zones.queries).toEqual(['example.org', 'nowhere-at-all.org']);
    expect(valueOf(samples, 'mailverdict_dns_queries_total', { kind: 'mx' })).toBe(2);
    expect(valueOf(samples, 'mailverdict_dns_cache_hits_total', { kind: 'mx' })).toBe(1);
    expect(valueOf(samples, 'mailverdict_smtp_sessions_total', { outcome: 'accepted' })).toBe(1);
    expect(valueOf(samples, 'mailverdict_smtp_sessions_total')).toBe(1);

    const account = await service.admin.createAccount({ email: 'o@example.org', credits: 100 });
    const caller = { accountId: account.id };
    await service.submitBatch(caller, {
      emails: ['a@example.org', 'b@example.org', 'c@example.org', 'not an address'],
      method: 'quick',
      callbackUrl: 'https://hooks.example.com/done',
    });
    await service.batchWork.idle();
    await service.batchWork.deliverWebhooks();
    expect(webhooks.sent).toHaveLength(1);

    samples = parseSamples(await metrics.render());
    expect(valueOf(samples, 'mailverdict_batch_addresses_processed_total')).toBe(4);
    expect(valueOf(samples, 'mailverdict_batch_jobs_total', { status: 'started' })).toBe(1);
    expect(valueOf(samples, 'mailverdict_batch_jobs_total', { status: 'completed' })).toBe(1);
    expect(valueOf(samples, 'mailverdict_batch_jobs_total', { status: 'failed' })).toBe(0);
    expect(valueOf(samples, 'mailverdict_webhook_deliveries_total', { outcome: 'delivered' })).toBe(
      1,
    );
    // The job's four verdicts join the three: counted once each, across scrapes.
    expect(valueOf(samples, 'mailverdict_verifications_total')).toBe(7);
    expect(valueOf(samples, 'mailverdict_verifications_total', { method: 'quick' })).toBe(4);
    // No label carries an account, an address or a domain.
    const text = await metrics.render();
    expect(text).not.toContain(account.id);
    expect(text).not.toContain('example.org');
    expect(text).not.toContain('nowhere-at-all');
    await service.stop();
    await store.close();
  });

  it('counts a webhook that fails and will be retried, and one given up', async () => {
    const metrics = createPrometheusMetrics({ processMetrics: false });
    let status = 500;
    const webhooks = createMemoryWebhookSender(() => ({ kind: 'status', status }));
    const store = createMemoryStore();
    const service = createService({
      engine: createEngine({ offline: true, observer: metrics.observer }),
      store,
      batch: { webhookSender: webhooks, webhookRetryScheduleMs: [0] },
    });
    const account = await service.admin.createAccount({ email: 'o@example.org', credits: 10 });
    await service.submitBatch(
      { accountId: account.id },
      { emails: ['a@example.org'], method: 'quick', callbackUrl: 'https://hooks.example.com/' },
    );
    await service.batchWork.idle();
    await service.batchWork.deliverWebhooks();
    status = 503;
    await service.batchWork.deliverWebhooks();
    const samples = parseSamples(await metrics.render());
    expect(webhooks.sent).toHaveLength(2);
    expect(valueOf(samples, 'mailverdict_webhook_deliveries_total', { outcome: 'retrying' })).toBe(
      1,
    );
    expect(valueOf(samples, 'mailverdict_webhook_deliveries_total', { outcome: 'failed' })).toBe(1);
    await service.stop();
    await store.close();
  });

  it('tells an observer of every verdict of verify, verifySync and verifyMany', async () => {
    const engine = createEngine({ offline: true });
    expect(engine.observer).toBeUndefined();
    const seen: string[] = [];
    const observed = createEngine({
      offline: true,
      observer: { onVerdict: ({ reason }) => seen.push(reason) },
    });
    observed.verifySync('a@example.org', { method: 'quick' });
    const many = [];
    for await (const item of observed.verifyMany(['b@example.org', 'nope'], { method: 'quick' })) {
      many.push(item);
    }
    expect(many).toHaveLength(2);
    await observed.verify('c@example.org', { method: 'quick' });
    expect(seen).toHaveLength(4);
  });
});
