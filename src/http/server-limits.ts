/**
 * The defaults of `mailverdict/node`'s connection limits and timeouts (ServeOptions), apart
 * from the server so that the CLI's help can name them without loading node:http.
 */

/**
 * Most header fields a request may carry; more is a 431. Apache's LimitRequestFields default:
 * a browser sends about 20, and each proxy on the way adds a few.
 */
export const MAX_HEADERS_COUNT = 100;
/** Largest request line and header section, in bytes; more is a 431. Node's own default. */
export const MAX_HEADER_BYTES = 16 * 1024;
/**
 * How long a client has to send the request line and headers, from its first byte; then 408.
 * Apache's mod_reqtimeout allows 20 to 40 s: a slow link needs less than a second for 16 KiB.
 */
export const HEADERS_TIMEOUT_MS = 20_000;
/**
 * How long a client has to send a whole request, its body included; then 408. Node's default:
 * a 16 MiB batch takes over 2 minutes at 1 Mbit/s.
 */
export const REQUEST_TIMEOUT_MS = 300_000;
/** How long an idle keep-alive connection waits for its next request: Node's default. */
export const KEEP_ALIVE_TIMEOUT_MS = 5_000;
/**
 * How long a client may take nothing of an answer being written (a piece of 16 KiB at most)
 * before the connection is cut. nginx's send_timeout is 60 s; half that, as long as a
 * shutdown waits: a client that stopped reading holds its connection and its share of the
 * socket buffers no longer.
 */
export const WRITE_TIMEOUT_MS = 30_000;
