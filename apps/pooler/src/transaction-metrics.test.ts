// The transaction series counted by addTransactionMetrics read exactly as prom-client's own Counter
// and Histograms fed the same events would: the text exposition, and the worker threads' sum
// (AggregatorRegistry over two registries' JSON).
import fc from 'fast-check';
import { AggregatorRegistry, Counter, Histogram, Registry } from 'prom-client';
import type { Pooler } from '@quicpool/pooler';
import { describe, expect, it } from 'vitest';
import { addTransactionMetrics } from './transaction-metrics.js';

type TxEvent = Parameters<Pooler['events']['transaction'] extends Set<infer L> ? L : never>[0];

/** prom-client's own series, fed per event: what the exposition must equal. */
function reference(): { registry: Registry; feed(e: TxEvent): void } {
  const registry = new Registry();
  const labelNames = ['database', 'user', 'transport'] as const;
  const total = new Counter({ name: 'quicpool_transactions_total', help: 'Transactions (server connection lent and given back).', labelNames, registers: [registry] });
  const xact = new Histogram({
    name: 'quicpool_transaction_duration_seconds',
    help: 'Time a client held a server connection: one transaction (in transaction pooling, the query latency seen at the pooler).',
    labelNames,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const wait = new Histogram({
    name: 'quicpool_wait_duration_seconds',
    help: 'Time a client waited for a server connection.',
    labelNames,
    buckets: [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
    registers: [registry],
  });
  return {
    registry,
    feed: (e) => {
      const labels = { database: e.database, user: e.user, transport: e.transport };
      total.inc(labels);
      xact.observe(labels, e.xactMs / 1000);
      wait.observe(labels, e.waitMs / 1000);
    },
  };
}

function counted(): { registry: Registry; feed(e: TxEvent): void } {
  const registry = new Registry();
  const events: Pooler['events'] = { client: new Set(), transaction: new Set(), upstream: new Set() };
  addTransactionMetrics(registry, { events });
  return { registry, feed: (e) => events.transaction.forEach((l) => l(e)) };
}

const event: fc.Arbitrary<TxEvent> = fc.record({
  database: fc.constantFrom('app', 'other'),
  user: fc.constantFrom('alice', 'bob'),
  transport: fc.constantFrom('tcp', 'tls', 'quic') as fc.Arbitrary<TxEvent['transport']>,
  // Bucket bounds themselves (x 1000) as well as values between and beyond them.
  waitMs: fc.oneof(fc.constantFrom(0, 0.1, 1, 5, 30_000, 40_000), fc.double({ min: 0, max: 50_000, noNaN: true })),
  xactMs: fc.oneof(fc.constantFrom(0.5, 1, 2.5, 10_000, 12_000), fc.double({ min: 0, max: 20_000, noNaN: true })),
});

describe('addTransactionMetrics', () => {
  it('exposes what prom-client would for the same events, scrape after scrape', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(event, { maxLength: 30 }), { minLength: 1, maxLength: 3 }), async (batches) => {
        const ours = counted();
        const ref = reference();
        for (const batch of batches) {
          for (const e of batch) {
            ours.feed(e);
            ref.feed(e);
          }
          expect(await ours.registry.metrics()).toBe(await ref.registry.metrics());
        }
      }),
      { numRuns: 60 },
    );
  });

  it('sums across worker registries as prom-client histograms do', async () => {
    const events = fc.sample(event, 200);
    const [a, b, ra, rb] = [counted(), counted(), reference(), reference()];
    events.forEach((e, i) => (i % 2 === 0 ? [a, ra] : [b, rb]).forEach((m) => m.feed(e)));
    const sum = async (x: Registry, y: Registry): Promise<string> =>
      AggregatorRegistry.aggregate([await x.getMetricsAsJSON(), await y.getMetricsAsJSON()]).metrics();
    // What a worker thread posts to the main thread must be plain data.
    const posted = await a.registry.getMetricsAsJSON();
    expect(() => structuredClone(posted)).not.toThrow();
    const expected = await sum(ra.registry, rb.registry);
    expect(expected).toContain('quicpool_transaction_duration_seconds_bucket{');
    expect(await sum(a.registry, b.registry)).toBe(expected);
  });
});
