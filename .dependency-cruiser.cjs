// The directions imports may take between the folders of src/ (`npm run lint:layers`, part of
// `npm run lint`). Each rule names what a layer may NOT import; imports of npm packages and
// node: modules are not judged here (eslint.config.js keeps node's I/O modules to adapters,
// the CLI and the node server). test/build/layers.test.ts writes a forbidden import of each
// kind into src/ and checks that this configuration refuses it.

/** Pure code: given ports, an address becomes a verdict. */
const PURE = '^src/(address|cache|checks|data|dns|engine|format|smtp)/';
/** Interfaces (and their types) that adapters implement and the pure layers take. */
const PORTS = '^src/ports/';
/** What every store obeys: ledger planning, hold renewal, IP prefixes, rate counting, errors. */
const STORE_RULES = '^src/store/rules/';
/** The in-memory twin of the durable stores. */
const MEMORY_STORE = '^src/store/[^/]+$';
/** Language-level helpers that import nothing of ours. */
const UTIL = '^src/(delay|fifo|optional|slices)[.]ts$';
/** The package's entry files (package.json "exports"): they only re-export. */
const ENTRIES = '^src/[^/]+[.]ts$';

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import cycles between files, type-only imports included.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'pure-layers-import-pure-code-and-ports',
      comment:
        'address, cache, checks, data, dns, engine, format and smtp import only each other, ' +
        'ports and the helpers: no adapter, store, service, http, cli or composition code.',
      severity: 'error',
      from: { path: PURE },
      to: { path: '^src/', pathNot: [PURE, PORTS, UTIL] },
    },
    {
      name: 'ports-import-only-ports',
      comment: 'A port owns every type its interfaces use.',
      severity: 'error',
      from: { path: PORTS },
      to: { path: '^src/', pathNot: PORTS },
    },
    {
      name: 'store-rules-import-only-ports',
      comment: 'The rules every store obeys depend on the Store port alone.',
      severity: 'error',
      from: { path: STORE_RULES },
      to: { path: '^src/', pathNot: [STORE_RULES, PORTS] },
    },
    {
      name: 'memory-store-imports-ports-and-store-rules',
      comment: 'The memory twin is a store like the others: the port, the rules, itself.',
      severity: 'error',
      from: { path: MEMORY_STORE },
      to: { path: '^src/', pathNot: [MEMORY_STORE, STORE_RULES, PORTS, UTIL] },
    },
    {
      name: 'durable-adapters-import-ports-and-store-rules',
      comment:
        'SQLite, Redis, BullMQ (and any durable adapter to come) import only their own ' +
        'folder, ports, the store rules and the helpers, plus their libraries.',
      severity: 'error',
      from: { path: '^src/adapters/(sqlite|postgres|redis|bullmq)/' },
      to: { path: '^src/', pathNot: ['^src/adapters/$1/', PORTS, STORE_RULES, UTIL] },
    },
    {
      name: 'io-adapters-import-pure-code-and-ports',
      comment:
        'The Node I/O adapters (resolver, prober, webhook sender, metrics) build on the pure ' +
        'protocol code and the ports, never on the service, a store, http or the cli.',
      severity: 'error',
      from: { path: '^src/adapters/(node|prometheus)/' },
      to: { path: '^src/', pathNot: ['^src/adapters/$1/', PURE, PORTS, UTIL] },
    },
    {
      name: 'service-imports-no-adapter-http-or-cli',
      comment:
        'The service takes its ports resolved: it imports pure code, ports, the store rules ' +
        'and itself, never an adapter, a store, http, the cli or the composition.',
      severity: 'error',
      from: { path: '^src/service/' },
      to: { path: '^src/', pathNot: ['^src/service/', PURE, PORTS, STORE_RULES, UTIL] },
    },
    {
      name: 'composition-imports-no-http-or-cli',
      comment: 'src/compose puts the Node defaults into the engine and the service, nothing more.',
      severity: 'error',
      from: { path: '^src/compose/' },
      to: { path: '^src/(http|cli|client)/' },
    },
    {
      name: 'http-imports-no-adapter',
      comment:
        'The fetch handler runs on any runtime: no adapter, store or cli. Only the node ' +
        'server (http/node-server.ts, mailverdict/node) loads the Prometheus adapter.',
      severity: 'error',
      from: { path: '^src/http/', pathNot: '^src/http/node-server[.]ts$' },
      to: { path: '^src/(adapters|store|cli|compose|client)/' },
    },
    {
      name: 'node-server-imports-no-store-or-cli',
      severity: 'error',
      from: { path: '^src/http/node-server[.]ts$' },
      to: { path: '^src/(store|cli|client)/|^src/adapters/(?!prometheus/)' },
    },
    {
      name: 'client-imports-pure-code-and-ports',
      comment: 'mailverdict/client calls a server from any runtime: no server-side code.',
      severity: 'error',
      from: { path: '^src/client/' },
      to: { path: '^src/', pathNot: ['^src/client/', PURE, PORTS, UTIL] },
    },
    {
      name: 'nothing-imports-the-cli',
      severity: 'error',
      from: { pathNot: '^src/cli/' },
      to: { path: '^src/cli/' },
    },
    {
      name: 'only-entries-and-the-cli-import-entries',
      comment: 'Entry files are the package surface; code inside imports the modules themselves.',
      severity: 'error',
      from: { path: '^src/[^/]+/', pathNot: '^src/cli/' },
      to: { path: ENTRIES, pathNot: UTIL },
    },
    {
      name: 'helpers-import-nothing',
      severity: 'error',
      from: { path: UTIL },
      to: { path: '^src/' },
    },
  ],
  options: {
    // Type-only imports are dependencies too: a port that names a service type depends on it.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules)/' },
  },
};
