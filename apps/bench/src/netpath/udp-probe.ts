// Round trips through the path with UDP, the RTT it really gives: an echo in the server's namespace, a prober in the client's
// timing numbered datagrams; each one's content follows from its number, so a changed or cut datagram is counted.
import type { NamespacedNode } from './node-in-namespace.js';
import { startNodeInNamespace } from './node-in-namespace.js';

const ECHO_SOURCE = `
const dgram = require('node:dgram');
const [host] = process.argv.slice(1);
const socket = dgram.createSocket({ type: 'udp4', recvBufferSize: 4 << 20, sendBufferSize: 4 << 20 });
socket.on('message', (m, from) => socket.send(m, from.port, from.address));
socket.bind(0, host, () => console.log(JSON.stringify({ ready: true, port: socket.address().port })));
`;

// Sends count datagrams (16-1400 bytes, or size) at rate/s, catching up on late timers; waits waitMs for echoes; prints.
const PROBE_SOURCE = `
const dgram = require('node:dgram');
const [host, port, count, rate, size, waitMs] = process.argv.slice(1).map((v, i) => (i === 0 ? v : Number(v)));
const socket = dgram.createSocket({ type: 'udp4', recvBufferSize: 4 << 20, sendBufferSize: 4 << 20 });
const sizeOf = (i) => (size > 0 ? size : 16 + ((i * 7919) % 1385));
const payload = (i) => { const b = Buffer.allocUnsafe(sizeOf(i)); b.writeUInt32BE(i, 0); for (let j = 4; j < b.length; j++) b[j] = (i + j * 31) & 255; return b; };
const now = () => Number(process.hrtime.bigint()) / 1e6;
const sentAt = new Float64Array(count);
const seen = new Uint8Array(count);
const rtts = [];
let corrupt = 0, duplicates = 0, next = 0, lastSend = 0;
socket.on('message', (m) => {
  const at = now();
  const i = m.length >= 4 ? m.readUInt32BE(0) : -1;
  if (i < 0 || i >= next || !m.equals(payload(i))) { corrupt += 1; return; }
  if (seen[i] === 1) { duplicates += 1; return; }
  seen[i] = 1;
  rtts.push(at - sentAt[i]);
  if (rtts.length === count) finish();
});
function finish() {
  clearInterval(sender);
  clearInterval(waiter);
  const sorted = Float64Array.from(rtts).sort();
  const n = sorted.length;
  const mean = n === 0 ? 0 : rtts.reduce((a, b) => a + b, 0) / n;
  const mdev = n === 0 ? 0 : Math.sqrt(rtts.reduce((a, b) => a + (b - mean) ** 2, 0) / n);
  const q = (p) => (n === 0 ? 0 : sorted[Math.min(n - 1, Math.floor(p * n))]);
  console.log(JSON.stringify({ result: { sent: next, received: n, corrupt, duplicates, minMs: n === 0 ? 0 : sorted[0], meanMs: mean, maxMs: n === 0 ? 0 : sorted[n - 1], mdevMs: mdev, p50Ms: q(0.5), p99Ms: q(0.99) } }));
  process.exit(0);
}
let sender = null, waiter = null;
socket.connect(port, host, () => {
  console.log(JSON.stringify({ ready: true }));
  const start = now();
  sender = setInterval(() => {
    const due = Math.min(count, Math.floor(((now() - start) * rate) / 1000) + 1);
    while (next < due) { sentAt[next] = now(); socket.send(payload(next)); next += 1; }
    if (next === count) { clearInterval(sender); lastSend = now(); waiter = setInterval(() => { if (now() - lastSend > waitMs) finish(); }, 20); }
  }, 1);
});
process.on('SIGTERM', finish);
`;

/** How long the prober waits for echoes after its last send. */
const WAIT_MS = 2_000;

export interface UdpProbeOptions {
  /** Datagrams sent (each one round trip). Default 100. */
  readonly count?: number;
  /** Datagrams per second. Default 100. */
  readonly ratePerSec?: number;
  /** Bytes per datagram; 0 (default) varies them from 16 to 1400. */
  readonly size?: number;
}

// corrupt: echoes that differ from what was sent (or carry an unknown number); mdevMs: the standard deviation, as ping's.
const RESULT_KEYS = ['sent', 'received', 'corrupt', 'duplicates', 'minMs', 'meanMs', 'maxMs', 'mdevMs', 'p50Ms', 'p99Ms'] as const;

export type UdpProbeResult = Readonly<Record<(typeof RESULT_KEYS)[number], number>>;

function probeResult(value: unknown): UdpProbeResult {
  if (typeof value !== 'object' || value === null) throw new Error('the UDP prober reported no result');
  const o = value as Record<string, unknown>;
  const missing = RESULT_KEYS.find((key) => typeof o[key] !== 'number');
  if (missing !== undefined) throw new Error(`the UDP prober's ${missing} is not a number`);
  return Object.fromEntries(RESULT_KEYS.map((key) => [key, o[key]])) as UdpProbeResult;
}

/** Round trips from `clientNs` to an echo at `serverIp` in `serverNs` (either null: the host's namespace). */
export async function probeUdp(
  clientNs: string | null,
  serverNs: string | null,
  serverIp: string,
  o: UdpProbeOptions = {},
  via: (echo: { host: string; port: number }) => Promise<{ host: string; port: number }> = async (echo) => echo,
): Promise<UdpProbeResult> {
  const echo = await startNodeInNamespace(serverNs, 'the UDP echo', ECHO_SOURCE, [serverIp]);
  let prober: NamespacedNode | null = null;
  try {
    const port = echo.ready.port;
    if (typeof port !== 'number') throw new Error('the UDP echo announced no port');
    // `via`: where the prober sends to reach the echo (a relay in front of it), by default the echo itself.
    const to = await via({ host: serverIp, port });
    prober = await startNodeInNamespace(clientNs, 'the UDP prober', PROBE_SOURCE, [to.host, to.port, o.count ?? 100, o.ratePerSec ?? 100, o.size ?? 0, WAIT_MS]);
    return probeResult(await prober.result);
  } finally {
    await prober?.stop();
    await echo.stop();
  }
}
