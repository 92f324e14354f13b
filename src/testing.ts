export { createMemoryDns } from './dns/memory-dns.js';
export type { MemoryDns, MemoryZones } from './dns/memory-dns.js';
export { offlineDns } from './dns/offline-dns.js';
export { createMemorySmtp } from './smtp/memory-smtp.js';
export { createMemoryWebhookSender } from './service/batch/memory-webhooks.js';
export type { MemoryWebhookSender } from './service/batch/memory-webhooks.js';
export type { MemorySmtp, MemorySmtpOptions } from './smtp/memory-smtp.js';
