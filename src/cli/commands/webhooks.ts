import type { WebhookDelivery } from '../../service/service.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { line, type CliIo } from '../io.js';
import { accountOf, withService, type FileFlags } from '../service-file.js';
import { isoOrNull, safeJson, table, when } from '../terminal.js';
import { pageNumber } from './admin.js';

export interface WebhookListFlags extends FileFlags {
  readonly failed?: boolean;
  readonly json?: boolean;
  readonly limit?: string;
}

/** A delivery as --json prints it: the names of the status's `webhook`, and its job and URL. */
function deliveryWire(delivery: WebhookDelivery): Record<string, unknown> {
  return {
    id: delivery.id,
    job_id: delivery.jobId,
    url: delivery.url,
    status: delivery.status,
    attempts: delivery.attempts,
    last_status: delivery.lastStatus,
    last_error: delivery.lastError,
    next_attempt_at: delivery.status === 'pending' ? isoOrNull(delivery.nextAttemptAt) : null,
    created_at: isoOrNull(delivery.createdAt),
  };
}

/** `webhooks list`: the account's deliveries, newest first; `--failed`, those given up. */
export async function webhooksList(flags: WebhookListFlags, io: CliIo): Promise<ExitCode> {
  const limit = flags.limit === undefined ? undefined : pageNumber(flags.limit, '--limit');
  return withService(flags, async (service) => {
    const account = await accountOf(service, flags);
    const deliveries = await service.admin.listWebhooks(account.id, {
      failed: flags.failed === true,
      ...(limit === undefined ? {} : { limit }),
    });
    if (flags.json === true) {
      for (const delivery of deliveries) line(io.stdout, safeJson(deliveryWire(delivery)));
      return EXIT.ok;
    }
    const rows = deliveries.map((d) => [
      d.jobId,
      d.status,
      String(d.attempts),
      d.lastStatus === null ? '' : String(d.lastStatus),
      d.status === 'pending' ? when(d.nextAttemptAt) : '',
      d.url,
      d.lastError ?? '',
    ]);
    const header = ['JOB', 'STATUS', 'ATTEMPTS', 'LAST', 'NEXT ATTEMPT', 'URL', 'LAST ERROR'];
    for (const text of table(header, rows)) line(io.stdout, text);
    if (deliveries.length === 0) {
      line(io.stderr, flags.failed === true ? 'No failed deliveries.' : 'No deliveries.');
    }
    return EXIT.ok;
  });
}

/**
 * `webhooks redeliver <job>`: the job's webhook queued again, due now; the status the API
 * would answer (POST /v1/verify/{id}/webhook) goes to stdout. A running serve or worker on
 * the same store sends it.
 */
export async function webhooksRedeliver(
  jobId: string,
  flags: FileFlags,
  io: CliIo,
): Promise<ExitCode> {
  return withService(flags, async (service) => {
    const account = await accountOf(service, flags);
    const status = await service.redeliverWebhook({ accountId: account.id }, jobId);
    line(
      io.stderr,
      `Queued the webhook of ${status.id} again: a serve or worker running on this store sends it within seconds (its status: GET /v1/verify/${status.id}, or mailverdict webhooks list).`,
    );
    line(io.stdout, safeJson(status));
    return EXIT.ok;
  });
}

/**
 * `webhooks secret`: the account's `whsec_` secret alone on stdout, for a receiver to verify
 * deliveries with (MAILVERDICT_WEBHOOK_SECRET=$(mailverdict webhooks secret)).
 */
export async function webhooksSecret(flags: FileFlags, io: CliIo): Promise<ExitCode> {
  return withService(flags, async (service) => {
    const account = await accountOf(service, flags);
    line(io.stdout, account.webhookSecret);
    return EXIT.ok;
  });
}

/** `webhooks rotate`: a new secret, alone on stdout; every attempt from now on is signed with it. */
export async function webhooksRotate(flags: FileFlags, io: CliIo): Promise<ExitCode> {
  return withService(flags, async (service) => {
    const account = await accountOf(service, flags);
    const { webhookSecret } = await service.admin.rotateWebhookSecret(account.id);
    line(
      io.stderr,
      `Rotated the webhook secret of ${account.id}: every attempt from now on, retries included, is signed with the new one below; give it to your receivers.`,
    );
    line(io.stdout, webhookSecret);
    return EXIT.ok;
  });
}
