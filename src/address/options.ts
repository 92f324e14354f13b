/** What the parser accepts beyond the everyday dot-atom address. */
export interface ParseOptions {
  /** `"john doe"@example.com` (RFC 5321 quoted-string). Default false. */
  readonly allowQuotedLocal?: boolean;
  /** `user@[192.0.2.1]` and `user@[IPv6:2001:db8::1]`. Default false. */
  readonly allowDomainLiteral?: boolean;
  /** UTF-8 local parts (RFC 6531). Default true. */
  readonly allowSmtpUtf8?: boolean;
  /**
   * Reject what cannot receive mail from the public internet: a domain without a dot, a TLD
   * not ending in a letter, special-use names (RFC 6761). Default true.
   */
  readonly globallyDeliverable?: boolean;
  /**
   * ZWNJ and ZWJ in a domain label where IDNA 2008's CONTEXTJ rules allow them (`ශ්‍රී.com`,
   * `نامه‌ای.com`), as written or in the A-label. Off, they are unsafe characters there as
   * anywhere else in the address (python-email-validator's rule). Default false.
   */
  readonly allowDomainJoiners?: boolean;
}

export type ResolvedParseOptions = Required<ParseOptions>;

/** python-email-validator's defaults plus the RFC 5321 64-octet local-part limit. */
export const DEFAULT_PROFILE: ResolvedParseOptions = Object.freeze({
  allowQuotedLocal: false,
  allowDomainLiteral: false,
  allowSmtpUtf8: true,
  globallyDeliverable: true,
  allowDomainJoiners: false,
});

/** The full RFC 5321/5322/6531 grammar for addresses, without deliverability rules. */
export const RFC_PROFILE: ResolvedParseOptions = Object.freeze({
  allowQuotedLocal: true,
  allowDomainLiteral: true,
  allowSmtpUtf8: true,
  globallyDeliverable: false,
  allowDomainJoiners: true,
});

export type ProfileName = 'default' | 'rfc';

export const PROFILES: Readonly<Record<ProfileName, ResolvedParseOptions>> = Object.freeze({
  default: DEFAULT_PROFILE,
  rfc: RFC_PROFILE,
});

export function resolveParseOptions(
  options?: ParseOptions & { readonly profile?: ProfileName },
): ResolvedParseOptions {
  // No allocation on the hot path: most calls pass nothing or a bare profile.
  if (options === undefined) return DEFAULT_PROFILE;
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`parse options must be an object ({ profile: 'rfc' }, say)`);
  }
  const name = options.profile ?? 'default';
  // hasOwn, not an index alone: 'toString' must be as unknown as 'rfx', and an unknown name
  // failed later as a read of undefined.
  if (!Object.hasOwn(PROFILES, name)) {
    throw new TypeError(
      `Unknown parse profile ${JSON.stringify(name)}: expected one of ${Object.keys(PROFILES).join(', ')}`,
    );
  }
  const base = PROFILES[name];
  if (
    options.allowQuotedLocal === undefined &&
    options.allowDomainLiteral === undefined &&
    options.allowSmtpUtf8 === undefined &&
    options.globallyDeliverable === undefined &&
    options.allowDomainJoiners === undefined
  ) {
    return base;
  }
  return {
    allowQuotedLocal: options.allowQuotedLocal ?? base.allowQuotedLocal,
    allowDomainLiteral: options.allowDomainLiteral ?? base.allowDomainLiteral,
    allowSmtpUtf8: options.allowSmtpUtf8 ?? base.allowSmtpUtf8,
    globallyDeliverable: options.globallyDeliverable ?? base.globallyDeliverable,
    allowDomainJoiners: options.allowDomainJoiners ?? base.allowDomainJoiners,
  };
}
