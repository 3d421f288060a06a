// A fixed pool of N sessions with one FIFO queue, shared by every client variant (they differ only in how a session talks to
// Postgres). Bounded: `maxQueue` waiters, the rest refused; one past its deadline is dropped, so overload shows as failures.
import type { ClientVariant } from './variant.js';
import { Fifo, QueryRejected } from './variant.js';
import { performance } from 'node:perf_hooks';

/** One Postgres session of a variant: runs one query at a time. */
export type Session = { query(sql: string): Promise<void>; close(): Promise<void> };

export interface PooledVariantOptions {
  name: string;
  sessions: number;
  /** Opens one session; called `sessions` times by open(). */
  connect: (index: number) => Promise<Session>;
  /** Most queries waiting for a session. Default 100 000. */
  maxQueue?: number;
  /** Sessions opened at once during open() (avoids a connection storm). Default 50. */
  connectConcurrency?: number;
  /** Clock of the deadlines. Default performance.now. */
  now?: () => number;
  /** Runs once the sessions are closed (what they were opened over). */
  afterClose?: () => Promise<void>;
}

type Waiter = { sql: string; deadline: number; resolve: () => void; reject: (error: unknown) => void };

export class PooledVariant implements ClientVariant {
  readonly name: string;
  readonly sessions: number;
  private readonly idle: Session[] = [];
  private readonly all: Session[] = [];
  private readonly waiting = new Fifo<Waiter>();
  private closed = false;

  constructor(private readonly options: PooledVariantOptions) {
    this.name = options.name;
    this.sessions = options.sessions;
  }

  async open(): Promise<void> {
    const concurrency = Math.max(1, this.options.connectConcurrency ?? 50);
    for (let start = 0; start < this.sessions; start += concurrency) {
      const batch = Array.from({ length: Math.min(concurrency, this.sessions - start) }, (_, i) => this.options.connect(start + i));
      const settled = await Promise.allSettled(batch);
      for (const result of settled) if (result.status === 'fulfilled') this.all.push(result.value);
      const failure = settled.find((result) => result.status === 'rejected');
      if (failure !== undefined) {
        await this.close();
        throw new Error(`${this.name}: could not open session: ${String(failure.reason)}`);
      }
    }
    this.idle.push(...this.all);
  }

  /** Queries waiting for a session right now (the client-side backlog). */
  get backlog(): number {
    return this.waiting.length;
  }

  query(sql: string, deadline: number): Promise<void> {
    if (this.closed) return Promise.reject(new QueryRejected('closed'));
    const session = this.idle.pop();
    if (session !== undefined) return this.run(session, sql);
    if (this.waiting.length >= (this.options.maxQueue ?? 100_000)) return Promise.reject(new QueryRejected('queue-full'));
    return new Promise<void>((resolve, reject) => this.waiting.push({ sql, deadline, resolve, reject }));
  }

  private run(session: Session, sql: string): Promise<void> {
    const done = (): void => this.release(session);
    const promise = session.query(sql);
    promise.then(done, done);
    return promise;
  }

  /** Hands a freed session to the oldest waiter still worth running. */
  private release(session: Session): void {
    if (this.closed) return;
    const now = this.options.now?.() ?? performance.now();
    // Bounded by the queue length; expired waiters were already counted as timeouts by the generator.
    for (let next = this.waiting.shift(); next !== undefined; next = this.waiting.shift()) {
      if (next.deadline <= now) {
        next.reject(new QueryRejected('timeout'));
        continue;
      }
      this.run(session, next.sql).then(next.resolve, next.reject);
      return;
    }
    this.idle.push(session);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (let waiter = this.waiting.shift(); waiter !== undefined; waiter = this.waiting.shift()) waiter.reject(new QueryRejected('closed'));
    const sessions = this.all.splice(0);
    this.idle.length = 0;
    await Promise.allSettled(sessions.map((s) => s.close()));
    await this.options.afterClose?.();
  }
}
