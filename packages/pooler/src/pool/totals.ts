// What a pool has served since it was made (SHOW STATS, the metrics): numbers only, added to
// once per transaction and once per client report, nothing allocated.
export class PoolTotals {
  /** Backends handed to clients (one per transaction in transaction pooling), and the time they were held (ms). */
  xactCount = 0;
  xactTimeMs = 0;
  /** Of those handed out, the time clients waited for them (ms). */
  waitTimeMs = 0;
  /** Of those, the ones the plain lane carried (driver/plain-lane.md). */
  plainXactCount = 0;
  /** Server connections opened (attempts). */
  connects = 0;
  /** Requests answered with ReadyForQuery, and the time they ran (µs). */
  queryCount = 0;
  queryTimeUs = 0;
  receivedBytes = 0;
  sentBytes = 0;

  /** A backend came back after `xactMs`; its client had waited `waitMs` for it. */
  transaction(xactMs: number, waitMs: number): void {
    this.xactCount++;
    this.xactTimeMs += xactMs;
    this.waitTimeMs += waitMs;
  }

  /** A client's traffic since it last reported. */
  traffic(queries: number, queryTimeUs: number, receivedBytes: number, sentBytes: number, plainXacts: number): void {
    this.plainXactCount += plainXacts;
    this.queryCount += queries;
    this.queryTimeUs += queryTimeUs;
    this.receivedBytes += receivedBytes;
    this.sentBytes += sentBytes;
  }
}
