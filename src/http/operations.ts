import type { MetricsEndpoint } from '../ports/observer.js';
import type { Service } from '../service/service.js';
import { json, type Reply } from './responses.js';

/**
 * The endpoints an orchestrator and a scraper ask, outside /v1: no key, no rate limit, no
 * CORS. `mailverdict/node` serves them by default; a host of the fetch handler opts in.
 */
export interface OperationsOptions {
  /**
   * `GET /health` (liveness: 200 whenever the process answers, without touching the store)
   * and `GET /ready` (readiness: 200 once the service is started and its store answers, else
   * 503 naming what is not ready). Default true.
   */
  readonly health?: boolean;
  /**
   * `GET /metrics`: the endpoint's text (Prometheus: adapters/prometheus/metrics.ts), which is also
   * told of every request the handler answers. Default none.
   */
  readonly metrics?: MetricsEndpoint;
}

/** An operations endpoint: GET only. */
export type OperationsRoute = () => Promise<Reply>;

/** The operations endpoints `options` asks for, by path. */
export function operationsRoutes(
  service: Service,
  options: OperationsOptions,
): ReadonlyMap<string, OperationsRoute> {
  const routes = new Map<string, OperationsRoute>();
  if (options.health ?? true) {
    routes.set('/health', async () => json(200, { status: 'ok' }));
    routes.set('/ready', () => readyReply(service));
  }
  const { metrics } = options;
  if (metrics !== undefined) {
    routes.set('/metrics', async () => ({
      status: 200,
      headers: {
        'content-type': metrics.contentType,
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
      },
      body: await metrics.render(),
    }));
  }
  return routes;
}

/** An id no account has (ids are `acct_` and base62): its lookup is one index probe. */
const READINESS_PROBE_ID = 'acct_readiness-probe';

/** Ready when the service is started and its store answers a cheap indexed query. */
async function readyReply(service: Service): Promise<Reply> {
  const answers = await service.store.getAccount(READINESS_PROBE_ID).then(
    () => true,
    () => false,
  );
  const state = service.started ? 'started' : 'stopped';
  const store = answers ? 'ok' : 'unavailable';
  if (answers && service.started) return json(200, { status: 'ready', service: state, store });
  const missing = [
    ...(state === 'started' ? [] : ['the service is not started']),
    ...(store === 'ok' ? [] : ['the store does not answer']),
  ];
  return json(503, {
    error: 'not_ready',
    message: `Not ready: ${missing.join('; ')}.`,
    service: state,
    store,
  });
}
