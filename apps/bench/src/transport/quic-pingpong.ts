// The QUIC sides of the ping-pong, over our lean endpoint; both count datagrams and syscalls, and report their UDP I/O path.
import { QuicDialer, QuicListener } from '@quicpool/transport';
import type { QuicEndpointStats } from '@quicpool/transport';
import type { RoleFactory, UdpCounters } from './pingpong-worker.js';
import { echo, keepBusy } from './ping-stream.js';

const counters = (s: QuicEndpointStats): UdpCounters => ({ datagramsOut: s.datagramsOut, sendCalls: s.sendCalls, recvCalls: s.recvCalls, io: s.io });

export const quicRoles: Record<string, RoleFactory> = {
  'quic-server': async (config) => {
    const listener = await QuicListener.listen({ cert: config.certPem ?? '', key: config.keyPem ?? '', maxStreamsPerConnection: 1000, udpIo: config.udpIo });
    listener.onSession((stream) => {
      echo(stream);
      stream.on('end', () => stream.end());
    });
    return { port: listener.address().port, close: () => listener.close({ graceful: false }), udpCounters: () => counters(listener.stats()) };
  },
  'quic-client': async (config, onRoundTrip) => {
    const dialer = new QuicDialer({
      host: '127.0.0.1', port: config.port ?? 0, serverName: 'localhost', ca: config.caPem ?? '', connections: config.connections, udpIo: config.udpIo,
    });
    // This role runs in the bench's own process: if it fails, it leaves no endpoint behind.
    const opening = Array.from({ length: config.connections * config.streamsPerConnection }, () => dialer.open());
    const streams = await Promise.all(opening).catch(async (error: unknown) => {
      await dialer.close({ graceful: false });
      throw error;
    });
    const stop = keepBusy(streams, config.payloadBytes, onRoundTrip);
    return {
      close: async () => {
        stop();
        await dialer.close({ graceful: false });
      },
      udpCounters: async () => counters(await dialer.stats()),
    };
  },
};
