export * from './checker.js';
export { DomainSet } from './domain-set.js';
export { syntaxFinding } from './syntax.js';
export { domain, icannTldLookup, type TldLookup } from './domain.js';
export { mx, mxFinding } from './mx.js';
export { disposable } from './disposable.js';
export { role } from './role.js';
export { freeProvider } from './free-provider.js';
export { noReply } from './no-reply.js';
