// Invariants of the session state machine under random event sequences (fast-check):
// a backend is used only while attached, given back exactly once (released or lost), never
// requested twice at a time, and a closed session does nothing more.
import fc from 'fast-check';
import { ServerSessionState } from '../backend/session-state.js';
import { describe, expect, it } from 'vitest';
import { ClientSession } from './client-session.js';
import type { SessionEvent } from './types.js';
import { raw, rawBackend, testContext } from '../../test/support/session-helpers.js';

const PARAMS = new Map([['client_encoding', 'UTF8']]);

type Step =
  | 'query' | 'begin' | 'parse' | 'sync' | 'flush' | 'terminate'
  | 'attach' | 'data' | 'readyI' | 'readyT' | 'readyE' | 'paramStatus'
  | 'lost' | 'unavailable' | 'clientClosed' | 'idleTimeout' | 'txTimeout' | 'shutdownGraceful' | 'shutdownNow';

const steps: Step[] = [
  'query', 'begin', 'parse', 'sync', 'flush', 'terminate', 'attach', 'data', 'readyI', 'readyT', 'readyE', 'paramStatus',
  'lost', 'unavailable', 'clientClosed', 'idleTimeout', 'txTimeout', 'shutdownGraceful', 'shutdownNow',
];

function event(step: Step): SessionEvent {
  switch (step) {
    case 'query': return { type: 'clientMessage', message: raw({ type: 'Query', query: 'select 1' }) };
    case 'begin': return { type: 'clientMessage', message: raw({ type: 'Query', query: 'begin' }) };
    case 'parse': return { type: 'clientMessage', message: raw({ type: 'Parse', name: '', query: 'select $1', parameterTypes: [] }) };
    case 'sync': return { type: 'clientMessage', message: raw({ type: 'Sync' }) };
    case 'flush': return { type: 'clientMessage', message: raw({ type: 'Flush' }) };
    case 'terminate': return { type: 'clientMessage', message: raw({ type: 'Terminate' }) };
    case 'attach': return { type: 'backendAttached', backend: { parameters: PARAMS, parametersVersion: 0, sessionState: new ServerSessionState() } };
    case 'data': return { type: 'backendMessage', message: rawBackend({ type: 'CommandComplete', tag: 'SELECT 1' }) };
    case 'readyI': return { type: 'backendMessage', message: rawBackend({ type: 'ReadyForQuery', status: 'I' }) };
    case 'readyT': return { type: 'backendMessage', message: rawBackend({ type: 'ReadyForQuery', status: 'T' }) };
    case 'readyE': return { type: 'backendMessage', message: rawBackend({ type: 'ReadyForQuery', status: 'E' }) };
    case 'paramStatus': return { type: 'backendMessage', message: rawBackend({ type: 'ParameterStatus', name: 'TimeZone', value: 'UTC' }) };
    case 'lost': return { type: 'backendLost', reason: 'test' };
    case 'unavailable': return { type: 'backendUnavailable', error: { bytes: Buffer.from('E'), sqlstate: '08006', message: 'test' } };
    case 'clientClosed': return { type: 'clientClosed' };
    case 'idleTimeout': return { type: 'timeout', timer: 'clientIdle' };
    case 'txTimeout': return { type: 'timeout', timer: 'idleInTransaction' };
    case 'shutdownGraceful': return { type: 'shutdown', graceful: true };
    case 'shutdownNow': return { type: 'shutdown', graceful: false };
  }
}

describe('ClientSession invariants', () => {
  it.each(['transaction', 'session'] as const)('hold for random event sequences (%s mode)', (poolMode) => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...steps), { maxLength: 60 }), (seq) => {
        const s = new ClientSession(testContext({ poolMode }));
        s.handle({ type: 'startupPacket', packet: { type: 'StartupMessage', protocolVersion: 196608, parameters: { user: 'alice' } } });
        s.handle({ type: 'serverParameters', parameters: PARAMS, cancelKey: { processId: 1, secretKey: Buffer.alloc(4) } });
        // The model of the driver/pool side.
        let requested = false;
        let attached = false;
        let attaches = 0;
        let givenBack = 0;
        let closed = false;
        const feed = (e: SessionEvent): void => {
          // The driver only delivers what the world can produce.
          if (e.type === 'backendAttached') {
            if (!requested) return;
            requested = false;
            attached = true;
            attaches++;
          }
          if ((e.type === 'backendMessage' || e.type === 'backendLost') && !attached) return;
          if (e.type === 'backendUnavailable' && !requested) return;
          if (e.type === 'backendLost') {
            attached = false;
            givenBack++;
          }
          if (e.type === 'backendUnavailable') requested = false;
          const actions = s.handle(e);
          if (closed) expect(actions).toEqual([]);
          for (const a of actions) {
            switch (a.type) {
              case 'requestBackend':
                expect(requested || attached).toBe(false);
                requested = true;
                break;
              case 'withdrawRequest':
                expect(requested).toBe(true);
                requested = false;
                break;
              case 'sendToBackend':
                expect(attached).toBe(true);
                break;
              case 'releaseBackend':
                expect(attached).toBe(true);
                attached = false;
                givenBack++;
                break;
              case 'close':
                closed = true;
                break;
              default:
                break;
            }
          }
        };
        for (const step of seq) feed(event(step));
        feed({ type: 'clientClosed' });
        // After a Terminate, requests still unanswered are answered first (as Postgres does): the
        // session ends when its backend answers, is lost, or cannot be had.
        if (!closed && attached) feed(event('lost'));
        if (!closed && requested) feed(event('unavailable'));
        expect(closed).toBe(true);
        expect(attached).toBe(false);
        expect(requested).toBe(false);
        expect(givenBack).toBe(attaches);
      }),
      { numRuns: 500 },
    );
  });
});
