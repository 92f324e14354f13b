import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  verifyWebhook,
  WebhookVerificationError,
  type BatchEvent as ClientBatchEvent,
} from '../../src/client.js';
import { createEngine } from '../../src/compose/engine.js';
import type { BatchEvent as ServiceBatchEvent } from '../../src/service/batch/webhooks.js';
import { createMemoryStore, createService } from '../../src/service.js';
import { createMemoryWebhookSender } from '../../src/testing.js';
import { fcParams } from '../helpers/fast-check.js';

/**
 * verifyWebhook against the standardwebhooks library (the reference the README tells
 * receivers to use): both accept what the other signs, and both refuse the same tampering,
 * staleness and foreign signatures.
 */
const NOW_MS = 1_800_000_000_000;
const NOW_S = NOW_MS / 1000;
const now = () => NOW_MS;

const event = (id = 'batch_1'): ClientBatchEvent => ({
  event: 'batch.completed',
  id,
  status: 'completed',
  total_emails: 3,
  processed: 3,
  valid: 2,
  invalid: 1,
  risky: 0,
  download_url: `https://api.example.com/v1/verify/${id}/results`,
  completed_at: '2027-01-15T08:00:00.000Z',
});

const secretOf = (bytes: Uint8Array) => `whsec_${Buffer.from(bytes).toString('base64')}`;

/** Headers as standardwebhooks signs them, for `timestamp` in Unix seconds. */
function signed(secret: string, id: string, timestamp: number, body: string) {
  const signature = new Webhook(secret).sign(id, new Date(timestamp * 1000), body);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signature,
  };
}

/** What our verifier and the library say of one delivery: accepted, or refused. */
async function verdicts(body: string, headers: Record<string, string>, secret: string) {
  const ours = await verifyWebhook(body, headers, secret).then(
    () => 'accepted',
    (error: unknown) => (error instanceof WebhookVerificationError ? 'refused' : String(error)),
  );
  let theirs: string;
  try {
    new Webhook(secret).verify(body, headers);
    theirs = 'accepted';
  } catch {
    theirs = 'refused';
  }
  return { ours, theirs };
}

const secretBytes = fc.uint8Array({ minLength: 1, maxLength: 64 });
const messageId = fc.stringMatching(/^msg_[\w-]{1,40}$/);
const text = fc.string({ unit: 'grapheme', maxLength: 200 });

