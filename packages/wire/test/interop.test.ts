// Interop with pg-protocol (node-postgres's codec) in both directions.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { serialize } from 'pg-protocol';
import { Parser } from 'pg-protocol/dist/parser.js';
import { FrontendDecoder, encodeBackend } from '../src/index.js';
import type { AuthenticationResponseKind, BackendMessage, FrontendMessage } from '../src/index.js';
import { bytes, int16, int32, nonEmptyStr, str, uint32 } from './arbitraries.js';

function ours(buf: Buffer, opts: { startup?: boolean; authentication?: AuthenticationResponseKind } = {}): FrontendMessage[] {
  const d = new FrontendDecoder({ startup: opts.startup ?? false, authentication: opts.authentication });
  d.push(Buffer.from(buf)); // pg-protocol reuses some output buffers
  const out = d.drain();
  d.end();
  return out.map((m) => (m.type === 'StartupMessage' ? { ...m, parameters: { ...m.parameters } } : m));
}

function pgParse(buf: Buffer): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  new Parser().parse(buf, (m) => out.push(m as unknown as Record<string, unknown>));
  return out;
}

const textValue = fc.option(str(30), { nil: null, freq: 4 });

describe("pg-protocol's serialize -> our frontend decoder", () => {
  it('StartupMessage (node-postgres adds client_encoding)', () => {
    fc.assert(
      fc.property(fc.dictionary(nonEmptyStr().filter((k) => k !== 'client_encoding'), str(), { maxKeys: 5 }), (opts) => {
        expect(ours(serialize.startup({ ...opts }), { startup: true })).toEqual([
          { type: 'StartupMessage', protocolVersion: 196608, parameters: { ...opts, client_encoding: 'UTF8' } },
        ]);
      }),
    );
  });

  it('SSLRequest and CancelRequest', () => {
    expect(ours(serialize.requestSsl(), { startup: true })).toEqual([{ type: 'SSLRequest' }]);
    fc.assert(
      fc.property(int32, int32, (pid, key) => {
        const k = Buffer.alloc(4);
        k.writeInt32BE(key);
        expect(ours(serialize.cancel(pid, key), { startup: true })).toEqual([{ type: 'CancelRequest', processId: pid, secretKey: k }]);
      }),
    );
  });

  it("'p' messages: password, SASL initial response, SCRAM client-final", () => {
    fc.assert(
      fc.property(str(), str(), str(60), (pw, mech, data) => {
        expect(ours(serialize.password(pw), { authentication: 'PasswordMessage' })).toEqual([{ type: 'PasswordMessage', password: pw }]);
        expect(ours(serialize.sendSASLInitialResponseMessage(mech, data), { authentication: 'SASLInitialResponse' })).toEqual([
          { type: 'SASLInitialResponse', mechanism: mech, data: Buffer.from(data) },
        ]);
        expect(ours(serialize.sendSCRAMClientFinalMessage(data), { authentication: 'SASLResponse' })).toEqual([
          { type: 'SASLResponse', data: Buffer.from(data) },
        ]);
      }),
    );
  });

  it('extended query: Parse, Bind, Describe, Execute, Close, Flush, Sync', () => {
    fc.assert(
      fc.property(
        str(63),
        str(200),
        fc.array(uint32, { maxLength: 5 }),
        str(),
        fc.array(fc.oneof(textValue, bytes(20)), { maxLength: 6 }),
        fc.boolean(),
        fc.nat(1000),
        fc.constantFrom<'S' | 'P'>('S', 'P'),
        (name, text, types, portal, values, binary, rows, target) => {
          expect(ours(serialize.parse({ name, text, types }))).toEqual([{ type: 'Parse', name, query: text, parameterTypes: types }]);
          expect(ours(serialize.bind({ portal, statement: name, values, binary }))).toEqual([
            {
              type: 'Bind',
              portal,
              statement: name,
              parameterFormats: values.map((v) => (Buffer.isBuffer(v) ? 1 : 0)),
              parameters: values.map((v) => (v === null ? null : Buffer.isBuffer(v) ? v : Buffer.from(v))),
              resultFormats: [binary ? 1 : 0],
            },
          ]);
          expect(ours(serialize.describe({ type: target, name }))).toEqual([{ type: 'Describe', target, name }]);
          expect(ours(serialize.execute({ portal, rows }))).toEqual([{ type: 'Execute', portal, maxRows: rows }]);
          expect(ours(serialize.close({ type: target, name }))).toEqual([{ type: 'Close', target, name }]);
        },
      ),
      { numRuns: 300 },
    );
    expect(ours(Buffer.concat([serialize.flush(), serialize.sync(), serialize.end()]))).toEqual([
      { type: 'Flush' },
      { type: 'Sync' },
      { type: 'Terminate' },
    ]);
  });

  it('Query and COPY messages', () => {
    fc.assert(
      fc.property(str(300), bytes(100), (q, chunk) => {
        expect(ours(serialize.query(q))).toEqual([{ type: 'Query', query: q }]);
        expect(ours(serialize.copyData(chunk))).toEqual([{ type: 'CopyData', data: chunk }]);
        expect(ours(serialize.copyFail(q))).toEqual([{ type: 'CopyFail', message: q }]);
      }),
    );
    expect(ours(serialize.copyDone())).toEqual([{ type: 'CopyDone' }]);
  });

  it('a whole node-postgres session stream, split anywhere', () => {
    const stream = Buffer.concat([
      serialize.requestSsl(),
      serialize.startup({ user: 'alice', database: 'db' }),
      serialize.password('secret'),
      serialize.query('select 1'),
      serialize.parse({ name: 's1', text: 'select $1::int', types: [23] }),
      serialize.bind({ statement: 's1', values: ['42'] }),
      serialize.describe({ type: 'P' }),
      serialize.execute(),
      serialize.sync(),
      serialize.end(),
    ]);
    fc.assert(
      fc.property(fc.array(fc.nat(stream.length), { maxLength: 20 }), (cuts) => {
        const d = new FrontendDecoder({ authentication: 'PasswordMessage' });
        const pts = [...new Set(cuts)].sort((a, b) => a - b);
        let prev = 0;
        const types: string[] = [];
        for (const p of [...pts, stream.length]) {
          d.push(stream.subarray(prev, p));
          prev = p;
          for (let m = d.next(); m !== undefined; m = d.next()) types.push(m.type);
        }
        d.end();
        expect(types).toEqual(['SSLRequest', 'StartupMessage', 'PasswordMessage', 'Query', 'Parse', 'Bind', 'Describe', 'Execute', 'Sync', 'Terminate']);
      }),
    );
  });
});

