// References for bench:lan, not poolers: a Node.js process that pipes each client connection to a server
// connection of its own, untouched; its CPU per transaction is the floor of a pooler on Node's sockets. 'net':
// net.Socket pipes; 'transport': the pooler's fast paths, reads into a buffer of ours (`readInto`) and writes
// handed to the libuv handle (`writeChunk`), leaving only Node's callback per read and the system calls.
// The worker (NODE_FORWARDER_FLAG) prints "PORT <n>" once listening and ends with its stdin.
import { once } from 'node:events';
import net from 'node:net';
import { dialTcp, listenTcp } from '@quicpool/transport';
import type { ReadInto, SessionStream } from '@quicpool/transport';
import { NODE_FORWARDER_FLAG } from '../commands/worker-flags.js';
import { startWorkerProcess } from '../process/worker-process.js';

export type ForwarderKind = 'net' | 'transport';

export type ForwarderTarget = Readonly<{ host: string; port: number; kind: ForwarderKind }>;

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

// Reads into one buffer and writes each read on to `to()` (a copy kept while there is none yet); the buffer is
// reused unless the peer still holds what it was given. No backpressure: pgbench -S waits for each answer.
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
