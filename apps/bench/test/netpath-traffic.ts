// Traffic through a packet path for its tests: one-way numbered UDP datagrams (a blaster in one
// namespace, a sink in the other that reports which numbers never came), and a TCP connection
// moving a given number of random bytes each way, each side hashing what it sent and received.
// Each program runs inside a namespace through startNodeInNamespace (plain JavaScript source).
import type { NamespacedNode } from '../src/netpath/node-in-namespace.js';
import { startNodeInNamespace } from '../src/netpath/node-in-namespace.js';

// Counts datagrams numbered 0..count-1; on SIGTERM reports how many came and which never did.
const SINK_SOURCE = `
const dgram = require('node:dgram');
const [host, count] = process.argv.slice(1).map((v, i) => (i === 0 ? v : Number(v)));
const socket = dgram.createSocket({ type: 'udp4', recvBufferSize: 4 << 20 });
const seen = new Uint8Array(count);
let received = 0, duplicates = 0, strays = 0;
socket.on('message', (m) => {
  const i = m.length >= 4 ? m.readUInt32BE(0) : -1;
  if (i < 0 || i >= count) { strays += 1; return; }
  if (seen[i] === 1) { duplicates += 1; return; }
  seen[i] = 1;
  received += 1;
});
socket.bind(0, host, () => console.log(JSON.stringify({ ready: true, port: socket.address().port })));
process.on('SIGTERM', () => {
  const missing = [];
  for (let i = 0; i < count; i++) if (seen[i] === 0) missing.push(i);
  console.log(JSON.stringify({ result: { received, duplicates, strays, missing } }));
  process.exit(0);
});
`;

// Sends datagrams 0..count-1 (size bytes) at rate per second (0: all at once), then reports
// how many it sent and how many sends failed locally (those never reached the path).
const BLAST_SOURCE = `
const dgram = require('node:dgram');
const [host, port, count, rate, size] = process.argv.slice(1).map((v, i) => (i === 0 ? v : Number(v)));
const socket = dgram.createSocket({ type: 'udp4', sendBufferSize: 4 << 20 });
let next = 0, errors = 0;
socket.connect(port, host, () => {
  console.log(JSON.stringify({ ready: true }));
  const start = process.hrtime.bigint();
  const timer = setInterval(() => {
    const due = rate > 0 ? Math.min(count, Math.floor((Number(process.hrtime.bigint() - start) / 1e9) * rate) + 1) : count;
    while (next < due) {
      const b = Buffer.alloc(size);
      b.writeUInt32BE(next, 0);
      socket.send(b, (e) => { if (e) errors += 1; });
      next += 1;
    }
    if (next === count) {
      clearInterval(timer);
      // let the last sends' callbacks run before reporting
      setTimeout(() => { console.log(JSON.stringify({ result: { sent: next, errors } })); process.exit(0); }, 50);
    }
  }, 1);
});
`;

// role 'listen': accepts one connection; role 'connect': makes it. Either side sends \`bytes\`
// random bytes, then its FIN, reads until the peer's FIN, and reports sizes and SHA-256s.
// Half-open sockets: whichever side finishes sending first must not close the other's stream
// (Node's default ends our writing side as soon as the peer's FIN arrives).
const TCP_SOURCE = `
const net = require('node:net');
const crypto = require('node:crypto');
const [role, host, port, bytes] = process.argv.slice(1).map((v, i) => (i < 2 ? v : Number(v)));
function exchange(socket) {
  const sent = crypto.createHash('sha256'), got = crypto.createHash('sha256');
  let sentBytes = 0, gotBytes = 0, writing = true, reading = true;
  const finish = () => {
    if (writing || reading) return;
    console.log(JSON.stringify({ result: { sentBytes, sentSha256: sent.digest('hex'), receivedBytes: gotBytes, receivedSha256: got.digest('hex') } }));
    process.exit(0);
  };
  socket.on('data', (d) => { got.update(d); gotBytes += d.length; });
  socket.on('end', () => { reading = false; finish(); });
  socket.on('error', (e) => { console.error(role + ': ' + e.message); process.exit(1); });
  const write = () => {
    while (sentBytes < bytes) {
      const chunk = crypto.randomBytes(Math.min(65536, bytes - sentBytes));
      sent.update(chunk);
      sentBytes += chunk.length;
      if (!socket.write(chunk)) { socket.once('drain', write); return; }
    }
    socket.end(() => { writing = false; finish(); });
  };
  write();
}
if (role === 'listen') {
  const server = net.createServer({ allowHalfOpen: true }, (socket) => { server.close(); exchange(socket); });
  server.listen(0, host, () => console.log(JSON.stringify({ ready: true, port: server.address().port })));
} else {
  const socket = net.connect({ port, host, allowHalfOpen: true }, () => { console.log(JSON.stringify({ ready: true })); exchange(socket); });
}
`;

