import { createHmac } from 'node:crypto';
import type {
  JobCallbackPolicy,
  JobRecord,
  WebhookChanges,
  WebhookMessage,
} from '../../ports/store.js';
import type { WebhookResponse, WebhookSender } from '../../ports/webhook.js';
import type { ServiceContext } from '../context.js';

/**
 * Delays before each retry of a webhook, after the first attempt: Standard Webhooks' own
 * schedule (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h), 27.6 hours in all: "about a day".
 */
export const WEBHOOK_RETRY_SCHEDULE_MS: readonly number[] = [
  5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000,
];
/** A 2xx within this long is delivered; anything slower is retried. */
export const WEBHOOK_TIMEOUT_MS = 15_000;
/** Each delay is moved by up to this fraction either way, so receivers are not stampeded. */
export const WEBHOOK_JITTER = 0.2;
/** Due webhooks sent at once. */
const DELIVERIES_AT_ONCE = 8;

/** The event a finished job sends: `batch.completed` or `batch.failed`. */
export interface BatchEvent {
  readonly event: 'batch.completed' | 'batch.failed';
  readonly id: string;
  readonly status: JobRecord['status'];
  readonly total_emails: number;
  readonly processed: number;
  readonly valid: number;
  readonly invalid: number;
  readonly risky: number;
  readonly download_url: string | null;
  readonly completed_at: string;
  readonly reason?: string;
}

/** `https://hooks.example.com` of a callback URL, for logs. */
function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '(a URL that does not parse)';
  }
}

/**
 * The Standard Webhooks signature: `v1,` then the base64 HMAC-SHA256, keyed by the base64
 * bytes after `whsec_`, of `<webhook-id>.<webhook-timestamp>.<body>`.
 */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** The headers of one attempt: the id stays the same across attempts, the timestamp is now. */
export function webhookHeaders(
  secret: string,
  id: string,
  timestamp: number,
  body: string,
): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': 'mailverdict-webhooks',
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signWebhook(secret, id, timestamp, body),
  };
}

export interface WebhookSettings {
  readonly sender: WebhookSender;
  /** The policy of a job stored before its own was kept with it: this process's. */
  readonly callbackPolicy: JobCallbackPolicy;
  readonly retryScheduleMs: readonly number[];
  readonly timeoutMs: number;
}

/** The outbox's sending side: delivers due webhooks and schedules retries. */
export interface WebhookDispatcher {
  /** The outbox message for a finished job, or undefined when it has no callback. */
  message(job: JobRecord, event: BatchEvent, at: number): WebhookMessage | undefined;
  /** Sends every webhook due now; resolves with how many were attempted. */
  deliverDue(signal?: AbortSignal): Promise<number>;
  /** Queues `message` again, due now, for a new round of attempts; resolves it as queued. */
  redeliver(message: WebhookMessage): Promise<WebhookMessage>;
}

