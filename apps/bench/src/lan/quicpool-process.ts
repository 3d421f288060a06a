// quicpool in its own child process (createPooler + listenTcp), so its CPU can be measured alone;
// the same worker can instead run the Node.js forwarder that bench:lan uses as a reference. The
// bench program forks itself with WORKER_FLAG; the worker prints "PORT <n>" once listening and
// closes on SIGTERM or when its stdin (held by the bench) ends.
import { once } from 'node:events';
import net from 'node:net';
import { createPooler as builtInCreatePooler } from '@quicpool/pooler';
import { listenTcp } from '@quicpool/transport';
import { startWorkerProcess } from '../process/worker-process.js';

export const WORKER_FLAG = '--quicpool-worker';

export interface QuicpoolWorkerConfig {
  /**
   * 'pooler' (default): quicpool. 'forwarder': a reference, not a pooler: each client connection
   * gets its own server connection and the bytes are piped both ways by net.Socket, untouched. It
   * shows what any Node.js process in the path costs here (its CPU per transaction is a floor for
   * a pooler built on Node's sockets), so quicpool's figure can be read against it.
   */
  readonly kind?: 'pooler' | 'forwarder';
  readonly serverHost: string;
  readonly serverPort: number;
  readonly user: string;
  readonly password: string;
  readonly poolSize: number;
}

export interface RunningQuicpool {
  readonly port: number;
  readonly pid: number;
  stop(): Promise<void>;
}

/** The worker side: runs until SIGTERM. */
export async function runQuicpoolWorker(config: QuicpoolWorkerConfig): Promise<void> {
  if (config.kind === 'forwarder') return runForwarder(config);
  // A/B comparisons on a busy machine: POOLER_MODULE=/path/to/other/build/index.js runs that build
  // of @quicpool/pooler instead (e.g. the last commit's, built into a temp folder).
  const alt = process.env['POOLER_MODULE'];
  const createPooler = alt === undefined || alt === '' ? builtInCreatePooler : ((await import(alt)) as { createPooler: typeof builtInCreatePooler }).createPooler;
  const pooler = createPooler({
    server: { host: config.serverHost, port: config.serverPort },
    users: { [config.user]: { password: config.password } },
    pool: { poolSize: config.poolSize, poolMode: 'transaction' },
  });
  const listener = await listenTcp({ host: '127.0.0.1', port: 0 });
  pooler.listen(listener);
  process.stdout.write(`PORT ${listener.address().port}\n`);
  const stop = (): void => void pooler.close({ graceful: false }).finally(() => process.exit(0));
  process.once('SIGTERM', stop);
  // The bench holds our stdin open: if it dies, stdin ends and we go too (no orphaned pooler).
  process.stdin.on('end', stop).resume();
}

/** The 'forwarder' worker: one server connection per client connection, bytes piped both ways. */
async function runForwarder(config: QuicpoolWorkerConfig): Promise<void> {
  const server = net.createServer({ noDelay: true }, (client) => {
    const upstream = net.connect({ host: config.serverHost, port: config.serverPort, noDelay: true });
    client.pipe(upstream);
    upstream.pipe(client);
    const close = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  process.stdout.write(`PORT ${(server.address() as net.AddressInfo).port}\n`);
  const stop = (): void => process.exit(0);
  process.once('SIGTERM', stop);
  process.stdin.on('end', stop).resume();
}

/** The bench side: forks `script` as a worker; `nodeFlags` e.g. ['--cpu-prof', '--cpu-prof-dir=x']. */
export async function startQuicpool(
  script: string,
  config: QuicpoolWorkerConfig,
  nodeFlags: readonly string[] = [],
  /** Another build of @quicpool/pooler to run (its index.js), or undefined for the bench's own. */
  poolerModule?: string,
): Promise<RunningQuicpool> {
  const w = await startWorkerProcess({
    name: config.kind === 'forwarder' ? 'Node forwarder worker' : 'quicpool worker',
    args: [...nodeFlags, script, WORKER_FLAG, JSON.stringify(config)],
    env: poolerModule === undefined ? process.env : { ...process.env, POOLER_MODULE: poolerModule },
    startTimeoutMs: 10_000,
    echo: true,
    ready: (line) => {
      const m = /^PORT (\d+)$/.exec(line);
      return m === null ? null : Number(m[1]);
    },
  });
  return { port: w.ready, pid: w.pid, stop: () => w.stop() };
}
