// The TCP sides of the ping-pong, the baseline of every QUIC figure: N sockets (TCP_NODELAY), one request at a time each.
import type { SessionStream } from '@quicpool/transport';
import { dialTcp, listenTcp } from '@quicpool/transport';
import type { RoleFactory } from './pingpong-worker.js';
import { echo, keepBusy } from './ping-stream.js';

export const tcpRoles: Record<string, RoleFactory> = {
  'tcp-server': async () => {
    // A deep backlog: 2000 clients connect at once.
    const listener = await listenTcp({ host: '127.0.0.1', port: 0, backlog: 4096 });
    listener.onSession(echo);
    return { port: listener.address().port, close: () => listener.close() };
  },
  'tcp-client': async (config, onRoundTrip) => {
    const port = config.port ?? 0;
    const streams: SessionStream[] = [];
    // Connect in batches so the listen backlog never overflows (an overflow costs a 1 s SYN retry).
    for (let opened = 0; opened < config.connections; ) {
      const batch = Math.min(200, config.connections - opened);
      streams.push(...(await Promise.all(Array.from({ length: batch }, () => dialTcp({ host: '127.0.0.1', port })))));
      opened += batch;
    }
    const stop = keepBusy(streams, config.payloadBytes, onRoundTrip);
    return {
      close: async () => {
        stop();
        for (const stream of streams) stream.destroy();
      },
    };
  },
};
