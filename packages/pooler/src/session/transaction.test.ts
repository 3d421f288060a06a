// The transaction tracker alone: what is owed by the backend, the transaction status, the facts
// of a release and the per-request timers, for simple and extended protocol and the pooler's own
// statements.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeBackend, MessageType } from '@quicpool/wire';
import type { TransactionStatus } from '@quicpool/wire';
import { TransactionTracker } from './transaction.js';
import type { SessionAction } from './types.js';

const ready = (status: TransactionStatus): Buffer => encodeBackend({ type: 'ReadyForQuery', status });

function tracker(): { t: TransactionTracker; timers: string[] } {
  const timers: string[] = [];
  const t = new TransactionTracker((a: SessionAction) => {
    if (a.type === 'timer') timers.push(`${a.timer}:${a.armed ? 'on' : 'off'}`);
  });
  t.attached(false);
  return { t, timers };
}

describe('TransactionTracker', () => {
  it('a simple query: running until its ReadyForQuery, then a clean release', () => {
    const { t, timers } = tracker();
    t.forwarded(MessageType.Query);
    expect(t.running).toBe(true);
    expect(t.releaseFacts(false)).toEqual({ status: 'I', busy: true, dirty: false });
    expect(t.ready(ready('I'))).toBe('settled');
    expect(t.running).toBe(false);
    expect(t.releaseFacts(false)).toEqual({ status: 'I', busy: false, dirty: false });
    expect(t.queriesAnswered).toBe(1);
    expect(timers).toEqual(['query:on', 'query:off']);
  });

  it('extended protocol: unsynced messages keep it running; each Sync owes a ReadyForQuery', () => {
    const { t } = tracker();
    for (const type of [MessageType.Parse, MessageType.Bind, MessageType.Execute]) t.forwarded(type);
    expect(t.running).toBe(true); // no Sync yet: the backend is mid-sequence
    expect(t.releaseFacts(false).busy).toBe(true);
    t.forwarded(MessageType.Sync);
    t.forwarded(MessageType.Bind);
    t.forwarded(MessageType.Execute);
    t.forwarded(MessageType.Sync);
    expect(t.ready(ready('I'))).toBe('pending');
    expect(t.ready(ready('I'))).toBe('settled');
    expect(t.queriesAnswered).toBe(2);
  });

  it('inside a transaction: the idle-in-transaction timer runs between requests', () => {
    const { t, timers } = tracker();
    t.forwarded(MessageType.Query);
    t.ready(ready('T'));
    expect(t.idleInTransaction).toBe(true);
    expect(t.releaseFacts(false)).toEqual({ status: 'T', busy: false, dirty: false });
    t.forwarded(MessageType.Query);
    expect(t.idleInTransaction).toBe(false);
    t.ready(ready('I'));
    expect(timers).toEqual(['query:on', 'query:off', 'idleInTransaction:on', 'idleInTransaction:off', 'query:on', 'query:off']);
  });

  it("the pooler's own statements are swallowed and make a release busy until answered", () => {
    const { t } = tracker();
    t.ownStatement();
    expect(t.releaseFacts(false).busy).toBe(true);
    expect(t.swallows(MessageType.CommandComplete)).toBe(true);
    expect(t.swallows(MessageType.ReadyForQuery)).toBe(true);
    expect(t.swallows(MessageType.ReadyForQuery)).toBe(false); // the next one is the client's
    expect(t.releaseFacts(false).busy).toBe(false);
  });

  it('a wrapped query (read-only 0-RTT): BEGIN swallowed, the answer passes except its ReadyForQuery, the COMMIT\'s ReadyForQuery stands in', () => {
    const { t } = tracker();
    const wrapped = (): void => {
      t.ownStatement('own');
      t.ownStatement('wrapped');
      t.forwarded(MessageType.Query);
      t.ownStatement('closing');
    };
    wrapped();
    wrapped(); // pipelined: the queue keeps the order
    const passed: number[] = [];
    const outcomes: string[] = [];
    const feed = (type: number, status?: TransactionStatus): void => {
      if (t.swallows(type)) return;
      passed.push(type);
      if (status !== undefined) outcomes.push(t.ready(ready(status)));
    };
    for (let i = 0; i < 2; i++) {
      feed(MessageType.CommandComplete); // BEGIN
      feed(MessageType.ReadyForQuery); // 'T' of BEGIN
      feed(MessageType.RowDescription);
      feed(MessageType.DataRow);
      feed(MessageType.CommandComplete); // SELECT 1
      feed(MessageType.ReadyForQuery); // 'T' of the query: dropped
      feed(MessageType.CommandComplete); // COMMIT
      feed(MessageType.ReadyForQuery, 'I'); // the COMMIT's: the client's
    }
    const answer = [MessageType.RowDescription, MessageType.DataRow, MessageType.CommandComplete, MessageType.ReadyForQuery];
    expect(passed).toEqual([...answer, ...answer]);
    expect(outcomes).toEqual(['pending', 'settled']);
    expect(t.status).toBe('I');
    expect(t.releaseFacts(false)).toEqual({ status: 'I', busy: false, dirty: false });
    expect(t.queriesAnswered).toBe(2);
  });

  it('a malformed ReadyForQuery is reported, never counted', () => {
    const { t } = tracker();
    t.forwarded(MessageType.Query);
    expect(t.ready(Buffer.from([0x5a, 0, 0, 0, 5, 0x51]))).toBe('malformed');
    expect(t.running).toBe(true);
  });

  it('attached(dirty) carries session pooling into every release', () => {
    const t = new TransactionTracker(() => undefined);
    t.attached(true);
    expect(t.releaseFacts(false)).toEqual({ status: 'I', busy: false, dirty: true });
    expect(t.releaseFacts(true).busy).toBe(true); // more answers owed elsewhere (the statement router)
  });

  it('any sequence of requests, all answered, ends settled with the timers balanced', () => {
    const step = fc.constantFrom(MessageType.Query, MessageType.Sync, MessageType.FunctionCall, MessageType.Parse, MessageType.Bind, MessageType.Execute);
    fc.assert(
      fc.property(fc.array(step, { maxLength: 30 }), fc.constantFrom<TransactionStatus>('I', 'T', 'E'), (steps, last) => {
        const { t, timers } = tracker();
        let owed = 0;
        let open = false; // extended messages since the last Sync
        for (const s of steps) {
          t.forwarded(s);
          if (s === MessageType.Query || s === MessageType.Sync || s === MessageType.FunctionCall) owed++;
          if (s === MessageType.Sync) open = false;
          else if (s !== MessageType.Query && s !== MessageType.FunctionCall) open = true;
        }
        if (open) {
          t.forwarded(MessageType.Sync); // a client ends its sequence with a Sync
          owed++;
        }
        for (let i = 0; i < owed; i++) expect(t.ready(ready(i === owed - 1 ? last : 'T'))).toBe(i === owed - 1 ? 'settled' : 'pending');
        expect(t.running).toBe(false);
        expect(t.releaseFacts(false)).toEqual({ status: owed === 0 ? 'I' : last, busy: false, dirty: false });
        expect(t.queriesAnswered).toBe(owed);
        expect(timers.filter((x) => x === 'query:on').length).toBe(timers.filter((x) => x === 'query:off').length);
      }),
    );
  });
});
