// A node-postgres session (one pg.Client, one connection). By default a query is the simple Query message, one
// round trip; with `prepare` (--original-exact) it is what the original benchmark's Rust client did, Parse+Describe+Sync
// then Bind+Execute+Sync, two round trips: what put the article's TCP plateau at 500 sessions / (2 x RTT). That goes
// through pg's public "submittable" extension point (as pg-cursor does), so pg's own state machine stays consistent.
import pg from 'pg';
import type { ClientConfig, Connection, Submittable } from 'pg';
import type { Session } from './session-pool.js';

/** One extended-protocol exchange ending in Sync: settles on ReadyForQuery. */
class ProtocolStep implements Submittable {
  private error: unknown = null;
  private settle: ((error: unknown) => void) | null = null;
  readonly done = new Promise<void>((resolve, reject) => {
    this.settle = (error) => (error === null ? resolve() : reject(error));
  });

  constructor(readonly submit: (connection: Connection) => void) {}

  // pg calls these by name on the active submittable; rows are read and dropped.
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleCommandComplete(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyInResponse(): void {}
  handleCopyData(): void {}

  handleError(error: unknown): void {
    this.error = error;
    // A connection-level error never gets a ReadyForQuery: settle now (a second settle is a no-op).
    this.handleReadyForQuery();
  }

  handleReadyForQuery(): void {
    this.settle?.(this.error);
    this.settle = null;
  }
}

/** Runs one exchange on the client and waits for its ReadyForQuery. */
function exchange(client: pg.Client, write: (connection: Connection) => void): Promise<void> {
  const step = new ProtocolStep(write);
  client.query(step);
  return step.done;
}

let statements = 0;

/** Opens one session; resolves once authenticated and ready. `prepare`: two round trips per query, as the original client. */
export async function openPgSession(options: { config: ClientConfig; prepare?: boolean }): Promise<Session> {
  const client = new pg.Client(options.config);
  // A dropped connection must fail its queries, not crash the benchmark with an unhandled 'error'.
  let broken: unknown = null;
  client.on('error', (error: unknown) => (broken = error));
  await client.connect();
  return {
    async query(sql: string): Promise<void> {
      if (broken !== null) throw broken;
      if (options.prepare !== true) {
        await client.query(sql);
        return;
      }
      // A named statement per query, as tokio-postgres' `prepare` (the original client) does: an
      // unnamed one would not survive a transaction pooler, which may give the Bind another server
      // connection once the first Sync ended the transaction. The statement is closed with the
      // second exchange (tokio-postgres closes it when the Statement is dropped), so nothing accumulates.
      statements += 1;
      const name = `qpb_s${statements}`;
      await exchange(client, (c) => {
        c.parse({ name, text: sql, types: [] }, true);
        c.describe({ type: 'S', name }, true);
        c.sync();
      });
      await exchange(client, (c) => {
        c.bind({ portal: '', statement: name, values: [] }, true);
        c.execute({ portal: '' }, true); // rows omitted = all rows
        c.close({ type: 'S', name }, true);
        c.sync();
      });
    },
    async close(): Promise<void> {
      await client.end().catch(() => undefined);
    },
  };
}
