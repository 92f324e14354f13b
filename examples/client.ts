// Call a mailverdict /v1 API from any runtime with fetch: one verify, then a batch submitted
// (safe to retry), waited for and streamed back record by record, and errors told apart.
import { ApiError, createClient, NetworkError } from 'mailverdict/client';

export async function undeliverableOf(baseUrl: string, apiKey: string, emails: string[]) {
  const client = createClient({ baseUrl, apiKey }); // retries 3 times by the API's rules

  const one = await client.verify('ann@example.org', { detailed: true });
  console.log(one.state, one.reason, one.did_you_mean); // typed: the detailed shape

  const job = await client.submitBatch(emails); // with an idempotency key made for it
  const done = await client.waitForBatch(job.id, {
    onProgress: (status) => console.error(`${status.percent_complete}%`),
  });
  if (done.status === 'failed') throw new Error(`the batch failed: ${done.reason}`);
  const undeliverable: string[] = [];
  for await (const record of client.batchResults(job.id)) {
    if (record.state === 'undeliverable') undeliverable.push(record.email);
  }
  console.error(`${client.rateLimit?.remaining} requests left this minute`);
  return undeliverable;
}

export function explain(error: unknown): string {
  if (error instanceof NetworkError) return `no usable answer (${error.code}): ${error.message}`;
  if (error instanceof ApiError) return `refused: ${error.status} ${error.code}: ${error.message}`;
  throw error;
}
