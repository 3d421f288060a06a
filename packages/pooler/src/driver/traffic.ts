// A session's traffic not yet added to its pool's totals (SHOW STATS): bytes each way, requests
// answered, and the time requests were out (the 'query' timer runs exactly while they are). Added
// per transaction and at the end, as numbers only: nothing allocated per message.
import type { Pool } from '../pool/pool.js';

export class Traffic {
  receivedBytes = 0;
  sentBytes = 0;
  /** Transactions the plain lane carried (plain-lane.md). */
  plainXacts = 0;
  private queriesCounted = 0;
  private queryMs = 0;
  /** Clock time requests went out, else -1. */
  private queryStartedAt = -1;

  /** Requests went out (`out`), or every one is answered. */
  requestsOut(out: boolean, now: number): void {
    if (out) {
      if (this.queryStartedAt < 0) this.queryStartedAt = now;
    } else if (this.queryStartedAt >= 0) {
      this.queryMs += now - this.queryStartedAt;
      this.queryStartedAt = -1;
    }
  }

  /** Adds what came since the last report to `pool`'s totals; `queriesAnswered` counts from the session's start. */
  report(pool: Pool, queriesAnswered: number): void {
    pool.addTraffic(queriesAnswered - this.queriesCounted, this.queryMs * 1000, this.receivedBytes, this.sentBytes, this.plainXacts);
    this.plainXacts = 0;
    this.queriesCounted = queriesAnswered;
    this.queryMs = 0;
    this.receivedBytes = 0;
    this.sentBytes = 0;
  }
}
