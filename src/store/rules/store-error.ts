/**
 * Why a store could not do what was asked. `busy`, `full`, `corrupt`, `readonly` and `io` are
 * faults of the storage underneath (a SQLite file locked by another process, a full disk, a
 * damaged file); the service answers them with a clear error and writes nothing.
 */
export type StoreErrorCode =
  | 'busy'
  | 'full'
  | 'corrupt'
  | 'readonly'
  | 'io'
  | 'closed'
  | 'constraint'
  | 'not_found'
  | 'invalid';

export class StoreError extends Error {
  override readonly name = 'StoreError';

  constructor(
    readonly code: StoreErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
