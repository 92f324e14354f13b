/** Every length limit of an address, in one place. Octets are octets of UTF-8. */

/**
 * Inputs longer than this many UTF-16 units are refused before scanning. No address can be
 * longer than 254 octets; the margin leaves room for decomposed Unicode that NFC shortens.
 */
export const MAX_INPUT_LENGTH = 1024;
/** RFC 5321 4.5.3.1.3: a path of 256 octets, less the angle brackets. */
export const MAX_ADDRESS_OCTETS = 254;
/** RFC 5321 4.5.3.1.1: a local part of at most 64 octets. */
export const MAX_LOCAL_OCTETS = 64;
/** RFC 1035 2.3.4 and RFC 5321 4.5.3.1.2: octets of the ASCII (A-label) form. */
export const MAX_LABEL_OCTETS = 63;
export const MAX_DOMAIN_OCTETS = 253;
