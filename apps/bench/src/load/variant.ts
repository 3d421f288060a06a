// What the load generator drives: a "client variant", one way of reaching Postgres (direct, TCP or QUIC through
// the pooler ...) with its own sessions. The generator knows nothing else of it: new transports implement this.
import type { FailureReason } from '../telemetry/recorder.js';

/** The original article's workload query. */
export const WORKLOAD_SQL = 'SELECT trunc(random() * 100) FROM generate_series(1, 10)';

export interface ClientVariant {
  /** Short label used in CSV file names, charts and the JSON summary (e.g. "tcp", "quic"). */
  readonly name: string;
  /** How many sessions (Postgres client sessions) it holds open: TCP sockets or QUIC streams. */
  readonly sessions: number;
  /** Opens every session (startup + auth); rejects if any cannot be opened. */
  open(): Promise<void>;
  // Runs one query after a free session (FIFO): the wait is part of its latency. Past `deadline` (performance.now())
  // the generator has counted it failed: drop it from the queue, do not run it. Rejects with QueryRejected or a driver's error.
  query(sql: string, deadline: number): Promise<void>;
  /** Closes every session; pending queries are rejected. Idempotent. */
  close(): Promise<void>;
}

/** Why a query did not run; any other rejection counts as 'error'. */
export class QueryRejected extends Error {
  constructor(readonly reason: FailureReason) {
    super(`query rejected: ${reason}`);
    this.name = 'QueryRejected';
  }
}

export const failureReasonOf = (error: unknown): FailureReason => (error instanceof QueryRejected ? error.reason : 'error');

/** The queues of the load generator and the session pool: an array with a moving head, compacted once half of it is consumed. */
export class Fifo<T> {
  private items: T[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  peek(): T | undefined {
    return this.items[this.head];
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.head += 1;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }
}
