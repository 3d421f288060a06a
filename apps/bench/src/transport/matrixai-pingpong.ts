// Reference run: the same ping-pong over @matrixai/quic's HIGH-LEVEL classes (QUICServer,
// QUICClient, QUICStream with web streams), to show the ceiling our lean endpoint is meant to
// break (TOOLCHAIN: ~320-480 µs CPU per round trip per side). Works around their known defects:
// streams are opened once and never beyond the peer's limit (after one StreamLimit error the
// connection can never open streams again), and every close is reported as an error event, so
// error events are swallowed and the worker process exits at the end regardless.
import { createHmac, randomBytes, randomFillSync, timingSafeEqual } from 'node:crypto';
import type { QUICConnection, QUICStream } from '@matrixai/quic';
import { QUICClient, QUICServer, events } from '@matrixai/quic';
import { generateDevCertificates } from '@quicpool/transport';
import type { PingPongResult } from './pingpong-harness.js';
import { runForkedPingPong } from './pingpong-harness.js';
import type { ClientRole, PingPongConfig, RoleFactory, ServerRole } from './pingpong-worker.js';
import { countDatagramsSent } from './pingpong-worker.js';

export interface MatrixaiPingPongOptions {
  connections: number;
  streamsPerConnection: number;
  durationMs: number;
  payload?: number;
  warmupMs?: number;
  workerScript?: string;
}

/** Streams the server allows per connection; the client stays well below it. */
const SERVER_STREAM_LIMIT = 1000;

export async function runMatrixaiPingPong(options: MatrixaiPingPongOptions): Promise<PingPongResult> {
  if (options.streamsPerConnection >= SERVER_STREAM_LIMIT) throw new Error('stay below the stream limit (library defect)');
  const certs = await generateDevCertificates({ names: ['localhost'] });
  return runForkedPingPong({
    label: `matrixai ${options.connections}x${options.streamsPerConnection}`,
    workerScript: options.workerScript ?? process.argv[1] ?? '',
    serverRole: 'matrixai-server',
    clientRole: 'matrixai-client',
    config: {
      connections: options.connections,
      streamsPerConnection: options.streamsPerConnection,
      payloadBytes: options.payload ?? 200,
      certPem: certs.certPem,
      keyPem: certs.keyPem,
      caPem: certs.caPem,
    },
    durationMs: options.durationMs,
    warmupMs: options.warmupMs ?? 1000,
  });
}

const ALPN = ['pgsql/3'];

/**
 * The library logs every stream's lifecycle at INFO through console.error (its default logger).
 * Taking its Logger class would need another dependency, so the worker process (which runs only
 * this role) drops those lines and keeps everything else.
 */
function muteLibraryInfoLogs(): void {
  const original = console.error.bind(console);
  console.error = (...args: unknown[]): void => {
    if (typeof args[0] === 'string' && args[0].startsWith('INFO:')) return;
    original(...args);
  };
}

async function matrixaiServer(config: PingPongConfig): Promise<ServerRole> {
  muteLibraryInfoLogs();
  countDatagramsSent();
  const hmacKey = randomBytes(32);
  const server = new QUICServer({
    crypto: {
      key: toArrayBuffer(hmacKey),
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
    config: {
      key: config.keyPem ?? '',
      cert: config.certPem ?? '',
      verifyPeer: false,
      applicationProtos: ALPN,
      initialMaxStreamsBidi: SERVER_STREAM_LIMIT,
    },
  });
  server.addEventListener(events.EventQUICServerError.name, () => {});
  server.addEventListener(events.EventQUICServerConnection.name, (event: Event) => {
    const connection = (event as events.EventQUICServerConnection).detail;
    connection.addEventListener(events.EventQUICConnectionError.name, () => {});
    connection.addEventListener(events.EventQUICConnectionStream.name, (streamEvent: Event) => {
      const stream = (streamEvent as events.EventQUICConnectionStream).detail;
      void echo(stream);
    });
  });
  await server.start({ host: '127.0.0.1', port: 0 });
  return {
    port: server.port,
    close: () => server.stop({ force: true }),
  };
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

async function matrixaiClient(config: PingPongConfig, onRoundTrip: (ms: number) => void): Promise<ClientRole> {
  muteLibraryInfoLogs();
  countDatagramsSent();
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
  const loops: Array<Promise<void>> = [];
  for (const client of clients) {
    for (let s = 0; s < config.streamsPerConnection; s++) loops.push(pingPong(client.connection, payload, onRoundTrip, () => running));
  }
  return {
    close: async () => {
      running = false;
      await Promise.race([
        Promise.all(clients.map((client) => client.destroy({ force: true }).catch(() => {}))),
        new Promise((resolve) => setTimeout(resolve, 1000)),
      ]);
    },
  };
}

async function pingPong(
  connection: QUICConnection,
  payload: Uint8Array,
  onRoundTrip: (ms: number) => void,
  running: () => boolean,
): Promise<void> {
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

function toArrayBuffer(buffer: Buffer): ArrayBuffer {
  return buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + buffer.byteLength) as ArrayBuffer;
}

export const matrixaiRoles: Record<string, RoleFactory> = { 'matrixai-server': matrixaiServer, 'matrixai-client': matrixaiClient };
