import { parseAddress, createEngine } from '../src/index.js';
import { generateCorpus } from './corpus.js';
const corpus = generateCorpus(200000);
const mode = process.argv[2];
const e = createEngine({ offline: true });
for (let r = 0; r < 8; r++) {
  const t = performance.now();
  let c = 0;
  if (mode === 'parse') {
    for (const a of corpus) if (parseAddress(a).ok) c++;
  } else {
    for (const a of corpus) {
      const m = { method: (process.argv[3] ?? 'standard') as 'quick' };
      const v = mode === 'sync' ? e.verifySync(a, m) : await e.verify(a, m);
      if (v.state !== 'undeliverable') c++;
    }
  }
  console.log(mode, Math.round((corpus.length / (performance.now() - t)) * 1000));
}
