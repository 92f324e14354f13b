/**
 * `{ [key]: value }`, or `{}` when value is undefined: with exactOptionalPropertyTypes an
 * absent option must be left out, not passed as undefined.
 */
export function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
