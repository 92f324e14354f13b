/** One sample of Prometheus text: metric name, labels, value. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const SAMPLE = /^([\w:]+)(?:\{([^}]*)\})? (\S+)$/;

/** The samples of Prometheus text format 0.0.4 (comments skipped; label values plain). */
export function parseSamples(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = SAMPLE.exec(line);
    if (match === null) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').split(',')) {
      if (pair === '') continue;
      const at = pair.indexOf('="');
      if (at < 0 || !pair.endsWith('"')) throw new Error(`not a label: ${pair}`);
      labels[pair.slice(0, at)] = pair.slice(at + 2, -1);
    }
    samples.push({ name: match[1] as string, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The value of the sample named `name` with these labels (others ignored); 0 when absent. */
export function valueOf(
  samples: readonly Sample[],
  name: string,
  labels: Readonly<Record<string, string>> = {},
): number {
  const found = samples.filter(
    (sample) =>
      sample.name === name &&
      Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
  );
  return found.reduce((sum, sample) => sum + sample.value, 0);
}
