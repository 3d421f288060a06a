// The soak: steady mixed load (simple, extended, prepared, transactions) over TCP and over QUIC
// streams, across the WAN path (stack/wan-path.ts) to the real quicpool daemon and its own throwaway Postgres, with a
// fault injected every few seconds (backend killed, QUIC stream reset, QUIC connection dropped).
// Prints RSS, heap, open streams, open backends and error counts every minute; at the end compares
// the last third of the run with the first and exits 1 when memory or counts grew without bound,
// an answer was wrong, or errors happened outside fault windows.
// `quicpool-bench soak` (`pnpm bench:soak`) runs it; it resolves to the exit code.
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { QuicPool } from '@quicpool/client';
import type { SoakOptions } from './options.js';
import { countBackends, QUIC_IDLE_MS, startSoakStack } from './stack.js';
import { newCounters, soakWorker } from './workload.js';
import { FaultInjector } from './faults.js';
import { judgeSoak } from './verdict.js';
import type { SoakSample } from './verdict.js';
import { minuteLine, summaryTable } from './report.js';
import type { SoakSummary } from './report.js';

export async function runSoak(o: SoakOptions): Promise<number> {
  const log = (line: string): void => void process.stdout.write(`${line}\n`);

  const stack = await startSoakStack({ poolSize: o.poolSize, delayMs: o.delayMs, loss: o.loss, path: o.path }, log);
  const tcpPool = new pg.Pool({ ...stack.login, host: stack.tcp.host, port: stack.tcp.port, max: Math.max(1, o.tcpSessions) });
  const quicPool = o.quicSessions === 0 ? null : new QuicPool({
    ...stack.login, max: o.quicSessions,
    quic: {
      endpoints: [`${stack.quic.host}:${stack.quic.port}`], ca: stack.caPem, serverName: 'localhost',
      maxConnections: 2, streamsPerConnection: Math.ceil(o.quicSessions / 2),
      quic: { idleTimeoutMs: QUIC_IDLE_MS, keepAliveMs: 1_000 },
    },
  });
  tcpPool.on('error', () => undefined); // idle clients hit by a fault: pg.Pool removes them
  quicPool?.on('error', () => undefined);

  const counters = newCounters();
  // A dropped QUIC connection's sessions fail within the idle timeout; allow that plus slack.
  const faults = new FaultInjector(stack.monitor, quicPool?.sessions ?? null, QUIC_IDLE_MS + 5_000);
  let stopped = false;
  let interrupted = false;
  process.once('SIGINT', () => {
    interrupted = true;
    stopped = true;
  });

  log(`soak: ${o.minutes} min, ${o.tcpSessions} TCP + ${o.quicSessions} QUIC sessions, pool ${o.poolSize}, WAN ${o.delayMs} ms one-way, UDP loss ${o.loss}, `
    + `a fault every ${o.faultEverySeconds || '-'} s; Postgres ${stack.pg.info.serverVersion} on ${stack.pg.info.port}`);
  const started = performance.now();
  const workers = [
    ...Array.from({ length: o.tcpSessions }, (_, i) => soakWorker({ pool: tcpPool, worker: i, counters, stopped: () => stopped, faultRecent: () => faults.recent() })),
    ...(quicPool === null ? [] : Array.from({ length: o.quicSessions }, (_, i) =>
      soakWorker({ pool: quicPool, worker: 1000 + i, counters, stopped: () => stopped, faultRecent: () => faults.recent() }))),
  ];

  const samples: SoakSample[] = [];
  const sample = async (): Promise<SoakSample> => {
    const m = process.memoryUsage();
    const daemon = await stack.daemonCounts();
    const s: SoakSample = {
      t: (performance.now() - started) / 1000,
      // The client library here and the daemon: what a leak in either would grow.
      rssMb: (m.rss + daemon.rssBytes) / 2 ** 20,
      heapUsedMb: m.heapUsed / 2 ** 20,
      streams: daemon.streams,
      backends: await countBackends(stack.monitor),
      clients: daemon.clients,
      queries: counters.queries,
      errors: counters.errors,
      unexpectedErrors: counters.unexpectedErrors,
      mismatches: counters.mismatches,
    };
    samples.push(s);
    return s;
  };

  const endAt = started + o.minutes * 60_000;
  let nextFault = o.faultEverySeconds > 0 ? started + o.faultEverySeconds * 1000 : Infinity;
  let nextSample = started + o.sampleSeconds * 1000;
  const printEvery = Math.min(60, o.minutes * 60) * 1000;
  let nextPrint = started + printEvery;
  let printedQueries = 0;
  let printedAt = started;
  while (!stopped && performance.now() < endAt) {
    const now = performance.now();
    if (now >= nextFault) {
      nextFault += o.faultEverySeconds * 1000;
      await faults.next().catch(() => null);
    }
    if (now >= nextSample) {
      nextSample += o.sampleSeconds * 1000;
      const s = await sample();
      if (now >= nextPrint - 1) {
        nextPrint += printEvery;
        log(minuteLine(s, faults.total, ((s.queries - printedQueries) * 1000) / (now - printedAt)));
        printedQueries = s.queries;
        printedAt = now;
      }
    }
    await new Promise((r) => setTimeout(r, Math.max(10, Math.min(nextFault, nextSample, endAt) - performance.now())));
  }
  // The closing sample (and line), unless the last one was just taken.
  const tail = samples[samples.length - 1];
  if (tail === undefined || performance.now() - started - tail.t * 1000 > 1000) {
    const s = await sample();
    log(minuteLine(s, faults.total, ((s.queries - printedQueries) * 1000) / (performance.now() - printedAt)));
  }
  stopped = true;
  await Promise.all(workers);
  const verdict = judgeSoak(samples, { poolSize: o.poolSize, sessions: o.tcpSessions + o.quicSessions });
  await tcpPool.end();
  await quicPool?.end();
  const wan = await stack.path.facts();
  const udpLost = wan.randomDrops === null ? 0 : wan.randomDrops[0] + wan.randomDrops[1];
  await stack.close();

  const first = samples[0];
  const last = samples[samples.length - 1];
  const summary: SoakSummary = {
    minutes: Number(((performance.now() - started) / 60_000).toFixed(2)),
    samples: samples.length,
    rssStartMb: Number((first?.rssMb ?? 0).toFixed(1)),
    rssEndMb: Number((last?.rssMb ?? 0).toFixed(1)),
    rssMaxMb: Number(Math.max(0, ...samples.map((s) => s.rssMb)).toFixed(1)),
    heapStartMb: Number((first?.heapUsedMb ?? 0).toFixed(1)),
    heapEndMb: Number((last?.heapUsedMb ?? 0).toFixed(1)),
    queries: counters.queries,
    byKind: counters.byKind,
    errors: counters.errors,
    unexpectedErrors: counters.unexpectedErrors,
    mismatches: counters.mismatches,
    faults: faults.injected,
    faultsMissed: faults.missed,
    backendsMax: Math.max(0, ...samples.map((s) => s.backends)),
    streamsMax: Math.max(0, ...samples.map((s) => s.streams)),
    clientsMax: Math.max(0, ...samples.map((s) => s.clients)),
    wanMeasuredRttMs: wan.rttMs,
    udpLost,
    verdict,
    lastUnexpectedErrors: counters.lastUnexpected,
  };
  log('');
  log(summaryTable(summary));
  for (const e of counters.lastUnexpected) log(`  unexpected: ${e}`);
  if (o.json) log(JSON.stringify(summary));
  return verdict.ok && !interrupted ? 0 : 1;
}
