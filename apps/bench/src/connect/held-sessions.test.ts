// bench:connect's part (c) on a small scale: N real pg sessions held open at once and a process read
// through /proc while they are. The "pooler" here is this test process (it holds the client ends),
// so the count is exact without starting a daemon; the real run reads the daemon's pid the same way.
import { describe, expect, inject, it } from 'vitest';
import type {} from '@quicpool/pg-fixture';
import { readProcFds } from '../telemetry/proc.js';
import { holdSessions, poolerFootprint } from './held-sessions.js';

const pg = inject('pg');
const client = { host: pg.host, port: pg.port, user: pg.user, password: pg.password, database: pg.database };

describe('holdSessions', () => {
  it('holds N sessions open at once, reads the process meanwhile, and ends them all', async () => {
    const r = await holdSessions({ poolerPid: process.pid, count: 12, concurrency: 4, client, deadlineMs: 20_000 });
    expect(r.sessions).toBe(12);
    expect(r.held.sockets - r.before.sockets).toBeGreaterThanOrEqual(12);
    expect(r.held.fds - r.before.fds).toBeGreaterThanOrEqual(12);
    expect(r.held.rssBytes).toBeGreaterThan(0);
    // Every client ended before holdSessions returned: their sockets are closed.
    expect(readProcFds(process.pid)!.sockets).toBeLessThanOrEqual(r.before.sockets);
  });

  it('fails with the first error when a session cannot log in, and leaves nothing open', async () => {
    const before = poolerFootprint(process.pid);
    await expect(holdSessions({ poolerPid: process.pid, count: 6, concurrency: 3, client: { ...client, password: 'not the password' }, deadlineMs: 20_000 }))
      .rejects.toThrow(/opening 6 sessions failed after \d+: .*password authentication failed/);
    expect(readProcFds(process.pid)!.sockets).toBeLessThanOrEqual(before.sockets);
  });

  it('throws for a process it cannot read', () => {
    expect(() => poolerFootprint(2 ** 22 + 12345)).toThrow(/cannot read \/proc/);
  });
});
