// What a server does with an Initial packet for no known connection, decided without I/O:
// drop it, answer with Version Negotiation or a Retry, or accept it with a given source CID.
import type { Header } from '@matrixai/quic/native/index.js';
import { quiche } from '../native.js';
import { CID_LEN, newCid, routeKey } from './cid.js';
import type { CidOwner } from './cid.js';
import type { RetryTokens } from './retry.js';

export type InitialDecision =
  | { kind: 'drop' }
  | { kind: 'negotiate' }
  | { kind: 'retry'; newScid: Uint8Array; token: Uint8Array }
  | { kind: 'accept'; scid: Uint8Array; key: number; odcid: Uint8Array | null };

export function decideInitial(
  hdr: Header,
  datagramLength: number,
  from: { address: string; port: number },
  retry: boolean,
  routes: { has(key: number): boolean },
  tokens: RetryTokens,
  owner: CidOwner | null = null,
): InitialDecision {
  if (!quiche.versionIsSupported(hdr.version)) return { kind: 'negotiate' };
  // A client Initial is padded to 1200 bytes: smaller ones are spoofing/amplification bait.
  if (datagramLength < quiche.MIN_CLIENT_INITIAL_LEN) return { kind: 'drop' };
  if (!retry) {
    const { cid, key } = newCid(routes, owner);
    return { kind: 'accept', scid: cid, key, odcid: null };
  }
  const token = hdr.token;
  if (token === undefined || token.length === 0) {
    return { kind: 'retry', newScid: newCid(routes, owner).cid, token: tokens.mint(hdr.dcid, from.address, from.port) };
  }
  const odcid = tokens.validate(token, from.address, from.port);
  // The client now addresses us by the CID our Retry gave it: adopt it as ours.
  if (odcid === null || hdr.dcid.length !== CID_LEN) return { kind: 'drop' };
  const scid = Uint8Array.from(hdr.dcid);
  const key = routeKey(scid, 0);
  if (routes.has(key)) return { kind: 'drop' };
  return { kind: 'accept', scid, key, odcid };
}
