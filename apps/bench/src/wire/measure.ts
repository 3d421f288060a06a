/** Timing helpers for the wire benchmark: interleaved rounds, medians. */
import { median } from '../report/median.js';

/** `run` decodes every chunk once and returns the number of messages seen. */
export type Contender = Readonly<{ name: string; run: (chunks: readonly Buffer[]) => number }>;

export type Result = ReturnType<typeof measure>[number];

// Warms every contender up, then `rounds` rounds of `passes` decodes each, in rotating order (drift hits all alike); medians.
export function measure(
  contenders: readonly Contender[],
  chunks: readonly Buffer[],
  opts: { rounds: number; passes: number; warmupMs: number },
) {
  const bytes = chunks.reduce((n, c) => n + c.length, 0);
  const counts = contenders.map((c) => c.run(chunks));
  for (const c of contenders) {
    const until = performance.now() + opts.warmupMs;
    while (performance.now() < until) c.run(chunks);
  }
  const rates = contenders.map(() => [] as number[]);
  for (let round = 0; round < opts.rounds; round++) {
    for (let k = 0; k < contenders.length; k++) {
      const i = (k + round) % contenders.length;
      const c = contenders[i]!;
      const t0 = performance.now();
      for (let p = 0; p < opts.passes; p++) c.run(chunks);
      const seconds = (performance.now() - t0) / 1000;
      rates[i]!.push(opts.passes / seconds);
    }
  }
  return contenders.map((c, i) => {
    const passesPerSecond = median(rates[i]!) ?? Number.NaN;
    return {
      name: c.name,
      messagesPerPass: counts[i]!,
      messagesPerSecond: passesPerSecond * counts[i]!,
      megabytesPerSecond: (passesPerSecond * bytes) / 1e6,
    };
  });
}

/**
 * Copies, like socket reads: each chunk is its own allocation. The short chunk goes first: pg-protocol's
 * Parser keeps the last chunk it was given as its buffer and, when a short chunk follows a partial
 * message, moves that message to the front of it, i.e. writes into our input (every later pass then
 * decodes damaged bytes). Before a full chunk it allocates a buffer of its own instead.
 */
export function splitChunks(stream: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  const first = stream.length % size;
  if (first > 0) out.push(Buffer.from(stream.subarray(0, first)));
  for (let i = first; i < stream.length; i += size) out.push(Buffer.from(stream.subarray(i, i + size)));
  return out;
}
