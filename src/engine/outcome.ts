import type { Finding, RiskFactor } from '../checks/checker.js';
import { DELIVERABLE_CEILING, RISKY_BASE, score, type Evidence, type State } from './score.js';
import { decide, UNKNOWN_REASONS, type Reason, type Verdict } from './verdict.js';

/** What a verification's findings decide, whatever the address: all but its own facts. */
export type Outcome = Pick<
  Verdict,
  | 'state'
  | 'reason'
  | 'score'
  | 'riskFactors'
  | 'disposable'
  | 'role'
  | 'free'
  | 'noReply'
  | 'catchAll'
  | 'mailboxFull'
  | 'checks'
>;

/** The outcome of a list of findings: a pure function of the findings alone. */
export function outcomeOf(findings: readonly Finding[]): Outcome {
  const { state, reason } = decide(findings);
  const riskFactors: RiskFactor[] = [];
  let disposable: boolean | null = null;
  let role: boolean | null = null;
  let free: boolean | null = null;
  let noReply: boolean | null = null;
  let catchAll: boolean | null = null;
  let mailboxFull: boolean | null = null;
  let evidence: Evidence = 'offline';
  for (const finding of findings) {
    const { factor } = finding;
    if (factor !== undefined && !riskFactors.includes(factor)) riskFactors.push(factor);
    if (finding.status === 'skipped') continue;
    switch (finding.check) {
      case 'disposable':
        disposable = factor === 'disposable';
        break;
      case 'role':
        role = factor === 'role';
        break;
      case 'free_provider':
        free = factor === 'free';
        break;
      case 'no_reply':
        noReply = factor === 'no_reply';
        break;
      case 'catch_all':
        catchAll = factor === 'catch_all';
        break;
      case 'smtp':
        mailboxFull = factor === 'mailbox_full';
        if (finding.status === 'pass') evidence = 'smtp';
        break;
      case 'mx':
        // A domain literal is its own mail host: the check passes without a lookup, which is
        // no DNS evidence (offline scores stay below DNS-verified ones: DELIVERABLE_CEILING).
        if (
          finding.status === 'pass' &&
          finding.code !== 'domain_literal' &&
          evidence === 'offline'
        ) {
          evidence = 'dns';
        }
        break;
    }
  }
  return {
    state,
    reason,
    score: score(state, startingScore(state, reason, evidence), riskFactors),
    riskFactors: Object.freeze(riskFactors),
    disposable,
    role,
    free,
    noReply,
    catchAll,
    mailboxFull,
    checks: findings,
  };
}

function startingScore(state: State, reason: Reason, evidence: Evidence): number {
  if (state === 'deliverable') return DELIVERABLE_CEILING[evidence];
  if (state === 'undeliverable') return 0;
  if (UNKNOWN_REASONS.has(reason)) return RISKY_BASE.unknown;
  return reason === 'low_deliverability' ? RISKY_BASE.low_deliverability : RISKY_BASE.low_quality;
}

/**
 * The findings of a verification so far, as a node of a trie shared by every verification
 * of one engine. Checkers hand out the same few finding objects, so the same paths recur
 * and each path's outcome is computed once: a verdict then costs a pointer comparison per
 * check instead of reading its findings again (bench/: reading them was about a third of an
 * offline verify). The trie is bounded: past its size, new paths are built but not kept,
 * so checkers that make a fresh finding per call (users' own) cost memory only per call.
 */
export class FindingPath {
  /** The findings along this path, in order; shared, hence frozen. */
  readonly findings: readonly Finding[];
  #outcome: Outcome | undefined;
  // Children in a short list: most nodes have one to three, and a scan compares pointers.
  readonly #nextFindings: Finding[] = [];
  readonly #nextPaths: FindingPath[] = [];
  readonly #room: { nodes: number };

  private constructor(findings: readonly Finding[], room: { nodes: number }) {
    this.findings = findings;
    this.#room = room;
  }

  /** The empty path of a new trie that keeps at most `maxNodes` paths. */
  static root(maxNodes = 4096): FindingPath {
    return new FindingPath(Object.freeze([]), { nodes: maxNodes });
  }

  /** This path followed by `finding`. (Not `then`: that would make paths look like promises.) */
  followedBy(finding: Finding): FindingPath {
    const known = this.#nextFindings;
    for (let i = 0; i < known.length; i++) {
      if (known[i] === finding) return this.#nextPaths[i] as FindingPath;
    }
    const path = new FindingPath(Object.freeze([...this.findings, finding]), this.#room);
    if (this.#room.nodes > 0 && known.length < MAX_CHILDREN) {
      this.#room.nodes--;
      known.push(finding);
      this.#nextPaths.push(path);
    }
    return path;
  }

  get outcome(): Outcome {
    return (this.#outcome ??= Object.freeze(outcomeOf(this.findings)));
  }
}

/** Past this many different next findings, a node's scan would cost more than it saves. */
const MAX_CHILDREN = 16;
