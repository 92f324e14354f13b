/**
 * mailverdict/node: the /v1 API served on node:http, with graceful shutdown. The client IP is
 * the socket's peer address (X-Forwarded-For only from configured trusted proxies).
 */
export {
  createNodeListener,
  loadPrometheusMetrics,
  serve,
  SHUTDOWN_TIMEOUT_MS,
} from './http/node-server.js';
export type { NodeListenerOptions, RunningServer, ServeOptions } from './http/node-server.js';
export { createHandler } from './http/handler.js';
export type { FetchHandler, HandlerOptions } from './http/handler.js';
export type { OperationsOptions } from './http/operations.js';
export type { MetricsEndpoint, Observer } from './ports/observer.js';
export type { PrometheusMetrics, PrometheusMetricsOptions } from './adapters/prometheus/metrics.js';
