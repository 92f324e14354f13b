/**
 * mailverdict/testing: the in-memory twins of the ports, so that you test your own code
 * against the engine and the service without a network or a wall clock: DNS zones, SMTP
 * answers, a webhook receiver and a manual clock. None of them opens a socket.
 *
 * @example
 * import { createManualClock, createMemoryDns } from 'mailverdict/testing';
 * const engine = createEngine({ dns: createMemoryDns({ 'example.org': ['mx.example.org'] }) });
 */
export { createManualClock } from './ports/clock.js';
export type { ManualClock } from './ports/clock.js';
export { createMemoryDns } from './dns/memory-dns.js';
export type { MemoryDns, MemoryZones } from './dns/memory-dns.js';
export { offlineDns } from './dns/offline-dns.js';
export { createMemorySmtp } from './smtp/memory-smtp.js';
export { createMemoryWebhookSender } from './service/batch/memory-webhooks.js';
export type { MemoryWebhookSender } from './service/batch/memory-webhooks.js';
export type { MemorySmtp, MemorySmtpOptions } from './smtp/memory-smtp.js';
