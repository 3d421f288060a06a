// The Lambda extension recipe (deploy/lambda): its start script run as Lambda runs it, against
// the Lambda Extensions API served here on loopback as the Lambda service would serve it, and a
// real `quicpool start` behind it. The extension registers under its file's name for INVOKE and
// SHUTDOWN; it asks for its first event (Lambda's "init done") only once the agent listens and
// has a QUIC connection open; on SHUTDOWN the agent stops accepting, lets the open session
// finish, and both processes exit 0. An agent that cannot start is reported as an init error.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type {} from '@quicpool/pg-fixture';
import { loggedPort, startTestPooler, until } from './daemon.js';
import type { Daemon } from './daemon.js';

const upstream = inject('pg');
const startScript = fileURLToPath(new URL('../deploy/lambda/extensions/quicpool-connect', import.meta.url));
const packageRoot = fileURLToPath(new URL('..', import.meta.url));
let dir: string;
let daemon: Daemon;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'quicpool-lambda-'));
  daemon = await startTestPooler(dir, upstream);
});
afterAll(async () => {
  await daemon?.stop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

/** One request to the API; `at`: when it came (Date.now()). */
interface Call { readonly method: string; readonly path: string; readonly headers: IncomingMessage['headers']; readonly body: string; readonly at: number }

/** The Extensions API as Lambda serves it: each /event/next is held until the test answers it. */
class FakeLambda {
  readonly calls: Call[] = [];
  private readonly pending: ServerResponse[] = [];
  private readonly waiters = new Set<() => void>();
  private constructor(readonly server: Server) {}

  static async start(): Promise<FakeLambda> {
    const f: FakeLambda = new FakeLambda(createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        f.calls.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, at: Date.now() });
        if (req.url === '/2020-01-01/extension/register') {
          res.writeHead(200, { 'Lambda-Extension-Identifier': 'ext-7', 'Content-Type': 'application/json' }).end('{"functionName":"f","functionVersion":"$LATEST","handler":"index.handler"}');
        } else if (req.url === '/2020-01-01/extension/event/next') {
          f.pending.push(res);
        } else {
          res.writeHead(202).end('{"status":"OK"}');
        }
        for (const w of f.waiters) w();
      });
    }));
    await new Promise<void>((resolve) => f.server.listen(0, '127.0.0.1', resolve));
    return f;
  }

  get address(): string {
    return `127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Resolves once `n` calls to `path` have come. */
  async calledTimes(path: string, n: number): Promise<Call[]> {
    for (;;) {
      const matching = this.calls.filter((c) => c.path === path);
      if (matching.length >= n) return matching;
      await new Promise<void>((resolve) => this.waiters.add(resolve));
    }
  }

  /** Answers the oldest held /event/next. */
  send(event: Record<string, unknown>): void {
    const res = this.pending.shift();
    if (res === undefined) throw new Error('no /event/next is waiting');
    res.writeHead(200, { 'Lambda-Extension-Event-Identifier': `ev-${this.calls.length}`, 'Content-Type': 'application/json' }).end(JSON.stringify(event));
  }

  async close(): Promise<void> {
    for (const res of this.pending.splice(0)) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Runs the start script with Lambda's variables and the agent's configuration. */
function startExtension(lambda: FakeLambda, env: Record<string, string>): { output: () => string; exited: Promise<number | null>; kill: () => void } {
  const child = spawn(startScript, [], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: `${join(process.execPath, '..')}:${process.env['PATH'] ?? ''}`,
      AWS_LAMBDA_RUNTIME_API: lambda.address,
      LAMBDA_TASK_ROOT: dir,
      QUICPOOL_LAMBDA_ROOT: packageRoot,
      ...env,
    },
  });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { output: () => out, exited, kill: () => child.kill('SIGKILL') };
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('the Lambda extension (deploy/lambda)', () => {
  it('registers, lets init finish once the agent is ready, carries the function\'s sessions, and drains on SHUTDOWN', async () => {
    const lambda = await FakeLambda.start();
    const ext = startExtension(lambda, {
      QUICPOOL_CONNECT_ENDPOINTS: `127.0.0.1:${daemon.port('quic')}`,
      QUICPOOL_CONNECT_CA_FILE: join(dir, 'certs', 'ca.pem'),
      QUICPOOL_CONNECT_SERVER_NAME: 'localhost',
      QUICPOOL_CONNECT_PORT: '0',
      QUICPOOL_CONNECT_METRICS_PORT: '0',
      QUICPOOL_CONNECT_SOCKET_DIR: dir,
      QUICPOOL_CONNECT_TICKET_FILE: join(dir, 'tickets'),
      QUICPOOL_CONNECT_LOGIN_CACHE_FILE: join(dir, 'logins'),
      // The drain is bounded by SHUTDOWN's deadline below, not by a short default.
      QUICPOOL_CONNECT_DRAIN_TIMEOUT_MS: '30000',
    });
    let held: pg.Client | null = null;
    try {
      const [register] = await lambda.calledTimes('/2020-01-01/extension/register', 1);
      expect(register?.method).toBe('POST');
      expect(register?.headers['lambda-extension-name']).toBe('quicpool-connect');
      expect(JSON.parse(register?.body ?? '')).toEqual({ events: ['INVOKE', 'SHUTDOWN'] });

      // The first /event/next: init is done, and the agent listens with a QUIC connection open.
      const [next] = await lambda.calledTimes('/2020-01-01/extension/event/next', 1);
      expect(next?.headers['lambda-extension-identifier']).toBe('ext-7');
      // (Its log lines come over a pipe, so they may arrive after the HTTP call.)
      await until(() => /"msg":"agent ready"/.test(ext.output()));
      const readyAt = Number(/\{"time":(\d+),[^\n]*"msg":"agent ready"/.exec(ext.output())?.[1]);
      expect(readyAt).toBeLessThanOrEqual(next?.at ?? 0);
      const port = loggedPort(ext.output(), 'tcp');
      expect((await fetch(`http://127.0.0.1:${loggedPort(ext.output(), 'metrics')}/readyz`)).status).toBe(200);
      const login = { user: upstream.user, password: upstream.password, database: upstream.database };
      for (const host of ['127.0.0.1', dir]) {
        const c = new pg.Client({ ...login, host, port });
        await c.connect();
        expect((await c.query<{ n: number }>('select 6 * 7 as n')).rows[0]?.n).toBe(42);
        await c.end();
      }

      lambda.send({ eventType: 'INVOKE', deadlineMs: Date.now() + 60_000, requestId: 'req-1', invokedFunctionArn: 'arn:aws:lambda:eu-west-1:123456789012:function:f' });
      await lambda.calledTimes('/2020-01-01/extension/event/next', 2);

      // SHUTDOWN with a transaction open: no new session, the open one finishes, all exit 0.
      held = new pg.Client({ ...login, host: '127.0.0.1', port });
      held.on('error', () => undefined);
      await held.connect();
      await held.query('begin');
      const agentPid = Number(/"msg":"agent started","agentPid":(\d+)/.exec(ext.output())?.[1]);
      expect(alive(agentPid)).toBe(true);
      lambda.send({ eventType: 'SHUTDOWN', deadlineMs: Date.now() + 60_000, shutdownReason: 'spindown' });
      await until(() => /draining local sessions/.test(ext.output()));
      const refused = await new pg.Client({ ...login, host: '127.0.0.1', port }).connect().then(() => null, (e: Error & { code?: string }) => e);
      expect(refused?.code).toBe('ECONNREFUSED');
      expect((await held.query<{ n: number }>('select 1 as n')).rows[0]?.n).toBe(1);
      await held.query('commit');
      await held.end();
      held = null;
      expect(await ext.exited).toBe(0);
      expect(alive(agentPid)).toBe(false);
      expect(existsSync(join(dir, `.s.PGSQL.${port}`))).toBe(false);
      expect(ext.output()).toMatch(/"msg":"agent stopped","code":0/);
      expect(lambda.calls.filter((c) => c.path.endsWith('/error'))).toEqual([]);
    } finally {
      await held?.end().catch(() => undefined);
      ext.kill();
      await lambda.close();
    }
  });

  it('an agent that cannot start is reported to Lambda as an init error', async () => {
    const lambda = await FakeLambda.start();
    const ext = startExtension(lambda, { QUICPOOL_CONNECT_PORT: '0', QUICPOOL_CONNECT_SOCKET_DIR: dir });
    try {
      expect(await ext.exited).toBe(1);
      const [error] = await lambda.calledTimes('/2020-01-01/extension/init/error', 1);
      expect(error?.headers['lambda-extension-identifier']).toBe('ext-7');
      expect(error?.headers['lambda-extension-function-error-type']).toBe('Extension.QuicpoolConnectFailed');
      expect(ext.output()).toMatch(/connect\.endpoints: name at least one pooler/);
      expect(lambda.calls.some((c) => c.path === '/2020-01-01/extension/event/next')).toBe(false);
    } finally {
      ext.kill();
      await lambda.close();
    }
  });
});
