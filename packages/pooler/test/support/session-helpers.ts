// Helpers for driving a ClientSession without I/O.
import { BackendDecoder, encodeBackend, encodeFrontend } from '@quicpool/wire';
import type { BackendMessage, RawMessage, TypedFrontendMessage } from '@quicpool/wire';
import { resolvePoolerConfig } from '../../src/config/pooler-config.js';
import type { PoolerConfig } from '../../src/config/pooler-config.js';
import type { PoolMode } from '../../src/config/pool-settings.js';
import type { SessionAction, SessionContext } from '../../src/session/types.js';
import type { PeerCertificate, TransportKind } from '@quicpool/transport';

export function testContext(
  opts: { transport?: TransportKind; poolMode?: PoolMode; users?: PoolerConfig['users']; allowInsecure?: boolean; tls?: boolean; refuse?: boolean; peerCertificate?: PeerCertificate } = {},
): SessionContext {
  const config = resolvePoolerConfig({
    server: { host: '127.0.0.1', port: 5432 },
    users: opts.users ?? { alice: { auth: 'trust' } },
  });
  return {
    transport: opts.transport ?? 'memory',
    tlsAvailable: opts.tls ?? false,
    poolMode: opts.poolMode ?? 'transaction',
    allowInsecurePasswordAuth: opts.allowInsecure ?? false,
    ignoreStartupParameters: config.ignoreStartupParameters,
    lookupUser: (name) => config.users.get(name),
    peerCertificate: () => opts.peerCertificate ?? null,
    admit: () => (opts.refuse === true ? { sqlstate: '53300', message: 'sorry, too many clients already' } : undefined),
  };
}

export function raw(m: TypedFrontendMessage): RawMessage {
  const bytes = encodeFrontend(m);
  return { type: bytes[0]!, bytes };
}

export function rawBackend(m: BackendMessage): RawMessage {
  const bytes = encodeBackend(m);
  return { type: bytes[0]!, bytes };
}

/** Decodes every sendToClient byte of `actions` as backend messages (skipping 1-byte SSL answers). */
export function clientMessages(actions: readonly SessionAction[]): BackendMessage[] {
  const dec = new BackendDecoder();
  for (const a of actions) if (a.type === 'sendToClient' && a.bytes.length > 1) dec.push(a.bytes);
  return dec.drain();
}

export function types(actions: readonly SessionAction[]): string[] {
  return actions.map((a) => a.type);
}
