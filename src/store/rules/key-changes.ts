import type { KeyChanges, KeyRecord } from '../../ports/store.js';

/** A key with `changes` applied, as every store applies them (inside its atomic update). */
export function withKeyChanges(key: KeyRecord, changes: KeyChanges): KeyRecord {
  const { expiresAtMost, ...fields } = changes;
  const updated = { ...key, ...fields };
  if (expiresAtMost === undefined) return updated;
  const expiresAt =
    updated.expiresAt === null ? expiresAtMost : Math.min(updated.expiresAt, expiresAtMost);
  return { ...updated, expiresAt };
}