describe("our backend encoder -> pg-protocol's Parser", () => {
  const check = (m: BackendMessage, expected: Record<string, unknown>): void => {
    const bytes = encodeBackend(m);
    const parsed = pgParse(bytes);
    expect(parsed).toHaveLength(1);
    expect(parsed[0]).toMatchObject({ ...expected, length: bytes.length - 1 });
  };

  it('DataRow, RowDescription, CommandComplete, ReadyForQuery', () => {
    const field = fc.record({
      name: str(),
      tableOid: uint32,
      columnAttributeNumber: int16,
      dataTypeOid: uint32,
      dataTypeSize: int16,
      typeModifier: int32,
      format: fc.constantFrom(0, 1),
    });
    fc.assert(
      fc.property(fc.array(textValue, { maxLength: 8 }), fc.array(field, { maxLength: 5 }), str(), fc.constantFrom<'I' | 'T' | 'E'>('I', 'T', 'E'), (vals, fields, tag, status) => {
        check({ type: 'DataRow', values: vals.map((v) => (v === null ? null : Buffer.from(v))) }, { name: 'dataRow', fields: vals, fieldCount: vals.length });
        check(
          { type: 'RowDescription', fields },
          {
            name: 'rowDescription',
            fieldCount: fields.length,
            fields: fields.map((f) => ({
              name: f.name,
              tableID: f.tableOid,
              columnID: f.columnAttributeNumber,
              dataTypeID: f.dataTypeOid,
              dataTypeSize: f.dataTypeSize,
              dataTypeModifier: f.typeModifier,
              format: f.format === 0 ? 'text' : 'binary',
            })),
          },
        );
        check({ type: 'CommandComplete', tag }, { name: 'commandComplete', text: tag });
        check({ type: 'ReadyForQuery', status }, { name: 'readyForQuery', status });
      }),
      { numRuns: 500 },
    );
  });

  it('ErrorResponse and NoticeResponse', () => {
    fc.assert(
      fc.property(str(), str(5), str(80), str(), str(), (severity, code, message, detail, hint) => {
        const fields = { S: severity, V: severity, C: code, M: message, D: detail, H: hint, X: 'unknown code kept' };
        const expected = { severity, code, message, detail, hint };
        check({ type: 'ErrorResponse', fields }, { name: 'error', ...expected });
        check({ type: 'NoticeResponse', fields }, { name: 'notice', ...expected });
      }),
    );
  });

  it('startup and session messages', () => {
    fc.assert(
      fc.property(int32, int32, str(), str(), str(), fc.array(uint32, { maxLength: 6 }), (pid, key, a, b, c, oids) => {
        const k = Buffer.alloc(4);
        k.writeInt32BE(key);
        check({ type: 'BackendKeyData', processId: pid, secretKey: k }, { name: 'backendKeyData', processID: pid, secretKey: key });
        check({ type: 'ParameterStatus', name: a, value: b }, { name: 'parameterStatus', parameterName: a, parameterValue: b });
        check({ type: 'NotificationResponse', processId: pid, channel: a, payload: c }, { name: 'notification', processId: pid, channel: a, payload: c });
        check({ type: 'ParameterDescription', parameterTypes: oids }, { name: 'parameterDescription', parameterCount: oids.length, dataTypeIDs: oids });
      }),
    );
  });

  it('authentication requests', () => {
    check({ type: 'AuthenticationOk' }, { name: 'authenticationOk' });
    check({ type: 'AuthenticationCleartextPassword' }, { name: 'authenticationCleartextPassword' });
    check({ type: 'AuthenticationMD5Password', salt: Buffer.from([1, 2, 3, 4]) }, { name: 'authenticationMD5Password', salt: Buffer.from([1, 2, 3, 4]) });
    fc.assert(
      fc.property(fc.array(nonEmptyStr(), { minLength: 1, maxLength: 3 }), str(80), (mechanisms, data) => {
        check({ type: 'AuthenticationSASL', mechanisms }, { name: 'authenticationSASL', mechanisms });
        check({ type: 'AuthenticationSASLContinue', data: Buffer.from(data) }, { name: 'authenticationSASLContinue', data });
        check({ type: 'AuthenticationSASLFinal', data: Buffer.from(data) }, { name: 'authenticationSASLFinal', data });
      }),
    );
  });

  it('bodiless messages and COPY', () => {
    const pairs: [BackendMessage, string][] = [
      [{ type: 'ParseComplete' }, 'parseComplete'],
      [{ type: 'BindComplete' }, 'bindComplete'],
      [{ type: 'CloseComplete' }, 'closeComplete'],
      [{ type: 'NoData' }, 'noData'],
      [{ type: 'PortalSuspended' }, 'portalSuspended'],
      [{ type: 'EmptyQueryResponse' }, 'emptyQuery'],
      [{ type: 'CopyDone' }, 'copyDone'],
    ];
    for (const [m, name] of pairs) check(m, { name });
    fc.assert(
      fc.property(bytes(100), fc.constantFrom(0, 1), fc.array(fc.constantFrom(0, 1), { maxLength: 5 }), (data, format, cols) => {
        check({ type: 'CopyData', data }, { name: 'copyData', chunk: data });
        check({ type: 'CopyInResponse', format, columnFormats: cols }, { name: 'copyInResponse', binary: format === 1, columnTypes: cols });
        check({ type: 'CopyOutResponse', format, columnFormats: cols }, { name: 'copyOutResponse', binary: format === 1, columnTypes: cols });
      }),
    );
  });
});
