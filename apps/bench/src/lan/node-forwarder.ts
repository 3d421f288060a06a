// A reference for bench:lan, not a pooler: a Node.js process that gives each client connection its
// own server connection and pipes the bytes both ways with net.Socket, untouched. It shows what
// any Node.js process in the path costs here (its CPU per transaction is a floor for a pooler
// built on Node's sockets), so quicpool's figure can be read against it. The bench forks its own
// program with WORKER_FLAG; the worker prints "PORT <n>" once listening and ends with its stdin.
import { once } from 'node:events';
import net from 'node:net';
import { startWorkerProcess } from '../process/worker-process.js';

export const WORKER_FLAG = '--node-forwarder-worker';

export interface RunningForwarder {
  readonly port: number;
  readonly pid: number;
  stop(): Promise<void>;
}

/** The worker side: runs until SIGTERM or until its stdin ends. */
export async function runNodeForwarder(target: { host: string; port: number }): Promise<void> {
  const server = net.createServer({ noDelay: true }, (client) => {
    const upstream = net.connect({ ...target, noDelay: true });
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
  process.once('SIGTERM', () => process.exit(0));
  process.stdin.on('end', () => process.exit(0)).resume();
}

/** The bench side: forks `script` as the forwarder worker. */
export async function startNodeForwarder(script: string, target: { host: string; port: number }): Promise<RunningForwarder> {
  const w = await startWorkerProcess({
    name: 'the Node forwarder',
    args: [script, WORKER_FLAG, JSON.stringify(target)],
    startTimeoutMs: 10_000,
    ready: (line) => {
      const m = /^PORT (\d+)$/.exec(line);
      return m === null ? null : Number(m[1]);
    },
  });
  return { port: w.ready, pid: w.pid, stop: () => w.stop() };
}
