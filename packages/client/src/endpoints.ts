// Pooler endpoints: parsing the host list, one QUIC client endpoint (UDP socket) per pooler,
// created on first use, and each endpoint's health: a failed connection attempt takes it out of
// rotation for a back-off that doubles per consecutive failure.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { QuicEndpoint } from '@quicpool/transport';
import type { QuicCommonOptions, QuicTicketStore } from '@quicpool/transport';
import type { CertificatePolicy } from './certificates.js';
import { serverNameFor } from './certificates.js';
import type { EndpointSpec } from './options.js';

const MAX_BACKOFF_MS = 30_000;

export interface EndpointAddress {
  readonly host: string;
  readonly port: number;
  readonly serverName: string | undefined;
}

export function parseEndpoint(spec: EndpointSpec): EndpointAddress {
  if (typeof spec !== 'string') return { host: spec.host, port: checkPort(spec.port, `${spec.host}`), serverName: spec.serverName };
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(spec) ?? /^([^:]+):(\d+)$/.exec(spec);
  if (m === null) throw new RangeError(`endpoint '${spec}' must look like host:port or [v6]:port`);
  return { host: m[1]!, port: checkPort(Number(m[2]), spec), serverName: undefined };
}

function checkPort(port: number, what: string): number {
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new RangeError(`endpoint ${what}: bad port ${port}`);
  return port;
}

export interface EndpointSettings {
  readonly policy: CertificatePolicy;
  readonly serverName: string | undefined;
  readonly earlyData: boolean;
  readonly tickets: QuicTicketStore;
  readonly quic: QuicCommonOptions;
  readonly retryMs: number;
}

/** One pooler: its socket, how many connections go to it, and whether it is in rotation. */
export class PoolerEndpoint {
  readonly label: string;
  readonly serverName: string;
  /** Live and connecting connections to this endpoint. */
  connections = 0;
  /** Not used for new connections before this time (ms, performance clock). */
  downUntil = 0;
  /** The last connection to it died or failed: wait for a full handshake before trusting 0-RTT. */
  suspect = false;
  lastError: Error | null = null;
  private failures = 0;
  private endpointP: Promise<QuicEndpoint> | null = null;

  constructor(
    readonly address: EndpointAddress,
    private readonly settings: EndpointSettings,
  ) {
    this.label = `${address.host}:${address.port}`;
    this.serverName = serverNameFor(address.host, address.serverName ?? settings.serverName, settings.policy);
  }

  get isDown(): boolean {
    return this.downUntil > performance.now();
  }

  /** The QUIC client endpoint (a UDP socket connected to this pooler), resolving the host once. */
  endpoint(): Promise<QuicEndpoint> {
    this.endpointP ??= this.create();
    const p = this.endpointP;
    p.catch(() => {
      if (this.endpointP === p) this.endpointP = null; // retry resolution next time
    });
    return p;
  }

  private async create(): Promise<QuicEndpoint> {
    const { host, port } = this.address;
    const ip = isIP(host) !== 0 ? host : (await lookup(host)).address;
    const { policy } = this.settings;
    return QuicEndpoint.client({
      ...this.settings.quic,
      host: ip,
      port,
      serverName: this.serverName,
      ...(policy.ca !== undefined ? { ca: policy.ca } : {}),
      ...(policy.clientCert !== undefined ? { cert: policy.clientCert.cert, key: policy.clientCert.key } : {}),
      dangerouslySkipVerify: policy.skipChainVerification,
      enableEarlyData: this.settings.earlyData,
      tickets: this.settings.tickets,
    });
  }

  markUp(): boolean {
    const wasDown = this.failures > 0;
    this.failures = 0;
    this.downUntil = 0;
    this.suspect = false;
    this.lastError = null;
    return wasDown;
  }

  markFailed(err: Error): void {
    this.failures++;
    this.lastError = err;
    this.suspect = true;
    this.downUntil = performance.now() + Math.min(MAX_BACKOFF_MS, this.settings.retryMs * 2 ** (this.failures - 1));
  }

  async close(options: { graceful: boolean; timeoutMs: number }): Promise<void> {
    const p = this.endpointP;
    this.endpointP = null;
    if (p === null) return;
    const ep = await p.catch(() => null);
    if (ep !== null) await ep.close(options);
  }
}
