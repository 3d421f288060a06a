// Shared by the agent tests: the agent in front of a test pooler, psql/pgbench found as the
// pooler's pgbench tests find them, and running them against the agent.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findPgbench, findPsql, PGBENCH_MISSING } from '@quicpool/pg-fixture';
import { QuicAgent } from '@quicpool/client';
import type { AgentOptions, SessionManagerOptions } from '@quicpool/client';
import { pgInfo, quicOptions } from './helpers.js';

export const pgbench = findPgbench();

export const psql = findPsql();

export interface TestAgent {
  readonly agent: QuicAgent;
  readonly port: number;
  readonly socketDir: string;
  close(): Promise<void>;
}

/** An agent on a free TCP port and a socket in a fresh temp directory, to `endpoint`. */
export async function startAgent(endpoint: string, o: { sessions?: Partial<SessionManagerOptions>; agent?: Partial<AgentOptions> } = {}): Promise<TestAgent> {
  const socketDir = await mkdtemp(join(tmpdir(), 'qp-agent-'));
  const agent = new QuicAgent({ sessions: await quicOptions([endpoint], o.sessions), host: '127.0.0.1', port: 0, socketDir, ...o.agent });
  const a = await agent.listen();
  return {
    agent, port: a.tcp?.port ?? 0, socketDir,
    close: async () => {
      await agent.close({ timeoutMs: 2_000 });
      await rm(socketDir, { recursive: true, force: true });
    },
  };
}

/** Runs a libpq program (psql, pgbench) as the fixture's superuser; resolves with stdout + stderr. */
export function runLibpq(bin: string | null, args: string[], env: Record<string, string> = {}, input?: string): Promise<string> {
  if (bin === null) return Promise.reject(new Error(PGBENCH_MISSING));
  return new Promise((resolve, reject) => {
    const child = execFile(
      bin,
      args,
      { env: { ...process.env, PGUSER: pgInfo.user, PGPASSWORD: pgInfo.password, PGDATABASE: pgInfo.database, PGSSLMODE: 'prefer', ...env }, timeout: 60_000 },
      (error, stdout, stderr) => (error ? reject(Object.assign(new Error(`${error.message}\n${stdout}\n${stderr}`), { stdout, stderr })) : resolve(stdout + stderr)),
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}

export const failedTransactions = (out: string): number => Number(/number of failed transactions: (\d+)/.exec(out)?.[1] ?? NaN);
export const processedTransactions = (out: string): number => Number(/number of transactions actually processed: (\d+)/.exec(out)?.[1] ?? NaN);
