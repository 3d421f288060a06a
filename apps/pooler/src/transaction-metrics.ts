// The per-transaction metrics: quicpool_transactions_total and the transaction and wait duration
// histograms, labelled by database, user and transport.
//
// They are counted here, not by prom-client's observe(): prom-client hashes a labels object and
// looks up its bucket map on every observation (~1 µs per transaction for the three series, 3-4%
// of the daemon's CPU under pgbench -S). A transaction costs three Map lookups that find its label
// set (no key string, no labels object) and two bucket scans over a few numbers. The histograms
// are prom-client Histograms whose exposition (get, getForPromString) is built from these counts
// at scrape time, in the shape prom-client's own has (the worker threads' AggregatorRegistry sums
// it like any histogram's); the counter is set from the transaction histogram's count at each scrape.
import { Counter, Histogram } from 'prom-client';
import type { MetricObjectWithValues, MetricType, MetricValueWithName, Registry } from 'prom-client';
import type { Pooler } from '@quicpool/pooler';

type LabelName = 'database' | 'user' | 'transport';
type Labels = Readonly<Record<LabelName, string>>;
const LABEL_NAMES: readonly LabelName[] = ['database', 'user', 'transport'];
/** A histogram's `type` as prom-client has it at run time (its index.d.ts declares a numeric enum that does not exist at run time). */
const HISTOGRAM = 'histogram' as unknown as MetricType;

/** Observations of one histogram for one label set: a count per upper bound (not cumulative), their sum and count. */
class Buckets {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(private readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length);
  }

  observe(v: number): void {
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (v <= bounds[i]!) {
        this.counts[i]!++;
        break;
      }
    }
    this.sum += v;
    this.count++;
  }
}

/** One label set's figures. */
interface Series {
  readonly labels: Labels;
  readonly xact: Buckets;
  readonly wait: Buckets;
}

/** A prom-client Histogram whose values are the counts of `series` (its own observe() is not used). */
class CountedHistogram extends Histogram<LabelName | 'le'> {
  private readonly o: HistogramSpec;

  constructor(
    o: HistogramSpec,
    private readonly of: () => Iterable<{ labels: Labels; buckets: Buckets }>,
  ) {
    super({ name: o.name, help: o.help, labelNames: LABEL_NAMES, buckets: [...o.buckets], registers: [o.registry] });
    this.o = o;
  }

  override async get(): Promise<MetricObjectWithValues<MetricValueWithName<LabelName | 'le'>>> {
    const { name, help, buckets: bounds } = this.o;
    const values: MetricValueWithName<LabelName | 'le'>[] = [];
    for (const { labels, buckets } of this.of()) {
      let cumulative = 0;
      bounds.forEach((le, i) => {
        cumulative += buckets.counts[i]!;
        values.push({ labels: { le, ...labels }, value: cumulative, metricName: `${name}_bucket` });
      });
      values.push({ labels: { le: '+Inf', ...labels }, value: buckets.count, metricName: `${name}_bucket` });
      values.push({ labels: { ...labels }, value: buckets.sum, metricName: `${name}_sum` });
      values.push({ labels: { ...labels }, value: buckets.count, metricName: `${name}_count` });
    }
    // Plain data, as prom-client's own get() gives (its index.d.ts adds a `collect` it does not
    // return): worker threads post this to the main thread, and a function cannot be cloned.
    const metric: Omit<MetricObjectWithValues<MetricValueWithName<LabelName | 'le'>>, 'collect'> = { name, help, type: HISTOGRAM, values, aggregator: 'sum' };
    return metric as MetricObjectWithValues<MetricValueWithName<LabelName | 'le'>>;
  }

  /** What the registry's text exposition reads; the same values as get(). */
  async getForPromString(): Promise<MetricObjectWithValues<MetricValueWithName<LabelName | 'le'>>> {
    return this.get();
  }
}

interface HistogramSpec {
  readonly name: string;
  readonly help: string;
  readonly buckets: readonly number[];
  readonly registry: Registry;
}

const XACT_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const WAIT_BUCKETS = [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30];

/** Registers the transaction series in `registry` and feeds them from `pooler`'s transaction events. */
export function addTransactionMetrics(registry: Registry, pooler: Pick<Pooler, 'events'>): void {
  const all: Series[] = [];
  const byDatabase = new Map<string, Map<string, Map<string, Series>>>();
  const seriesOf = (database: string, user: string, transport: string): Series => {
    let byUser = byDatabase.get(database);
    if (byUser === undefined) byDatabase.set(database, (byUser = new Map()));
    let byTransport = byUser.get(user);
    if (byTransport === undefined) byUser.set(user, (byTransport = new Map()));
    let s = byTransport.get(transport);
    if (s === undefined) {
      s = { labels: { database, user, transport }, xact: new Buckets(XACT_BUCKETS), wait: new Buckets(WAIT_BUCKETS) };
      byTransport.set(transport, s);
      all.push(s);
    }
    return s;
  };

  new Counter({
    name: 'quicpool_transactions_total',
    help: 'Transactions (server connection lent and given back).',
    labelNames: LABEL_NAMES,
    registers: [registry],
    // The transactions are the transaction histogram's observations.
    collect() {
      this.reset();
      for (const s of all) this.inc(s.labels, s.xact.count);
    },
  });
  new CountedHistogram(
    {
      name: 'quicpool_transaction_duration_seconds',
      help: 'Time a client held a server connection: one transaction (in transaction pooling, the query latency seen at the pooler).',
      buckets: XACT_BUCKETS,
      registry,
    },
    () => all.map((s) => ({ labels: s.labels, buckets: s.xact })),
  );
  new CountedHistogram(
    { name: 'quicpool_wait_duration_seconds', help: 'Time a client waited for a server connection.', buckets: WAIT_BUCKETS, registry },
    () => all.map((s) => ({ labels: s.labels, buckets: s.wait })),
  );

  pooler.events.transaction.add((e) => {
    const s = seriesOf(e.database, e.user, e.transport);
    s.xact.observe(e.xactMs / 1000);
    s.wait.observe(e.waitMs / 1000);
  });
}