export interface SinkResult {
  readonly received: number;
  readonly duplicates: number;
  /** Datagrams that carried no number of this run. */
  readonly strays: number;
  /** The numbers that never arrived, ascending. */
  readonly missing: readonly number[];
}

export interface TcpSideResult {
  readonly sentBytes: number;
  readonly sentSha256: string;
  readonly receivedBytes: number;
  readonly receivedSha256: string;
}

function fields(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null) throw new Error(`${what} reported no result`);
  return value as Record<string, unknown>;
}

function num(o: Record<string, unknown>, key: string): number {
  const v = o[key];
  if (typeof v !== 'number') throw new Error(`${key} is not a number`);
  return v;
}

function str(o: Record<string, unknown>, key: string): string {
  const v = o[key];
  if (typeof v !== 'string') throw new Error(`${key} is not a string`);
  return v;
}

async function stopAll(nodes: readonly NamespacedNode[]): Promise<void> {
  await Promise.all(nodes.map((n) => n.stop()));
}

/**
 * Sends `count` numbered datagrams of `size` bytes from `fromNs` to `toIp` in `toNs` at
 * `ratePerSec`; waits `settleMs` after the last for stragglers, then asks the sink what came.
 */
export async function sendNumberedDatagrams(
  fromNs: string | null,
  toNs: string | null,
  toIp: string,
  count: number,
  ratePerSec: number,
  size: number,
  settleMs: number,
): Promise<{ sent: number; sendErrors: number; sink: SinkResult }> {
  const sink = await startNodeInNamespace(toNs, 'the UDP sink', SINK_SOURCE, [toIp, count]);
  const started: NamespacedNode[] = [sink];
  try {
    const blaster = await startNodeInNamespace(fromNs, 'the UDP blaster', BLAST_SOURCE, [toIp, num(sink.ready, 'port'), count, ratePerSec, size]);
    started.push(blaster);
    const blasted = fields(await blaster.result, 'the UDP blaster');
    await new Promise((resolve) => setTimeout(resolve, settleMs));
    await sink.stop();
    const r = fields(await sink.result, 'the UDP sink');
    const missing = r.missing;
    if (!Array.isArray(missing) || !missing.every((m): m is number => typeof m === 'number')) throw new Error('the UDP sink reported no missing list');
    return { sent: num(blasted, 'sent'), sendErrors: num(blasted, 'errors'), sink: { received: num(r, 'received'), duplicates: num(r, 'duplicates'), strays: num(r, 'strays'), missing } };
  } finally {
    await stopAll(started);
  }
}

function tcpSide(value: unknown, what: string): TcpSideResult {
  const r = fields(value, what);
  return { sentBytes: num(r, 'sentBytes'), sentSha256: str(r, 'sentSha256'), receivedBytes: num(r, 'receivedBytes'), receivedSha256: str(r, 'receivedSha256') };
}

/** One TCP connection from `clientNs` to `serverIp` in `serverNs`, `bytes` each way at once. */
export async function exchangeTcp(clientNs: string | null, serverNs: string | null, serverIp: string, bytes: number): Promise<{ client: TcpSideResult; server: TcpSideResult }> {
  const server = await startNodeInNamespace(serverNs, 'the TCP server', TCP_SOURCE, ['listen', serverIp, 0, bytes]);
  const started: NamespacedNode[] = [server];
  try {
    const client = await startNodeInNamespace(clientNs, 'the TCP client', TCP_SOURCE, ['connect', serverIp, num(server.ready, 'port'), bytes]);
    started.push(client);
    const [c, s] = await Promise.all([client.result, server.result]);
    return { client: tcpSide(c, 'the TCP client'), server: tcpSide(s, 'the TCP server') };
  } finally {
    await stopAll(started);
  }
}
