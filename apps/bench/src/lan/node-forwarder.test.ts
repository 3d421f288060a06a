// bench:lan's reference forwarders, both kinds, as the bench runs them (forked from the built
// quicpool-bench.js): node-postgres through each reaches the fixture's Postgres and gets its answers whole,
// including one larger than a read buffer (the transport kind reuses its buffer between reads), and
// stopping a forwarder ends its process.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type {} from '@quicpool/pg-fixture';
import { buildBenchScript } from '../../test/build-bench.js';
import type { ForwarderKind } from './node-forwarder.js';
import { startNodeForwarder } from './node-forwarder.js';

const fixture = inject('pg');
let built: ReturnType<typeof buildBenchScript>;

beforeAll(() => {
  built = buildBenchScript();
});
afterAll(() => built.remove());

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe.each<ForwarderKind>(['net', 'transport'])('the %s forwarder', (kind) => {
  it('carries sessions to Postgres and back, untouched', async () => {
    const forwarder = await startNodeForwarder(built.script, { host: fixture.host, port: fixture.port, kind });
    try {
      const clients = Array.from({ length: 3 }, () => new pg.Client({ host: '127.0.0.1', port: forwarder.port, user: fixture.user, password: fixture.password, database: fixture.database }));
      await Promise.all(clients.map((c) => c.connect()));
      try {
        for (const [i, c] of clients.entries()) {
          const r = await c.query<{ n: number }>('select $1::int as n', [i]);
          expect(r.rows).toEqual([{ n: i }]);
        }
        // ~200 KB of rows: several reads, more than one 64 KiB buffer.
        const big = await clients[0]!.query<{ s: string }>("select repeat('x', 1000) || g as s from generate_series(1, 200) g");
        expect(big.rows).toHaveLength(200);
        expect(big.rows[199]?.s).toBe(`${'x'.repeat(1000)}200`);
      } finally {
        await Promise.all(clients.map((c) => c.end()));
      }
    } finally {
      await forwarder.stop();
    }
    expect(alive(forwarder.pid)).toBe(false);
  });
});