export function createWebhookDispatcher(
  ctx: ServiceContext,
  settings: WebhookSettings,
): WebhookDispatcher {
  const { store, clock } = ctx;
  let running: Promise<number> | undefined;

  /** A delay moved by up to WEBHOOK_JITTER either way, from the injected random source. */
  function jittered(delay: number): number {
    const bytes = ctx.random(4);
    const unit =
      (((bytes[0] ?? 0) << 24) |
        ((bytes[1] ?? 0) << 16) |
        ((bytes[2] ?? 0) << 8) |
        (bytes[3] ?? 0)) >>>
      0;
    return Math.round(delay * (1 - WEBHOOK_JITTER + (2 * WEBHOOK_JITTER * unit) / 0xffffffff));
  }

  async function attempt(message: WebhookMessage, signal: AbortSignal | undefined): Promise<void> {
    // Every API and worker process delivers from the one outbox: the lease makes one of them
    // the sender of this attempt. Should it die sending, the message is due again after it.
    const leaseUntil = clock.now() + settings.timeoutMs * 2;
    if (!(await store.leaseWebhook(message.id, message.nextAttemptAt, leaseUntil))) return;
    const [account, job] = await Promise.all([
      store.getAccount(message.accountId),
      store.getJob(message.accountId, message.jobId),
    ]);
    // The policy the job was taken under, whichever process took it: a worker started
    // without --allow-private-networks delivers what an API process with it accepted.
    const policy = job?.callbackPolicy ?? settings.callbackPolicy;
    const timestamp = Math.floor(clock.now() / 1000);
    const response: WebhookResponse =
      account === undefined
        ? { kind: 'error', code: 'other', message: 'The account no longer exists.' }
        : await settings.sender.send({
            url: message.url,
            headers: webhookHeaders(account.webhookSecret, message.id, timestamp, message.payload),
            body: message.payload,
            timeoutMs: settings.timeoutMs,
            allowPrivateNetworks: policy.allowPrivateNetworks,
            ...(signal === undefined ? {} : { signal }),
          });
    if (response.kind === 'error' && response.code === 'aborted') return;
    const attempts = message.attempts + 1;
    const now = clock.now();
    const fields = {
      job_id: message.jobId,
      account_id: message.accountId,
      webhook_id: message.id,
      // The origin only: a callback's path or query may carry the receiver's own token.
      callback: originOf(message.url),
      attempt: attempts,
    };
    const lastStatus = response.kind === 'status' ? response.status : null;
    /**
     * Writes the attempt's outcome while its lease holds; false, and said at info, when a
     * redelivery took the message meanwhile: then this outcome is no one's to count or report.
     */
    const recorded = async (changes: WebhookChanges): Promise<boolean> => {
      if (await store.updateWebhook(message.id, changes, leaseUntil)) return true;
      ctx.logger.info(
        { event: 'webhook.superseded', ...fields, status: lastStatus },
        'A webhook attempt ended after its message was queued again; its outcome is not kept',
      );
      return false;
    };
    if (response.kind === 'status' && response.status >= 200 && response.status < 300) {
      const delivered: WebhookChanges = {
        status: 'delivered',
        attempts,
        nextAttemptAt: now,
        lastStatus,
        lastError: null,
      };
      if (!(await recorded(delivered))) return;
      ctx.observer?.onWebhook?.('delivered');
      ctx.logger.info(
        { event: 'webhook.delivered', ...fields, status: response.status },
        'Webhook delivered',
      );
      return;
    }
    const lastError =
      response.kind === 'status'
        ? `HTTP ${response.status}`
        : `${response.code}: ${response.message}`;
    // 410 Gone: the receiver asks us to stop (Standard Webhooks); a refused address never
    // becomes a public one by asking again.
    const final =
      (response.kind === 'status' && response.status === 410) ||
      (response.kind === 'error' && response.code === 'forbidden_address') ||
      attempts > settings.retryScheduleMs.length;
    const delay = settings.retryScheduleMs[attempts - 1] ?? 0;
    const nextAttemptAt = final ? now : now + jittered(delay);
    const status = final ? 'failed' : 'pending';
    if (!(await recorded({ status, attempts, nextAttemptAt, lastStatus, lastError }))) return;
    ctx.observer?.onWebhook?.(final ? 'failed' : 'retrying');
    ctx.logger.warn(
      {
        event: final ? 'webhook.failed' : 'webhook.retrying',
        ...fields,
        status: lastStatus,
        error: lastError,
        ...(response.kind === 'error' && response.detail !== undefined
          ? { detail: response.detail }
          : {}),
        next_attempt_at: final ? null : new Date(nextAttemptAt).toISOString(),
      },
      final
        ? 'Webhook attempt failed; no more attempts (POST /v1/verify/{id}/webhook sends it again)'
        : 'Webhook attempt failed; it is tried again',
    );
  }

  async function deliverAll(signal: AbortSignal | undefined): Promise<number> {
    let attempted = 0;
    for (;;) {
      if (signal?.aborted === true) return attempted;
      const due = await store.dueWebhooks(clock.now(), DELIVERIES_AT_ONCE);
      if (due.length === 0) return attempted;
      await Promise.all(due.map((message) => attempt(message, signal)));
      attempted += due.length;
    }
  }

  return {
    message(job, event, at) {
      if (job.callbackUrl === null) return undefined;
      return {
        id: ctx.newId('msg'),
        accountId: job.accountId,
        jobId: job.id,
        url: job.callbackUrl,
        payload: JSON.stringify(event),
        status: 'pending',
        attempts: 0,
        nextAttemptAt: at,
        lastStatus: null,
        lastError: null,
        createdAt: at,
      };
    },
    async redeliver(message) {
      // The same message, so the same webhook-id (a receiver that has it may drop it), due now
      // for a new round of attempts; what the last attempt got stays until the next one.
      const changes = {
        status: 'pending',
        attempts: 0,
        nextAttemptAt: clock.now(),
        lastStatus: message.lastStatus,
        lastError: message.lastError,
      } as const;
      await store.updateWebhook(message.id, changes);
      ctx.logger.info(
        {
          event: 'webhook.queued',
          job_id: message.jobId,
          account_id: message.accountId,
          webhook_id: message.id,
          callback: originOf(message.url),
        },
        'Webhook queued again for delivery',
      );
      return { ...message, ...changes };
    },
    // One delivery round at a time, so a message is never sent twice at once by one process.
    deliverDue(signal) {
      const next = (running ?? Promise.resolve(0)).then(() => deliverAll(signal));
      running = next.catch(() => 0);
      return next;
    },
  };
}
