// `pnpm bench:lan`: pgbench -S direct vs through quicpool (TCP) vs through PgBouncer (when
// installed), on loopback, in one run.
//   node dist/bin/lan.js [--json] [--duration 20] [--quick] [--rounds 1] [--warmup 2] [--clients 50]
//                        [--jobs 2] [--pool-size 20] [--profile DIR] [--targets direct,quicpoolTcp,pgbouncer[,nodeForwarder,transportForwarder]]
//                        [--worker-flag --perf-basic-prof]... [--rate TPS] [--workers 1,2]
// --workers: quicpool's worker-thread counts, a daemon each, all measured in every round (default 1).
// --rate: pgbench -R (fixed rate): CPU µs per transaction then compares at equal load on a busy machine.
// quicpool is the real daemon (`quicpool start` with a generated config, TCP only).
// --baseline <path of another build's apps/pooler/dist/cli.js>: that build's daemon is measured too, in
// every round right after quicpoolTcp (target quicpoolBaseline): a before/after comparison under the same load.
// --targets may add nodeForwarder: a Node.js process that pipes each client connection to its own server
// connection (no pooling, no parsing): a reference for what Node's sockets alone cost per transaction;
// and transportForwarder: the same through @quicpool/transport's fast paths (readInto, writeChunk), as the pooler uses them.
// --quick: 5 s per target. --rounds N: N interleaved rounds, medians reported (noisy machines). --profile: a V8 CPU profile of the quicpool daemon into DIR.
// With --json the last line is one JSON object of the figures. This program is also the forked
// Node forwarder of its own runs (WORKER_FLAG).
import { fileURLToPath } from 'node:url';
import { parseCommandLine } from '../command-line.js';
import { runLan, SELECTABLE_TARGETS } from '../lan/run-lan.js';
import { runNodeForwarder, WORKER_FLAG } from '../lan/node-forwarder.js';
import type { ForwarderTarget } from '../lan/node-forwarder.js';

const workerAt = process.argv.indexOf(WORKER_FLAG);
if (workerAt >= 0) {
  await runNodeForwarder(JSON.parse(process.argv[workerAt + 1] ?? '{}') as ForwarderTarget);
} else {
  const { values } = parseCommandLine('pnpm bench:lan', {
    options: {
      json: { type: 'boolean', default: false },
      quick: { type: 'boolean', default: false },
      duration: { type: 'string' },
      warmup: { type: 'string', default: '2' },
      rounds: { type: 'string', default: '1' },
      clients: { type: 'string', default: '50' },
      jobs: { type: 'string', default: '2' },
      'pool-size': { type: 'string', default: '20' },
      profile: { type: 'string' },
      targets: { type: 'string', default: 'direct,quicpoolTcp,pgbouncer' },
      rate: { type: 'string' },
      baseline: { type: 'string' },
      'worker-flag': { type: 'string', multiple: true, default: [] },
      workers: { type: 'string', default: '1' },
    },
  });
  const positive = (name: string, v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a whole number, got ${v}`);
    return n;
  };
  try {
    await runLan({
      durationS: positive('duration', values.duration ?? (values.quick ? '5' : '20')),
      warmupS: positive('warmup', values.warmup),
      rounds: Math.max(1, positive('rounds', values.rounds)),
      clients: positive('clients', values.clients),
      jobs: positive('jobs', values.jobs),
      poolSize: positive('pool-size', values['pool-size']),
      json: values.json,
      profileDir: values.profile ?? null,
      workerFlags: values['worker-flag'],
      rate: values.rate === undefined ? null : positive('rate', values.rate),
      baseline: values.baseline ?? null,
      targets: new Set(values.targets.split(',').map((t) => {
        const known = SELECTABLE_TARGETS.find((name) => name === t);
        if (known === undefined) throw new Error(`--targets: unknown target ${t}`);
        return known;
      })),
      script: fileURLToPath(import.meta.url),
      workers: [...new Set(values.workers.split(',').map((w) => {
        const n = positive('workers', w);
        if (n < 1 || n > 256) throw new Error(`--workers: each count must be 1-256, got ${w}`);
        return n;
      }))],
    });
  } catch (e) {
    process.stderr.write(`bench:lan failed: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 1;
  }
}
