// Real PostgreSQL over a raw TCP socket, speaking only through @quicpool/wire.
import { afterEach, describe, expect, inject, it } from 'vitest';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { createHash } from 'node:crypto';
import type { PgConnectionInfo } from '@quicpool/pg-fixture';
import {
  BackendDecoder,
  FrontendDecoder,
  ProtocolError,
  encodeBackend,
  encodeFrontend,
  readyForQueryStatus,
  scramClientFinal,
  scramClientFirst,
  verifyScramServerFinal,
  SQLSTATE,
} from '../src/index.js';
import type { AuthenticationResponseKind, BackendKeyData, BackendMessage, FrontendMessage, RawMessage } from '../src/index.js';

const pg: PgConnectionInfo = inject('pg');

/** A minimal client: socket bytes -> BackendDecoder -> awaited messages. */
class Conn {
  private readonly decoder = new BackendDecoder();
  private readonly queue: RawMessage[] = [];
  private wake: (() => void) | null = null;
  private closed: Error | null = null;
  /** Every frontend message sent, re-decoded by our own frontend decoder as a self-check. */
  private readonly sentCheck = new FrontendDecoder();

  private constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.decoder.push(chunk);
      for (let m = this.decoder.nextRaw(); m !== undefined; m = this.decoder.nextRaw()) this.queue.push(m);
      this.wake?.();
    });
    socket.on('close', () => {
      this.closed = new Error('connection closed');
      this.wake?.();
    });
    socket.on('error', (e) => {
      this.closed = e;
      this.wake?.();
    });
  }

  static open(): Promise<Conn> {
    return new Promise((resolve, reject) => {
      const s = connect({ host: pg.host, port: pg.port, noDelay: true });
      s.once('connect', () => resolve(new Conn(s)));
      s.once('error', reject);
    });
  }

  send(...msgs: FrontendMessage[]): void {
    const bytes = Buffer.concat(msgs.map(encodeFrontend));
    const auth = msgs.find((m) => ['GSSResponse', 'PasswordMessage', 'SASLInitialResponse', 'SASLResponse'].includes(m.type));
    this.sentCheck.expectAuthentication(auth?.type as AuthenticationResponseKind | undefined);
    this.sentCheck.push(bytes);
    const echoed = this.sentCheck.drain();
    expect(echoed.map((m) => m.type)).toEqual(msgs.map((m) => m.type));
    this.socket.write(bytes);
  }

  /** Messages received and not yet read. */
  get pending(): number {
    return this.queue.length;
  }

  sendRaw(bytes: Buffer): void {
    this.socket.write(bytes);
  }

  async raw(): Promise<RawMessage> {
    for (;;) {
      const m = this.queue.shift();
      if (m !== undefined) return m;
      if (this.closed !== null) throw this.closed;
      await new Promise<void>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error('timed out waiting for a backend message')), 10_000);
        this.wake = () => {
          clearTimeout(t);
          this.wake = null;
          resolve();
        };
      });
    }
  }

  async next(): Promise<BackendMessage> {
    const raw = await this.raw();
    const d = new BackendDecoder();
    d.push(raw.bytes);
    const m = d.next();
    if (m === undefined) throw new Error('raw message did not decode');
    return m;
  }

  /** Messages up to and including ReadyForQuery. */
  async untilReady(): Promise<BackendMessage[]> {
    const out: BackendMessage[] = [];
    for (;;) {
      const m = await this.next();
      out.push(m);
      if (m.type === 'ReadyForQuery') return out;
    }
  }

  close(): void {
    this.socket.destroy();
  }

  get socketClosed(): Promise<void> {
    return new Promise((resolve) => (this.socket.destroyed ? resolve() : this.socket.once('close', () => resolve())));
  }
}

const open: Conn[] = [];
afterEach(() => {
  for (const c of open.splice(0)) c.close();
});

async function startup(user: string, protocolVersion = 196608): Promise<Conn> {
  const c = await Conn.open();
  open.push(c);
  c.send({ type: 'StartupMessage', protocolVersion, parameters: { user, database: pg.database, application_name: 'wire-test' } });
  return c;
}

/** Startup + SCRAM-SHA-256 for `pg.user`; returns the connection after its first ReadyForQuery. */
async function scramLogin(password = pg.password, protocolVersion = 196608): Promise<{ c: Conn; afterAuth: BackendMessage[]; before: BackendMessage[] }> {
  const c = await startup(pg.user, protocolVersion);
  const before: BackendMessage[] = [];
  let m = await c.next();
  while (m.type === 'NegotiateProtocolVersion') {
    before.push(m);
    m = await c.next();
  }
  expect(m.type).toBe('AuthenticationSASL');
  if (m.type !== 'AuthenticationSASL') throw new Error('unreachable');
  expect(m.mechanisms).toContain('SCRAM-SHA-256');
  const first = scramClientFirst();
  c.send({ type: 'SASLInitialResponse', mechanism: 'SCRAM-SHA-256', data: Buffer.from(first.message) });
  const cont = await c.next();
  if (cont.type !== 'AuthenticationSASLContinue') throw new Error(`expected AuthenticationSASLContinue, got ${cont.type}`);
  const final = scramClientFinal(first, cont.data.toString('utf8'), password);
  c.send({ type: 'SASLResponse', data: Buffer.from(final.message) });
  const fin = await c.next();
  if (fin.type !== 'AuthenticationSASLFinal') return { c, afterAuth: [fin], before };
  verifyScramServerFinal(fin.data.toString('utf8'), final);
  return { c, afterAuth: await c.untilReady(), before };
}

