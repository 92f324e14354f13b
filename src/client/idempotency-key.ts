/**
 * A fresh idempotency key: a random UUID (RFC 9562 version 4). `crypto.randomUUID` where the
 * runtime has it (browsers only in secure contexts), else the same from getRandomValues.
 */
export function newIdempotencyKey(): string {
  const crypto = globalThis.crypto;
  if (typeof crypto?.randomUUID === 'function') return crypto.randomUUID();
  if (typeof crypto?.getRandomValues !== 'function') {
    throw new TypeError('no crypto.getRandomValues here: pass an idempotencyKey of your own');
  }
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  // RFC 9562 5.4: version 4 in the high nibble of byte 6, the variant 10 in byte 8.
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80;
  const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
