/**
 * A bounded memo for the parser's pure but costly steps (UTS-46 mapping, punycode, NFC of
 * non-ASCII local parts). Real lists repeat their domains and, in a CRM import, their names;
 * remembering the last few thousand answers keeps international addresses near ASCII speed.
 * When full it starts over: cheaper than LRU bookkeeping on every hit, and the working set
 * refills within a few thousand addresses.
 */
export function boundedMemo<T>(compute: (key: string) => T, size = 4096): (key: string) => T {
  const answers = new Map<string, T>();
  return (key) => {
    let answer = answers.get(key);
    if (answer === undefined) {
      answer = compute(key);
      if (answers.size >= size) answers.clear();
      answers.set(key, answer);
    }
    return answer;
  };
}
