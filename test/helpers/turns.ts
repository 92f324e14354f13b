/**
 * Counts turns of the event loop while work runs: an immediate queued from inside an
 * immediate runs on the next turn, so the chain advances once a turn. Work that never lets
 * the loop turn (a `for await` over promises that are all resolved) leaves it at 0.
 */
export function turnCounter(): { turns(): number; stop(): number } {
  let turns = 0;
  let running = true;
  const tick = () => {
    if (!running) return;
    turns++;
    setImmediate(tick);
  };
  setImmediate(tick);
  return {
    turns: () => turns,
    stop() {
      running = false;
      return turns;
    },
  };
}
