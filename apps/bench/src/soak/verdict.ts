// Did anything grow without bound? The last third of the samples against the first (the middle one keeps start-up out).
import type { SoakStack } from './stack.js';

export type SoakSample = Awaited<ReturnType<SoakStack['sample']>>;
export type SoakVerdict = ReturnType<typeof judgeSoak>;

// How far the last third may stray from the first (growth: a ratio plus slack) before the verdict fails.
export const TOLERANCE = { rssRatio: 1.25, rssMb: 32, heapRatio: 1.5, heapMb: 16, errorRateRatio: 2, errorsPerMinute: 6, unexpectedShare: 0.001, throughputFloor: 0.25 } as const;

function figures(samples: readonly SoakSample[], before: SoakSample | undefined) {
  const first = before ?? samples[0]!;
  const last = samples[samples.length - 1]!;
  const seconds = Math.max(1e-9, last.t - first.t);
  return {
    rssMbMean: samples.reduce((s, x) => s + x.rssMb, 0) / samples.length,
    /** The lowest heap seen: what survives garbage collection. */
    heapUsedMbMin: Math.min(...samples.map((x) => x.heapUsedMb)),
    streamsMax: Math.max(...samples.map((x) => x.streams)),
    backendsMax: Math.max(...samples.map((x) => x.backends)),
    clientsMax: Math.max(...samples.map((x) => x.clients)),
    queriesPerSecond: (last.queries - first.queries) / seconds,
    errorsPerMinute: ((last.errors - first.errors) * 60) / seconds,
  };
}

/** `poolSize`: most backends the pool may hold; `sessions`: most client sessions the load opens (TCP + QUIC). */
export function judgeSoak(samples: readonly SoakSample[], limits: { poolSize: number; sessions: number }) {
  const failures: string[] = [];
  const end = samples[samples.length - 1];
  if (end === undefined || samples.length < 6) {
    return { ok: false, failures: [`too few samples (${samples.length}) to judge growth: run longer or sample more often`], first: null, last: null };
  }
  const third = Math.floor(samples.length / 3);
  const first = figures(samples.slice(0, third), undefined);
  const last = figures(samples.slice(samples.length - third), samples[samples.length - third - 1]);

  if (last.rssMbMean > first.rssMbMean * TOLERANCE.rssRatio + TOLERANCE.rssMb) {
    failures.push(`RSS grew: ${first.rssMbMean.toFixed(1)} MB -> ${last.rssMbMean.toFixed(1)} MB (mean of first vs last third)`);
  }
  if (last.heapUsedMbMin > first.heapUsedMbMin * TOLERANCE.heapRatio + TOLERANCE.heapMb) {
    failures.push(`heap floor grew: ${first.heapUsedMbMin.toFixed(1)} MB -> ${last.heapUsedMbMin.toFixed(1)} MB`);
  }
  const maxBackends = Math.max(...samples.map((x) => x.backends));
  if (maxBackends > limits.poolSize) failures.push(`backends exceeded the pool size: ${maxBackends} > ${limits.poolSize}`);
  if (last.backendsMax > Math.max(first.backendsMax, limits.poolSize)) failures.push(`backends grew: ${first.backendsMax} -> ${last.backendsMax}`);
  // Sessions come and go with faults (a dropped connection's sessions linger at the pooler until
  // its idle timeout while the client opens new ones): twice what the load opens is the bound.
  const bound = 2 * limits.sessions;
  if (last.clientsMax > bound) failures.push(`pooler client sessions exceed twice the load's sessions: ${last.clientsMax} > ${bound}`);
  if (last.streamsMax > bound) failures.push(`open QUIC streams exceed twice the load's sessions: ${last.streamsMax} > ${bound}`);
  if (last.errorsPerMinute > first.errorsPerMinute * TOLERANCE.errorRateRatio + TOLERANCE.errorsPerMinute) {
    failures.push(`error rate grew: ${first.errorsPerMinute.toFixed(1)}/min -> ${last.errorsPerMinute.toFixed(1)}/min`);
  }
  // A shared machine's throughput wanders (other processes); a quarter of the start means stalls.
  if (last.queriesPerSecond < first.queriesPerSecond * TOLERANCE.throughputFloor) {
    failures.push(`throughput fell: ${first.queriesPerSecond.toFixed(1)}/s -> ${last.queriesPerSecond.toFixed(1)}/s`);
  }
  if (end.mismatches > 0) failures.push(`${end.mismatches} answers did not match their checksum or their session`);
  if (end.unexpectedErrors > end.queries * TOLERANCE.unexpectedShare) {
    failures.push(`${end.unexpectedErrors} errors outside fault windows (more than ${TOLERANCE.unexpectedShare * 100}% of ${end.queries} queries)`);
  }
  return { ok: failures.length === 0, failures, first, last };
}
