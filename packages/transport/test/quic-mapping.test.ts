// docs/quic-mapping.md tells implementers of other clients the numbers of the QUIC mapping. Its
// constants table (between the `constants:begin` / `constants:end` markers, rows
// "| `name` | `value` | ...") must say what the code does: every row is checked here against the
// code, the transport parameters against a live connection (what each side really sent), and the
// table must name exactly the constants this file knows.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { buildServerConfig, DEFAULT_ALPN, resolveCommon } from '../src/quic/config.js';
import { AppError, connectionClosedError } from '../src/quic/errors.js';
import { QuicDialer, QuicListener } from '../src/quic/index.js';
import type { QuicConnection, QuicSessionStream } from '../src/quic/index.js';
import { quiche } from '../src/quic/native.js';
import { CID_LEN, newCid } from '../src/quic/routing/cid.js';
import { CLOSED_ROUTE_MS } from '../src/quic/routing/closed.js';
import { RetryTokens } from '../src/quic/routing/retry.js';
import { RESET_TOKEN_LEN, StatelessResets } from '../src/quic/routing/stateless-reset.js';
import { MAX_STEERED_WORKERS, steeredWorker } from '../src/quic/routing/steering.js';
import { devCerts, readN, waitFor } from './quic-helpers.js';

type Value = string | number | boolean;

const DOC = new URL('../../../docs/quic-mapping.md', import.meta.url);

/** The document's constants table: name -> value (`0x..` and digits are numbers, true/false booleans). */
function documentedConstants(): Map<string, Value> {
  const text = readFileSync(DOC, 'utf8');
  const start = text.indexOf('<!-- constants:begin -->');
  const end = text.indexOf('<!-- constants:end -->');
  if (start < 0 || end < start) throw new Error('docs/quic-mapping.md has no constants:begin/end markers');
  const out = new Map<string, Value>();
  for (const line of text.slice(start, end).split('\n')) {
    const m = /^\|\s*`([^`]+)`\s*\|\s*`([^`]+)`\s*\|/.exec(line);
    if (m === null) continue;
    const [, name, raw] = m as unknown as [string, string, string];
    if (out.has(name)) throw new Error(`constant ${name} is listed twice`);
    out.set(name, parseValue(raw));
  }
  return out;
}

function parseValue(raw: string): Value {
  if (/^0x[0-9a-f]+$/i.test(raw)) return Number.parseInt(raw.slice(2), 16);
  if (/^\d+$/.test(raw)) return Number(raw);
  if (raw === 'true' || raw === 'false') return raw === 'true';
  return raw;
}

const documented = documentedConstants();

/** What the code says for each constant: every value listed must equal the document's. */
const actual = new Map<string, readonly Value[]>();

let listener: QuicListener;
let dialer: QuicDialer;
let stream: QuicSessionStream;
const ignore = (): void => undefined;

/** The last stateless reset length `build` allows, scanning trigger lengths (a high rate so none is refused). */
function resetLengths(): { min: number; max: number } {
  const resets = new StatelessResets(undefined, 100_000);
  const out = new Uint8Array(2048);
  const cid = randomBytes(CID_LEN);
  const lengths: number[] = [];
  for (let trigger = 1; trigger <= 1500; trigger++) {
    const n = resets.build(cid, trigger, out, 1_000_000);
    if (n > 0) lengths.push(n);
  }
  return { min: Math.min(...lengths), max: Math.max(...lengths) };
}

/** Resets one endpoint sends in one second with its default rate. */
function resetsPerSecond(): number {
  const resets = new StatelessResets(undefined);
  const out = new Uint8Array(64);
  const cid = randomBytes(CID_LEN);
  let sent = 0;
  for (let i = 0; i < 1000; i++) if (resets.build(cid, 100, out, 5_000 + (i % 900)) > 0) sent++;
  return sent;
}

/** The oldest age (ms) at which a Retry token still validates. */
function retryTokenLifetime(): number {
  const tokens = new RetryTokens();
  const issued = 1_000_000_000;
  const token = tokens.mint(randomBytes(CID_LEN), '127.0.0.1', 4242, issued);
  let lo = 0; // valid
  let hi = 10_000_000; // assumed invalid (checked below)
  expect(tokens.validate(token, '127.0.0.1', 4242, issued + hi)).toBeNull();
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (tokens.validate(token, '127.0.0.1', 4242, issued + mid) !== null) lo = mid;
    else hi = mid;
  }
  return lo;
}

/** The crypto error codes (0x100-0x1ff) the transport reports as an ALPN mismatch (ECONNREFUSED). */
function alpnMismatchCodes(): number[] {
  const codes: number[] = [];
  for (let code = 0x100; code <= 0x1ff; code++) {
    const e = connectionClosedError(
      { timedOut: false, local: null, peer: { isApp: false, errorCode: code, reason: new Uint8Array(0) }, closedLocally: null, established: false },
      'localhost',
    );
    if (e.code === 'ECONNREFUSED') codes.push(code);
  }
  return codes;
}

