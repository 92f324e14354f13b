/** What the HTTP layer puts in X-RateLimit-Limit, -Remaining and -Reset. */
export interface RateLimitStatus {
  /** The per-minute limit of the key's plan. */
  readonly limit: number;
  readonly remaining: number;
  /**
   * When the window reported resets, in Unix seconds (an integer, rounded up so that the
   * window has ended by then): the minute window's, or on a refusal the refusing window's.
   */
  readonly reset: number;
}
