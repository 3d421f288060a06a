// A log-linear latency histogram like HdrHistogram's: values below 2*SUB exact, each power of two above in SUB buckets, so a
// percentile is within 1/SUB (0.8%). Fixed memory, O(1) record, no allocation on the hot path (every query).

const SUB_BITS = 7;
const SUB = 1 << SUB_BITS; // 128 buckets per power of two
/** Largest value kept as itself; larger ones are clamped (2^31 µs is about 36 minutes). */
const HISTOGRAM_MAX_VALUE = 0x7fffffff;
const BUCKETS = (31 - SUB_BITS + 1) * SUB;

/** The nearest-rank definition used everywhere in the benchmark: the ceil(p% * n)-th smallest value. */
export function nearestRank(percentile: number, count: number): number {
  // The epsilon keeps 0.99 * 100 (= 99.00000000000001 in floating point) at rank 99.
  return Math.min(count, Math.max(1, Math.ceil((percentile / 100) * count - 1e-9)));
}

function indexOf(value: number): number {
  if (value < 2 * SUB) return value;
  const msb = 31 - Math.clz32(value);
  const shift = msb - SUB_BITS;
  return shift * SUB + (value >>> shift);
}

/** Highest value that lands in bucket `index`. */
function upperOf(index: number): number {
  if (index < 2 * SUB) return index;
  const shift = Math.floor(index / SUB) - 1;
  const mantissa = index - shift * SUB;
  return (mantissa + 1) * 2 ** shift - 1;
}

export class Histogram {
  private readonly counts = new Float64Array(BUCKETS);
  private total = 0;
  private sum = 0;
  private minValue = Number.POSITIVE_INFINITY;
  private maxValue = 0;

  /** Records a non-negative value (rounded to an integer, clamped to HISTOGRAM_MAX_VALUE). */
  record(value: number): void {
    const v = Math.min(HISTOGRAM_MAX_VALUE, Math.max(0, Math.round(value)));
    const i = indexOf(v);
    this.counts[i] = (this.counts[i] ?? 0) + 1;
    this.total += 1;
    this.sum += v;
    if (v < this.minValue) this.minValue = v;
    if (v > this.maxValue) this.maxValue = v;
  }

  get count(): number {
    return this.total;
  }

  get max(): number {
    return this.total === 0 ? 0 : this.maxValue;
  }

  get mean(): number {
    return this.total === 0 ? 0 : this.sum / this.total;
  }

  /** Nearest-rank percentile (0..100); 0 when empty. Never above max nor below min. */
  percentile(p: number): number {
    if (this.total === 0) return 0;
    const rank = nearestRank(p, this.total);
    let seen = 0;
    for (let i = 0; i < BUCKETS; i++) {
      seen += this.counts[i] ?? 0;
      if (seen >= rank) return Math.max(this.minValue, Math.min(this.maxValue, upperOf(i)));
    }
    return this.maxValue;
  }

  /** Adds another histogram's counts (interval histograms roll up into the run's). */
  add(other: Histogram): void {
    for (let i = 0; i < BUCKETS; i++) this.counts[i] = (this.counts[i] ?? 0) + (other.counts[i] ?? 0);
    this.total += other.total;
    this.sum += other.sum;
    if (other.total > 0) {
      this.minValue = Math.min(this.minValue, other.minValue);
      this.maxValue = Math.max(this.maxValue, other.maxValue);
    }
  }
}