describe('a real PostgreSQL through @quicpool/wire only', () => {
  it('startup and SCRAM-SHA-256 authentication (protocol 3.0)', async () => {
    const { afterAuth } = await scramLogin();
    expect(afterAuth[0]).toEqual({ type: 'AuthenticationOk' });
    const status = afterAuth.filter((m) => m.type === 'ParameterStatus');
    expect(status).toContainEqual({ type: 'ParameterStatus', name: 'application_name', value: 'wire-test' });
    expect(status.map((m) => (m.type === 'ParameterStatus' ? m.name : ''))).toContain('server_version');
    const key = afterAuth.find((m): m is BackendKeyData => m.type === 'BackendKeyData');
    expect(key?.secretKey.length).toBe(4); // 3.0: four-byte keys
    expect(afterAuth.at(-1)).toEqual({ type: 'ReadyForQuery', status: 'I' });
  });

  it('protocol 3.2 startup: the server negotiates or accepts 3.2', async () => {
    const { before, afterAuth } = await scramLogin(pg.password, 196610);
    const key = afterAuth.find((m): m is BackendKeyData => m.type === 'BackendKeyData');
    if (before.length > 0) {
      // Postgres < 18: NegotiateProtocolVersion down to 3.0, then 4-byte keys.
      expect(before).toEqual([{ type: 'NegotiateProtocolVersion', newestProtocolVersion: 196608, unrecognizedOptions: [] }]);
      expect(key?.secretKey.length).toBe(4);
    } else {
      expect(key?.secretKey.length).toBeGreaterThanOrEqual(4);
    }
    expect(afterAuth.at(-1)).toEqual({ type: 'ReadyForQuery', status: 'I' });
  });

  it('a wrong password gets ErrorResponse 28P01', async () => {
    const { afterAuth } = await scramLogin('not-the-password');
    expect(afterAuth[0]).toMatchObject({ type: 'ErrorResponse', fields: { S: 'FATAL', C: SQLSTATE.INVALID_PASSWORD } });
  });

  it('trust and md5 users', async () => {
    const t = await startup(pg.trustUser);
    const tm = await t.untilReady();
    expect(tm[0]).toEqual({ type: 'AuthenticationOk' });
    const c = await startup(pg.md5User);
    const req = await c.next();
    if (req.type !== 'AuthenticationMD5Password') throw new Error(`expected AuthenticationMD5Password, got ${req.type}`);
    const md5 = (s: string | Buffer): string => createHash('md5').update(s).digest('hex');
    const inner = md5(pg.md5Password + pg.md5User);
    c.send({ type: 'PasswordMessage', password: 'md5' + md5(Buffer.concat([Buffer.from(inner), req.salt])) });
    expect((await c.untilReady())[0]).toEqual({ type: 'AuthenticationOk' });
  });

  it('simple query: the benchmark query, byte-for-byte the shapes the bench synthesizes', async () => {
    const { c } = await scramLogin();
    c.send({ type: 'Query', query: 'SELECT trunc(random() * 100) FROM generate_series(1, 10)' });
    const raws: RawMessage[] = [];
    for (;;) {
      const r = await c.raw();
      raws.push(r);
      if (readyForQueryStatus(r) !== undefined) break;
    }
    expect(raws).toHaveLength(13);
    expect(raws[0]!.bytes).toEqual(
      encodeBackend({
        type: 'RowDescription',
        fields: [{ name: 'trunc', tableOid: 0, columnAttributeNumber: 0, dataTypeOid: 701, dataTypeSize: 8, typeModifier: -1, format: 0 }],
      }),
    );
    const rows = raws.slice(1, 11).map((r) => {
      const d = new BackendDecoder();
      d.push(r.bytes);
      return d.next();
    });
    for (const row of rows) {
      if (row?.type !== 'DataRow') throw new Error('expected DataRow');
      expect(row.values).toHaveLength(1);
      const v = Number(row.values[0]!.toString());
      expect(Number.isInteger(v) && v >= 0 && v < 100).toBe(true);
      expect(encodeBackend(row)).toEqual(raws[rows.indexOf(row) + 1]!.bytes);
    }
    expect(raws[11]!.bytes).toEqual(encodeBackend({ type: 'CommandComplete', tag: 'SELECT 10' }));
    expect(readyForQueryStatus(raws[12]!)).toBe('I');
  });

  it('extended query with parameters, binary results, NULL', async () => {
    const { c } = await scramLogin();
    c.send(
      { type: 'Parse', name: 's1', query: 'SELECT $1::int4 + $2::int4 AS sum, $3::text IS NULL AS isnull, $4::text AS t', parameterTypes: [23, 23, 25, 25] },
      { type: 'Describe', target: 'S', name: 's1' },
      {
        type: 'Bind',
        portal: 'p1',
        statement: 's1',
        parameterFormats: [1, 0, 0, 0],
        parameters: [Buffer.from([0, 0, 0, 40]), Buffer.from('2'), null, Buffer.from('héllo')],
        resultFormats: [1, 1, 0],
      },
      { type: 'Describe', target: 'P', name: 'p1' },
      { type: 'Execute', portal: 'p1', maxRows: 0 },
      { type: 'Close', target: 'P', name: 'p1' },
      { type: 'Close', target: 'S', name: 's1' },
      { type: 'Sync' },
    );
    const got = await c.untilReady();
    expect(got.map((m) => m.type)).toEqual([
      'ParseComplete',
      'ParameterDescription',
      'RowDescription',
      'BindComplete',
      'RowDescription',
      'DataRow',
      'CommandComplete',
      'CloseComplete',
      'CloseComplete',
      'ReadyForQuery',
    ]);
    expect(got[1]).toEqual({ type: 'ParameterDescription', parameterTypes: [23, 23, 25, 25] });
    const portalDesc = got[4];
    if (portalDesc?.type !== 'RowDescription') throw new Error('expected RowDescription');
    expect(portalDesc.fields.map((f) => [f.name, f.dataTypeOid, f.format])).toEqual([
      ['sum', 23, 1],
      ['isnull', 16, 1],
      ['t', 25, 0],
    ]);
    expect(got[5]).toEqual({ type: 'DataRow', values: [Buffer.from([0, 0, 0, 42]), Buffer.from([1]), Buffer.from('héllo')] });
    expect(got[6]).toEqual({ type: 'CommandComplete', tag: 'SELECT 1' });
  });

  it('errors: ErrorResponse fields, transaction status E, then recovery', async () => {
    const { c } = await scramLogin();
    c.send({ type: 'Query', query: 'BEGIN; SELECT 1/0;' });
    const got = await c.untilReady();
    const err = got.find((m) => m.type === 'ErrorResponse');
    expect(err).toMatchObject({ type: 'ErrorResponse', fields: { S: 'ERROR', V: 'ERROR', C: '22012', M: 'division by zero' } });
    expect(got.at(-1)).toEqual({ type: 'ReadyForQuery', status: 'E' });
    c.send({ type: 'Query', query: 'ROLLBACK' });
    expect(await c.untilReady()).toEqual([
      { type: 'CommandComplete', tag: 'ROLLBACK' },
      { type: 'ReadyForQuery', status: 'I' },
    ]);
    c.send({ type: 'Query', query: '' });
    expect(await c.untilReady()).toEqual([{ type: 'EmptyQueryResponse' }, { type: 'ReadyForQuery', status: 'I' }]);
  });

  it('CancelRequest with the BackendKeyData cancels a running query (57014)', async () => {
    const { c, afterAuth } = await scramLogin();
    const key = afterAuth.find((m): m is BackendKeyData => m.type === 'BackendKeyData');
    if (key === undefined) throw new Error('no BackendKeyData');
    c.send({ type: 'Query', query: 'SELECT pg_sleep(20)' });
    // A cancel that arrives before the query starts does nothing: repeat until the query answers.
    for (let i = 0; i < 40 && c.pending === 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
      const canceller = await Conn.open();
      open.push(canceller);
      canceller.send({ type: 'CancelRequest', processId: key.processId, secretKey: key.secretKey });
      await canceller.socketClosed;
      await new Promise((r) => setTimeout(r, 100));
    }
    const got = await c.untilReady();
    expect(got.find((m) => m.type === 'ErrorResponse')).toMatchObject({ fields: { C: SQLSTATE.QUERY_CANCELED } });
  });

  it('an unknown message type: Postgres and our FrontendDecoder both answer 08P01', async () => {
    const { c } = await scramLogin();
    const bogus = Buffer.from([0x3f, 0, 0, 0, 4]); // '?'
    const ours = new FrontendDecoder({ startup: false });
    ours.push(bogus);
    expect(() => ours.next()).toThrow(ProtocolError);
    expect(ours.error?.sqlstate).toBe(SQLSTATE.PROTOCOL_VIOLATION);
    c.sendRaw(bogus);
    const got = await c.next();
    expect(got).toMatchObject({ type: 'ErrorResponse', fields: { S: 'FATAL', C: SQLSTATE.PROTOCOL_VIOLATION } });
    await c.socketClosed;
  });

  it('Terminate closes the session cleanly', async () => {
    const { c } = await scramLogin();
    c.send({ type: 'Terminate' });
    await c.socketClosed;
  });
});
