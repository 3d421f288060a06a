// The subcommands of quicpool-bench: name, help line, and the module that runs it (loaded only when chosen).
import type { Command } from '../command-line.js';

export const SUBCOMMANDS: readonly { readonly name: string; readonly summary: string; load(): Promise<Command> }[] = [
  { name: 'bench', summary: 'multiplexing vs TCP pooling for a client 30 ms away: the scenarios over the WAN path, with a report (pnpm bench)', load: async () => (await import('./bench.js')).command },
  { name: 'wire', summary: 'backend-message decoding throughput of @quicpool/wire against pg-protocol (pnpm bench:wire)', load: async () => (await import('./wire.js')).command },
  { name: 'transport', summary: 'CPU and latency of one request/response over TCP and QUIC, first response through a WAN, QUIC floor (pnpm bench:transport)', load: async () => (await import('./transport.js')).command },
  { name: 'lan', summary: 'pgbench -S direct vs through quicpool vs through PgBouncer on loopback (pnpm bench:lan)', load: async () => (await import('./lan.js')).command },
  { name: 'client', summary: 'cold start, idle-session cost and drain time: TCP+TLS vs the quicpool client over QUIC (pnpm bench:client)', load: async () => (await import('./client.js')).command },
  { name: 'connect', summary: 'pgbench and first row straight over TCP+TLS vs through `quicpool connect` over QUIC (pnpm bench:connect)', load: async () => (await import('./connect.js')).command },
  { name: 'netpath', summary: 'the packet-level WAN path alone: its RTT and its forwarder\'s CPU per packet (pnpm bench:netpath)', load: async () => (await import('./netpath.js')).command },
  { name: 'soak', summary: 'steady mixed load with faults injected; exit 1 on growth, wrong answers or stray errors (pnpm bench:soak)', load: async () => (await import('./soak.js')).command },
  { name: 'faults', summary: 'a PostgreSQL restart and a failover under load: quicpool (TCP, QUIC) and PgBouncer (pnpm bench:faults)', load: async () => (await import('./faults.js')).command },
];
