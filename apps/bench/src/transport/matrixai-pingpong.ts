// Reference run: the same ping-pong over @matrixai/quic's high-level classes, the ceiling our lean endpoint is
// meant to break (TOOLCHAIN: ~320-480 µs CPU per round trip per side). Around their defects: streams are opened
// once, below the peer's limit (after one StreamLimit error a connection never opens streams again), and every
// close is an error event, so error events are swallowed and the worker exits at the end regardless.
import { createHmac, randomBytes, randomFillSync, timingSafeEqual } from 'node:crypto';
import dgram from 'node:dgram';
import type { QUICConnection, QUICStream } from '@matrixai/quic';
import { QUICClient, QUICServer, events } from '@matrixai/quic';
import type { PingPongConfig, Role, RoleFactory, UdpCounters } from './pingpong-worker.js';

/** Streams the server allows per connection; the client stays well below it. */
const SERVER_STREAM_LIMIT = 1000;

/** Checked in the bench's process, before any worker starts. */
export function assertBelowStreamLimit(streamsPerConnection: number): void {
  if (streamsPerConnection >= SERVER_STREAM_LIMIT) throw new Error('stay below the stream limit (library defect)');
}

const ALPN = ['pgsql/3'];

let datagramsSent = 0;
let instrumented = false;

// Once per worker process: drops the library's INFO lines on console.error (every stream's lifecycle; its Logger
// class would be another dependency), and wraps dgram's send to count the datagrams (one extra call each).
function instrumentProcess(): void {
  if (instrumented) return;
  instrumented = true;
  const log = console.error.bind(console);
  console.error = (...args: unknown[]): void => {
    if (typeof args[0] === 'string' && args[0].startsWith('INFO:')) return;
    log(...args);
  };
  const send = dgram.Socket.prototype.send;
  dgram.Socket.prototype.send = function countedSend(this: dgram.Socket, ...args: unknown[]): void {
    datagramsSent++;
    (send as (...a: unknown[]) => void).apply(this, args);
  } as typeof send;
}

const udpCounters = (): UdpCounters => ({ datagramsOut: datagramsSent, sendCalls: null, recvCalls: null, io: null });

const toArrayBuffer = (buffer: Buffer): ArrayBuffer => Uint8Array.from(buffer).buffer;

async function matrixaiServer(config: PingPongConfig): Promise<Role> {
  instrumentProcess();
  const server = new QUICServer({
    crypto: {
      key: toArrayBuffer(randomBytes(32)),
      ops: {
        // Retry tokens are HMAC-signed by the application.
        sign: async (key, data) => toArrayBuffer(createHmac('sha256', Buffer.from(key)).update(Buffer.from(data)).digest()),
        verify: async (key, data, sig) => {
          const expected = createHmac('sha256', Buffer.from(key)).update(Buffer.from(data)).digest();
          const given = Buffer.from(sig);
          return given.length === expected.length && timingSafeEqual(given, expected);
        },
      },
    },
    config: { key: config.keyPem ?? '', cert: config.certPem ?? '', verifyPeer: false, applicationProtos: ALPN, initialMaxStreamsBidi: SERVER_STREAM_LIMIT },
  });
  server.addEventListener(events.EventQUICServerError.name, () => {});
  server.addEventListener(events.EventQUICServerConnection.name, (event: Event) => {
    const connection = (event as events.EventQUICServerConnection).detail;
    connection.addEventListener(events.EventQUICConnectionError.name, () => {});
    connection.addEventListener(events.EventQUICConnectionStream.name, (streamEvent: Event) => {
      void echo((streamEvent as events.EventQUICConnectionStream).detail);
    });
  });
  await server.start({ host: '127.0.0.1', port: 0 });
  return { port: server.port, close: () => server.stop({ force: true }), udpCounters };
}

async function echo(stream: QUICStream): Promise<void> {
  stream.addEventListener(events.EventQUICStreamError.name, () => {});
  const reader = stream.readable.getReader();
  const writer = stream.writable.getWriter();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      await writer.write(value);
    }
    await writer.close();
  } catch {
    // The client going away ends the stream with an error; nothing to do.
  }
}

async function matrixaiClient(config: PingPongConfig, onRoundTrip: (ms: number) => void): Promise<Role> {
  instrumentProcess();
  const clients: QUICClient[] = [];
  for (let i = 0; i < config.connections; i++) {
    const client = await QUICClient.createQUICClient({
      host: '127.0.0.1',
      port: config.port ?? 0,
      serverName: 'localhost', // verification against an IP address fails (TOOLCHAIN)
      crypto: { ops: { randomBytes: async (data: ArrayBuffer) => void randomFillSync(new Uint8Array(data)) } },
      config: { ca: config.caPem ?? '', verifyPeer: true, applicationProtos: ALPN },
    });
    client.addEventListener(events.EventQUICClientError.name, () => {});
    clients.push(client);
  }
  let running = true;
  const payload = new Uint8Array(config.payloadBytes).fill(0x61);
  for (const client of clients) {
    for (let s = 0; s < config.streamsPerConnection; s++) void pingPong(client.connection, payload, onRoundTrip, () => running);
  }
  return {
    close: async () => {
      running = false;
      await Promise.race([
        Promise.all(clients.map((client) => client.destroy({ force: true }).catch(() => {}))),
        new Promise((resolve) => setTimeout(resolve, 1000)),
      ]);
    },
    udpCounters,
  };
}

async function pingPong(connection: QUICConnection, payload: Uint8Array, onRoundTrip: (ms: number) => void, running: () => boolean): Promise<void> {
  const stream = connection.newStream('bidi');
  stream.addEventListener(events.EventQUICStreamError.name, () => {});
  const reader = stream.readable.getReader();
  const writer = stream.writable.getWriter();
  try {
    while (running()) {
      const sentAt = performance.now();
      await writer.write(payload);
      let received = 0;
      while (received < payload.length) {
        const { value, done } = await reader.read();
        if (done) return;
        received += value.byteLength;
      }
      onRoundTrip(performance.now() - sentAt);
    }
  } catch {
    // Destroyed at the end of the run.
  }
}

export const matrixaiRoles: Record<string, RoleFactory> = { 'matrixai-server': matrixaiServer, 'matrixai-client': matrixaiClient };
