export { createMemoryDns } from './dns/memory-dns.js';
export type { MemoryDns, MemoryZones } from './dns/memory-dns.js';
export { offlineDns } from './dns/offline-dns.js';
