// Stopping: SIGTERM drains (a transaction in progress may finish, then exit 0), a second signal
// stops at once (exit 3), and the admin SHUTDOWN command drains like SIGTERM.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type {} from '@quicpool/pg-fixture';
import { startDaemon } from './daemon.js';
import type { Daemon } from './daemon.js';

const upstream = inject('pg');
let dir: string;
let file: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'quicpool-signals-'));
  file = join(dir, 'quicpool.toml');
  await writeFile(
    file,
    `[upstream]\nhost = "${upstream.host}"\nport = ${upstream.port}\n[listen]\nquic = false\n[metrics]\nenabled = false\n[admin]\nusers = ["${upstream.user}"]\n[users.${upstream.user}]\npassword = "${upstream.password}"\n`,
  );
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function start(): Promise<{ daemon: Daemon; port: number; connect: (db?: string) => Promise<pg.Client> }> {
  const daemon = await startDaemon(['--config', file, '--state-dir', dir, '--port', '0']);
  const port = daemon.port('tcp');
  const connect = async (database = upstream.database): Promise<pg.Client> => {
    const c = new pg.Client({ host: '127.0.0.1', port, user: upstream.user, password: upstream.password, database });
    c.on('error', () => undefined);
    await c.connect();
    return c;
  };
  return { daemon, port, connect };
}

const alive = (d: Daemon): boolean => d.child.exitCode === null && d.child.signalCode === null;

describe('signals', () => {
  it('SIGTERM lets a running transaction finish, refuses new clients, then exits 0', async () => {
    const { daemon, connect } = await start();
    try {
      const c = await connect();
      await c.query('BEGIN');
      daemon.child.kill('SIGTERM');
      await daemon.waitFor(/draining client sessions/);
      await expect(connect()).rejects.toThrow();
      expect(alive(daemon)).toBe(true); // still draining: the transaction is open
      expect((await c.query('SELECT 7 AS n')).rows).toEqual([{ n: 7 }]);
      await c.query('COMMIT');
      expect(await daemon.stop('SIGCONT')).toBe(0); // SIGCONT changes nothing: wait for it to exit by itself
      await c.end().catch(() => undefined);
    } finally {
      await daemon.stop('SIGKILL');
    }
  });

  // Which repeat is "the same Ctrl-C" (inside 300 ms of the first) is decided with given times in
  // stop-signals.test.ts; here, with the real clock, only what follows from it without timing.
  it('a second signal stops at once with exit code 3', async () => {
    const { daemon, connect } = await start();
    try {
      const c = await connect();
      await c.query('BEGIN');
      daemon.child.kill('SIGINT');
      await daemon.waitFor(/draining client sessions/);
      expect(alive(daemon)).toBe(true);
      expect((await c.query('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]); // still draining, still serving
      // A later signal stops at once; one still inside the window is ignored (each answer is an
      // event: the exit, or one more "ignored" line).
      // Bounded in count and in time (a safety bound, not an assertion): on a fast machine many
      // rounds fit inside the window.
      let code: number | null | undefined;
      const giveUpAt = Date.now() + 20_000;
      for (let i = 0; i < 10_000 && code === undefined && Date.now() < giveUpAt; i++) {
        // An "ignored" line after what was printed so far (a linear pattern: skip that many characters).
        const printed = daemon.output().length;
        daemon.child.kill('SIGINT');
        code = await Promise.race([
          daemon.stop('SIGCONT'),
          daemon.waitFor(new RegExp(`^[\\s\\S]{${printed}}[\\s\\S]*?repeated stop signal within 300 ms ignored`)).then(() => undefined),
        ]);
      }
      expect(code).toBe(3);
      expect(daemon.output()).toMatch(/stopping at once/);
      await expect(c.query('SELECT 1')).rejects.toThrow();
    } finally {
      await daemon.stop('SIGKILL');
    }
  });

  it('the admin SHUTDOWN command drains and exits 0', async () => {
    const { daemon, connect } = await start();
    try {
      const admin = await connect('quicpool');
      expect((await admin.query('SHUTDOWN')).command).toBe('SHUTDOWN');
      expect(await daemon.stop('SIGCONT')).toBe(0); // SIGCONT: no-op signal, just await the exit
    } finally {
      await daemon.stop('SIGKILL');
    }
  });
});
