// Its own file so that the parser's fast path (fast-path.ts) and the full parser (parse.ts)
// can both name what they return without importing each other.

/** A successfully parsed address: the one canonical form that everything downstream uses. */
export interface ParsedAddress {
  readonly ok: true;
  readonly input: string;
  /**
   * NFC local part, case preserved (RFC 5321 2.4: only the receiving host may fold it), but
   * for RFC 2142's case-insensitive mailbox names (`POSTMASTER` is `postmaster`).
   */
  readonly local: string;
  /** Lowercase Unicode domain (U-labels), or the bracketed literal. */
  readonly domain: string;
  /** Lowercase A-label domain, for DNS and SMTP. */
  readonly asciiDomain: string;
  /** `local@domain`, the normalized address. */
  readonly address: string;
  /** `local@asciiDomain` when the local part is ASCII, else null (it needs SMTPUTF8). */
  readonly asciiAddress: string | null;
  /** Delivery needs the SMTPUTF8 extension (RFC 6531): the local part is not ASCII. */
  readonly smtpUtf8: boolean;
  /** The domain is an address literal (`[192.0.2.1]`). */
  readonly domainLiteral: boolean;
  /** A label mixes scripts like a homograph attack: not an error, a risk factor. */
  readonly confusable: boolean;
}