beforeAll(async () => {
  const certs = await devCerts();
  // Defaults everywhere: what the document describes.
  listener = await QuicListener.listen({ cert: certs.cert, key: certs.key });
  listener.onSession((s) => {
    s.on('error', ignore);
    s.pipe(s);
  });
  dialer = new QuicDialer({ host: '127.0.0.1', port: listener.address().port, serverName: 'localhost', ca: certs.ca });
  stream = await dialer.open();
  stream.on('error', ignore);
  stream.write('ping');
  await readN(stream, 4);
  const client: QuicConnection = [...(await dialer.endpoint()).connections][0]!;
  const server: QuicConnection = [...listener.endpoint.connections][0]!;
  // The server's spare connection ids arrive after the handshake.
  await waitFor(() => client.q.availableDcids() === documented.get('spare_connection_ids'), 3000, 'the spare connection ids the document names');
  /** The server's transport parameters as the client received them, and the client's as the server did. */
  const fromServer = client.q.stats();
  const fromClient = server.q.stats();
  const both = <K extends keyof typeof fromServer>(k: K): Array<(typeof fromServer)[K]> => [fromServer[k], fromClient[k]];
  const serverCommon = resolveCommon({}, 'server');
  const clientCommon = resolveCommon({}, 'client');
  const built = buildServerConfig({ cert: certs.cert, key: certs.key }, serverCommon);
  const resets = resetLengths();
  const alpnMismatch = alpnMismatchCodes();
  const tls = stream.info.tls;
  const set = (name: string, ...values: Value[]): void => void actual.set(name, values);

  set('alpn', DEFAULT_ALPN, ...serverCommon.alpn, ...clientCommon.alpn, tls?.alpnProtocol ?? '(none negotiated)');
  set('quic_version', quiche.PROTOCOL_VERSION);
  set('quic_v2', quiche.versionIsSupported(0x6b3343cf));
  set('tls_version', tls?.protocol ?? '(no TLS)');
  set('min_initial_datagram', quiche.MIN_CLIENT_INITIAL_LEN);
  set('max_idle_timeout', ...both('peerMaxIdleTimeout'), serverCommon.idleTimeoutMs, clientCommon.idleTimeoutMs);
  set('client.keep_alive_ms', clientCommon.keepAliveMs);
  set('server.keep_alive_ms', serverCommon.keepAliveMs);
  set('max_udp_payload_size', ...both('peerMaxUdpPayloadSize'), quiche.MAX_DATAGRAM_SIZE);
  set('initial_max_data', ...both('peerInitialMaxData'), serverCommon.initialMaxData, clientCommon.initialMaxData);
  set('initial_max_stream_data_bidi_local', ...both('peerInitialMaxStreamDataBidiLocal'));
  set('initial_max_stream_data_bidi_remote', ...both('peerInitialMaxStreamDataBidiRemote'));
  set('initial_max_stream_data_uni', ...both('peerInitialMaxStreamDataUni'));
  set('server.initial_max_streams_bidi', fromServer.peerInitialMaxStreamsBidi, built.maxStreamsPerConnection);
  set('client.initial_max_streams_bidi', fromClient.peerInitialMaxStreamsBidi);
  set('initial_max_streams_uni', ...both('peerInitialMaxStreamsUni'));
  set('max_ack_delay', ...both('peerMaxAckDelay'));
  set('ack_delay_exponent', ...both('peerAckDelayExponent'));
  set('active_connection_id_limit', ...both('peerActiveConnIdLimit'));
  set('disable_active_migration', ...both('peerDisableActiveMigration'));
  set('max_connections', built.maxConnections);
  set('early_data', built.earlyData);
  set('retry', built.retry);
  set('retry_token_lifetime_ms', retryTokenLifetime());
  set('connection_id_length', CID_LEN, client.q.sourceId().length, server.q.sourceId().length, client.q.destinationId().length);
  set('spare_connection_ids', client.q.availableDcids());
  set('max_steered_workers', MAX_STEERED_WORKERS);
  set('stateless_reset_token_length', RESET_TOKEN_LEN, new StatelessResets(undefined).token(randomBytes(CID_LEN)).length);
  set('stateless_reset_min_bytes', resets.min);
  set('stateless_reset_max_bytes', resets.max);
  set('stateless_resets_per_second', resetsPerSecond());
  set('close_repeat_ms', CLOSED_ROUTE_MS);
  set('app.no_error', AppError.NoError);
  set('app.stream_cancelled', AppError.StreamCancelled);
  set('app.shutdown', AppError.Shutdown);
  set('close.no_application_protocol', ...alpnMismatch);
});

afterAll(async () => {
  // The echo session ends both ways (FIN, echoed FIN), then both endpoints close gracefully.
  if (stream !== undefined && !stream.destroyed) {
    const closed = new Promise((resolve) => stream.once('close', resolve));
    stream.end();
    await closed;
  }
  await dialer?.close({ timeoutMs: 2000 });
  await listener?.close({ timeoutMs: 2000 });
});

describe('docs/quic-mapping.md constants', () => {
  test('the table names exactly the constants this test checks', () => {
    expect([...documented.keys()].sort()).toEqual([...actual.keys()].sort());
  });

  for (const [name, value] of documented) {
    test(`${name} = ${String(value)}`, () => {
      const values = actual.get(name);
      expect(values, `no check for ${name}`).toBeDefined();
      expect(values!.length, `no value for ${name}`).toBeGreaterThan(0);
      for (const v of values!) expect(v, name).toBe(value);
    });
  }
});

describe('docs/quic-mapping.md rules', () => {
  test('the worker is the first byte of every connection id it issues, modulo the worker count', () => {
    for (const count of [1, 2, 3, 7, 16, MAX_STEERED_WORKERS]) {
      for (let index = 0; index < count; index += Math.max(1, Math.floor(count / 5))) {
        const { cid } = newCid(new Set<number>(), { index, count });
        expect(cid[0]! % count).toBe(index);
        const shortHeader = Uint8Array.from([0x40, ...cid, 1, 2, 3]);
        expect(steeredWorker(shortHeader, count)).toBe(index);
      }
    }
  });

  test('the application error codes are exactly the three the document lists', () => {
    expect(Object.keys(AppError).length).toBe(3);
  });
});
