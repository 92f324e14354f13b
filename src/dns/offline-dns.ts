import type { Dns, MxAnswer } from '../ports/dns.js';

const OFFLINE: MxAnswer = Object.freeze({ kind: 'offline' });

/** A Dns that never opens a socket: the mx check is skipped and verdicts rest on the rest. */
export function offlineDns(): Dns {
  return { offline: true, mx: () => Promise.resolve(OFFLINE) };
}