describe('verifyWebhook', () => {
  it('accepts what standardwebhooks signs, and returns the typed event', async () => {
    await fc.assert(
      fc.asyncProperty(
        secretBytes,
        messageId,
        fc.integer({ min: -300, max: 300 }),
        text,
        async (key, id, offset, reason) => {
          const secret = secretOf(key);
          const body = JSON.stringify({ ...event(), reason });
          const headers = signed(secret, id, NOW_S + offset, body);
          expect(await verifyWebhook(body, headers, secret, { now })).toEqual({
            ...event(),
            reason,
          });
          // The raw bytes as received, and Fetch's Headers, alike.
          const bytes = new TextEncoder().encode(body);
          expect((await verifyWebhook(bytes, new Headers(headers), secret, { now })).id).toBe(
            'batch_1',
          );
        },
      ),
      fcParams(),
    );
  });

  it('refuses what standardwebhooks refuses: tampered bodies, ids, timestamps, signatures', async () => {
    await fc.assert(
      fc.asyncProperty(
        secretBytes,
        secretBytes,
        messageId,
        fc.integer({ min: 0, max: 3 }),
        async (key, otherKey, id, tamper) => {
          fc.pre(Buffer.compare(Buffer.from(key), Buffer.from(otherKey)) !== 0);
          const secret = secretOf(key);
          const body = JSON.stringify(event());
          // Real time: the library reads the clock itself. 200 s of margin either way.
          const nowS = Math.floor(Date.now() / 1000);
          const headers = signed(secret, id, nowS, body);
          const cases: [string, Record<string, string>, string][] = [
            [body.replace('"valid":2', '"valid":3'), headers, secret],
            [body, { ...headers, 'webhook-id': `${id}x` }, secret],
            [body, { ...headers, 'webhook-timestamp': String(nowS - 1) }, secret],
            [body, headers, secretOf(otherKey)],
          ];
          const [tamperedBody, tamperedHeaders, key2] = cases[tamper] as (typeof cases)[number];
          expect(await verdicts(tamperedBody, tamperedHeaders, key2)).toEqual({
            ours: 'refused',
            theirs: 'refused',
          });
          expect(await verdicts(body, headers, secret)).toEqual({
            ours: 'accepted',
            theirs: 'accepted',
          });
        },
      ),
      fcParams({ numRuns: 50 }),
    );
  });

  it('agrees with standardwebhooks on timestamps: five minutes either way, no more', async () => {
    const secret = secretOf(new Uint8Array(32).fill(7));
    const body = JSON.stringify(event());
    const nowS = Math.floor(Date.now() / 1000);
    for (const offset of [-3600, -310, -290, 0, 290, 310, 3600]) {
      const headers = signed(secret, 'msg_1', nowS + offset, body);
      const expected = Math.abs(offset) <= 300 ? 'accepted' : 'refused';
      expect(await verdicts(body, headers, secret)).toEqual({ ours: expected, theirs: expected });
    }
    // At the edges, with our clock injected: 300 s is in, 301 s out, both ways.
    for (const [offset, ok] of [
      [-300, true],
      [300, true],
      [-301, false],
      [301, false],
    ] as const) {
      const headers = signed(secret, 'msg_1', NOW_S + offset, body);
      const outcome = verifyWebhook(body, headers, secret, { now });
      if (ok) await expect(outcome).resolves.toMatchObject({ id: 'batch_1' });
      else await expect(outcome).rejects.toMatchObject({ code: 'timestamp_out_of_range' });
    }
  });

  it('takes any of several signatures (a secret being rotated), v1 only', async () => {
    const secret = secretOf(new Uint8Array(32).fill(1));
    const old = secretOf(new Uint8Array(32).fill(2));
    const body = JSON.stringify(event());
    const right = signed(secret, 'msg_2', NOW_S, body)['webhook-signature'];
    const wrong = signed(old, 'msg_2', NOW_S, body)['webhook-signature'];
    const base = { 'webhook-id': 'msg_2', 'webhook-timestamp': String(NOW_S) };
    const check = (signature: string) =>
      verifyWebhook(body, { ...base, 'webhook-signature': signature }, secret, { now });
    await expect(check(`${wrong} ${right}`)).resolves.toMatchObject({ id: 'batch_1' });
    await expect(check(`${right} ${wrong}`)).resolves.toMatchObject({ id: 'batch_1' });
    await expect(check(right.replace('v1,', 'v2,'))).rejects.toMatchObject({
      code: 'invalid_signature',
    });
    await expect(check('v1,not-base64!!')).rejects.toMatchObject({ code: 'invalid_signature' });
    // Node's req.headers: names lower-cased; a plain object with other cases works too.
    await expect(
      verifyWebhook(
        body,
        { 'Webhook-Id': 'msg_2', 'Webhook-Timestamp': String(NOW_S), 'Webhook-Signature': right },
        secret,
        { now },
      ),
    ).resolves.toMatchObject({ id: 'batch_1' });
  });

  it('says what is wrong: missing headers, a timestamp that is no number, a body that is no event', async () => {
    const secret = secretOf(new Uint8Array(32).fill(3));
    const body = JSON.stringify(event());
    const headers = signed(secret, 'msg_3', NOW_S, body);
    const unsigned: Record<string, string> = { ...headers };
    delete unsigned['webhook-signature'];
    await expect(verifyWebhook(body, unsigned, secret, { now })).rejects.toMatchObject({
      code: 'missing_header',
    });
    await expect(
      verifyWebhook(body, { ...headers, 'webhook-timestamp': '17e8' }, secret, { now }),
    ).rejects.toMatchObject({ code: 'invalid_timestamp' });
    const notEvent = '{"hello":"world"}';
    await expect(
      verifyWebhook(notEvent, signed(secret, 'msg_3', NOW_S, notEvent), secret, { now }),
    ).rejects.toMatchObject({ code: 'invalid_payload' });
    await expect(verifyWebhook(body, headers, 'whsec_', { now })).rejects.toThrow(TypeError);
    await expect(verifyWebhook(body, headers, 'whsec_%%%%', { now })).rejects.toThrow(TypeError);
  });

  it("verifies the service's own deliveries with the account's secret", async () => {
    const webhooks = createMemoryWebhookSender();
    const service = createService({
      engine: createEngine({ offline: true }),
      store: createMemoryStore(),
      batch: { webhookSender: webhooks },
    });
    const account = await service.admin.createAccount({ email: 'o@example.org', credits: 100 });
    const { webhookSecret } = await service.admin.rotateWebhookSecret(account.id);
    const job = await service.submitBatch(
      { accountId: account.id },
      {
        emails: ['a@example.org', 'bad..x@example.org'],
        method: 'quick',
        callbackUrl: 'https://hooks.example.com/done',
      },
    );
    await service.batchWork.idle();
    await service.batchWork.deliverWebhooks();
    await service.stop();
    const sent = webhooks.sent[0];
    expect(sent).toBeDefined();
    const delivered = await verifyWebhook(sent?.body ?? '', sent?.headers ?? {}, webhookSecret);
    expect(delivered).toMatchObject({
      event: 'batch.completed',
      id: job.id,
      total_emails: 2,
      valid: 1,
      invalid: 1,
    });
    await expect(
      verifyWebhook(sent?.body ?? '', sent?.headers ?? {}, secretOf(new Uint8Array(32))),
    ).rejects.toMatchObject({ code: 'invalid_signature' });
  });

  it("the client's event type is the service's", () => {
    expectTypeOf<ClientBatchEvent>().toEqualTypeOf<{
      -readonly [K in keyof ServiceBatchEvent]: ServiceBatchEvent[K];
    }>();
  });
});
