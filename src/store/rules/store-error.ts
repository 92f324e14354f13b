/**
 * Why a store could not do what was asked. `busy`, `full`, `corrupt`, `readonly` and `io` are
 * faults of the storage underneath (a SQLite file locked by another process, a full disk, a
 * damaged file); the service answers them with a clear error and writes nothing. `timeout` is
 * a store that did not answer in time (a frozen Redis): what was asked may still be applied.
 */
export type StoreErrorCode =
  | 'busy'
  | 'full'
  | 'corrupt'
  | 'readonly'
  | 'io'
  /** The store did not answer in time: the change may still be applied, whole. */
  | 'timeout'
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
