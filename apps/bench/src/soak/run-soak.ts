// The soak (`pnpm bench:soak`): mixed load (workload.ts) over TCP and QUIC across the WAN path to the real daemon (stack.ts),
// a fault every few seconds (faults.ts), a line every minute; then the last third is judged (verdict.ts): the exit code.
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { QuicPool } from '@quicpool/client';
import type { SoakOptions } from './options.js';
import { QUIC_IDLE_MS, startSoakStack } from './stack.js';
import { newCounters, soakWorker } from './workload.js';
import { FaultInjector } from './faults.js';
import { judgeSoak } from './verdict.js';
import type { SoakSample } from './verdict.js';
import { minuteLine, soakSummary, summaryTable } from './report.js';

export async function runSoak(o: SoakOptions): Promise<number> {
  const log = (line: string): void => void process.stdout.write(`${line}\n`);

  const stack = await startSoakStack(o, log);
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
  try {
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
    const load = { counters, stopped: () => stopped, faultRecent: () => faults.recent() };
    const workers = [
      ...Array.from({ length: o.tcpSessions }, (_, i) => soakWorker(tcpPool, i, load)),
      ...(quicPool === null ? [] : Array.from({ length: o.quicSessions }, (_, i) => soakWorker(quicPool, 1000 + i, load))),
    ];

    const samples: SoakSample[] = [];
    const sample = async (): Promise<SoakSample> => {
      const s = await stack.sample(started, counters);
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
    const print = (s: SoakSample, now: number): void => {
      log(minuteLine(s, faults.total, ((s.queries - printedQueries) * 1000) / (now - printedAt)));
      printedQueries = s.queries;
      printedAt = now;
    };
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
          print(s, now);
        }
      }
      await new Promise((r) => setTimeout(r, Math.max(10, Math.min(nextFault, nextSample, endAt) - performance.now())));
    }
    // The closing sample (and line), unless the last one was just taken.
    const tail = samples[samples.length - 1];
    if (tail === undefined || performance.now() - started - tail.t * 1000 > 1000) print(await sample(), performance.now());
    stopped = true;
    await Promise.all(workers);
    const verdict = judgeSoak(samples, { poolSize: o.poolSize, sessions: o.tcpSessions + o.quicSessions });
    await tcpPool.end();
    await quicPool?.end();
    const wan = await stack.path.facts();
    const minutes = Number(((performance.now() - started) / 60_000).toFixed(2));
    const summary = soakSummary(minutes, samples, counters, faults, verdict, wan);
    log('');
    log(summaryTable(summary));
    for (const e of counters.lastUnexpected) log(`  unexpected: ${e}`);
    if (o.json) log(JSON.stringify(summary));
    return verdict.ok && !interrupted ? 0 : 1;
  } finally {
    await tcpPool.end().catch(() => undefined);
    await quicPool?.end().catch(() => undefined);
    await stack.close();
  }
}
