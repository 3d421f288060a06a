// References for bench:lan, not poolers: a Node.js process that gives each client connection its
// own server connection and pipes the bytes both ways, untouched. They show what any Node.js
// process in the path costs here (their CPU per transaction is a floor for a pooler built on
// Node's sockets), so quicpool's figure can be read against them. Two kinds:
// - 'net': net.Socket pipes (Node's Readable and Writable layers, as any Node program has them);
// - 'transport': @quicpool/transport's fast paths, as the pooler uses them: reads into a buffer
//   of ours (`readInto`, no Readable, no 'data' event) and writes handed to the libuv handle
//   (`writeChunk`, no Writable). What is left is Node's callback per read and the system calls.
// The bench forks its own program with NODE_FORWARDER_FLAG; the worker prints "PORT <n>" once listening and
// ends with its stdin.
import { once } from 'node:events';
import net from 'node:net';
import { dialTcp, listenTcp } from '@quicpool/transport';
import type { ReadInto, SessionStream } from '@quicpool/transport';
import { NODE_FORWARDER_FLAG } from '../commands/worker-flags.js';
import { startWorkerProcess } from '../process/worker-process.js';

export type ForwarderKind = 'net' | 'transport';

export interface ForwarderTarget {
  readonly host: string;
  readonly port: number;
  readonly kind: ForwarderKind;
}

/** The worker side: runs until SIGTERM or until its stdin ends. */
export async function runNodeForwarder(target: ForwarderTarget): Promise<void> {
  const port = target.kind === 'net' ? await listenNet(target) : await listenTransport(target);
  process.stdout.write(`PORT ${port}\n`);
  process.once('SIGTERM', () => process.exit(0));
  process.stdin.on('end', () => process.exit(0)).resume();
}

async function listenNet(target: ForwarderTarget): Promise<number> {
  const server = net.createServer({ noDelay: true }, (client) => {
    const upstream = net.connect({ host: target.host, port: target.port, noDelay: true });
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
  return (server.address() as net.AddressInfo).port;
}

const READ_BUFFER_BYTES = 64 * 1024;

/**
 * Reads into one buffer and writes each read on to `to()` (or keeps a copy while there is no
 * `to` yet). The buffer is reused unless the peer's stream still holds what it was given.
 * No backpressure: pgbench -S sends one query and waits for its answer.
 */
function pipeInto(to: () => SessionStream | null, early: Buffer[]): ReadInto {
  let buffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
  return {
    buffer: () => buffer,
    callback: (n) => {
      const chunk = buffer.subarray(0, n);
      const out = to();
      if (out === null) {
        early.push(Buffer.from(chunk));
        return true;
      }
      if (out.writeChunk === undefined) out.write(chunk);
      else out.writeChunk(chunk);
      if (out.holdsWrittenBytes()) buffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
      return true;
    },
  };
}

async function listenTransport(target: ForwarderTarget): Promise<number> {
  const listener = await listenTcp({ host: '127.0.0.1' });
  listener.onSession((client) => {
    let upstream: SessionStream | null = null;
    const early: Buffer[] = [];
    if (client.readInto?.(pipeInto(() => upstream, early)) !== true) {
      process.stderr.write('the transport forwarder needs readInto on accepted sockets (is QUICPOOL_TCP_READ_INTO=0?)\n');
      process.exit(1);
    }
    const close = (): void => {
      client.destroy();
      upstream?.destroy();
    };
    client.on('error', close).on('close', close).on('end', close);
    dialTcp({ host: target.host, port: target.port, readInto: pipeInto(() => client, []) }).then(
      (s) => {
        upstream = s;
        s.on('error', close).on('close', close).on('end', close);
        if (client.destroyed) return close();
        for (const chunk of early) s.write(chunk);
      },
      close,
    );
  });
  return listener.address().port;
}

export type RunningForwarder = Awaited<ReturnType<typeof startNodeForwarder>>;

/** The bench side: forks `script` as a forwarder worker of this kind. */
export async function startNodeForwarder(script: string, target: ForwarderTarget) {
  const w = await startWorkerProcess({
    name: `the Node forwarder (${target.kind})`,
    args: [script, NODE_FORWARDER_FLAG, JSON.stringify(target)],
    startTimeoutMs: 10_000,
    ready: (line) => {
      const m = /^PORT (\d+)$/.exec(line);
      return m === null ? null : Number(m[1]);
    },
  });
  return { port: w.ready, pid: w.pid, stop: () => w.stop() };
}
