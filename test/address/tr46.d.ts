// tr46 (jsdom's UTS-46, CommonJS) ships no type declarations: the calls the tests make of it, as
// the oracle that the parser's IDNA verdicts are held to.
declare module 'tr46' {
  interface Tr46Options {
    checkHyphens?: boolean;
    checkBidi?: boolean;
    checkJoiners?: boolean;
    useSTD3ASCIIRules?: boolean;
    verifyDNSLength?: boolean;
    transitionalProcessing?: boolean;
    ignoreInvalidPunycode?: boolean;
  }
  const tr46: {
    toASCII(domainName: string, options?: Tr46Options): string | null;
    toUnicode(domainName: string, options?: Tr46Options): { domain: string; error: boolean };
  };
  export = tr46;
}
