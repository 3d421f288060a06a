// "First response" across a WAN: round trips from dialing a pooler never talked to until its first response, against one
// resumed with 0-RTT, in the path's measured RTTs; both ends live here, so the WAN is the relay (UDP: the packet path's delay).
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import type { SessionStream } from '@quicpool/transport';
import { QuicDialer, QuicListener, QuicTicketStore, generateDevCertificates } from '@quicpool/transport';
import { startRelay } from '../netpath/relay.js';
import { echo } from './ping-stream.js';
import { round2 } from '../report/round.js';

export type FirstResponseResult = Awaited<ReturnType<typeof measureFirstResponse>>;

const PING = Buffer.from('ping');

/** The upper middle value for an even count. */
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[values.length >> 1] ?? 0;

/** Writes a ping and resolves when its echo (4 bytes) has arrived: to the ms it took. */
async function ping(stream: SessionStream): Promise<number> {
  const started = performance.now();
  stream.write(PING);
  let got = 0;
  while (got < PING.length) {
    const [chunk] = (await once(stream, 'data')) as [Buffer];
    got += chunk.length;
  }
  return performance.now() - started;
}

async function timeFirstResponse(dialer: QuicDialer): Promise<{ ms: number; stream: SessionStream }> {
  const started = performance.now();
  const stream = await dialer.open();
  stream.on('error', () => {});
  await ping(stream);
  return { ms: performance.now() - started, stream };
}

/** One fresh connection then one resumed with its ticket; times in ms and the path's RTT. */
async function trial(dial: (tickets: QuicTicketStore) => QuicDialer): Promise<{ fullMs: number; zeroRttMs: number; rttMs: number }> {
  const tickets = new QuicTicketStore(); // empty: the first connection cannot resume
  const fresh = dial(tickets);
  const full = await timeFirstResponse(fresh);
  const rtts: number[] = [];
  for (let i = 0; i < 10; i++) rtts.push(await ping(full.stream));
  // The ticket arrives after the handshake; wait for it (bounded) before leaving.
  for (let waited = 0; tickets.size === 0 && waited < 3000; waited += 20) await new Promise((r) => setTimeout(r, 20));
  if (tickets.size === 0) throw new Error('no session ticket received: 0-RTT cannot be measured');
  await fresh.close({ graceful: false });
  const resumedDialer = dial(tickets);
  const resumed = await timeFirstResponse(resumedDialer);
  await resumedDialer.close({ graceful: false });
  return { fullMs: full.ms, zeroRttMs: resumed.ms, rttMs: median(rtts) };
}

/** Runs `trials` fresh/resumed pairs through a relay at `oneWayMs` and reports medians. */
export async function measureFirstResponse(oneWayMs = 15, trials = 3) {
  const certs = await generateDevCertificates({ names: ['localhost'] });
  const earlyData: boolean[] = [];
  const listener = await QuicListener.listen({ cert: certs.certPem, key: certs.keyPem, host: '127.0.0.1', port: 0 });
  listener.onSession((stream) => {
    earlyData.push(stream.info.quic?.earlyData === true);
    echo(stream);
  });
  const wan = await startRelay({ target: { host: '127.0.0.1', port: listener.address().port }, protocol: 'udp', delayMs: oneWayMs });
  const dial = (tickets: QuicTicketStore): QuicDialer =>
    new QuicDialer({ host: '127.0.0.1', port: wan.port, serverName: 'localhost', ca: certs.caPem, tickets });
  try {
    const results = [];
    for (let i = 0; i < trials; i++) results.push(await trial(dial));
    const rtt = median(results.map((r) => r.rttMs));
    const fullMs = median(results.map((r) => r.fullMs));
    const zeroRttMs = median(results.map((r) => r.zeroRttMs));
    return {
      configuredOneWayMs: oneWayMs,
      /** Fresh/resumed pairs measured; the figures are medians over them. */
      trials,
      /** Round trip measured with pings on an established stream through the relay. */
      measuredRttMs: round2(rtt),
      fullMs: round2(fullMs),
      zeroRttMs: round2(zeroRttMs),
      /** Times divided by the measured RTT. */
      full: round2(fullMs / rtt),
      zeroRtt: round2(zeroRttMs / rtt),
      // Whether the server saw every resumed (second) stream of each trial as 0-RTT early data.
      serverSawEarlyData: earlyData.length > 0 && earlyData.filter((_, i) => i % 2 === 1).every((early) => early),
    };
  } finally {
    await wan.stop();
    await listener.close({ graceful: false });
  }
}
