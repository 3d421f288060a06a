// The session's actions that carry no data (timers armed and disarmed, requests of the pool ...),
// made once: emitting one allocates nothing on the hot path.
import { encodeBackend } from '@quicpool/wire';
import type { SessionAction, SessionTimer } from './types.js';

const timer = (t: SessionTimer, armed: boolean): SessionAction => ({ type: 'timer', timer: t, armed });
export const CLIENT_IDLE_ON = timer('clientIdle', true);
export const CLIENT_IDLE_OFF = timer('clientIdle', false);
export const IDLE_IN_TRANSACTION_ON = timer('idleInTransaction', true);
export const IDLE_IN_TRANSACTION_OFF = timer('idleInTransaction', false);
export const QUERY_ON = timer('query', true);
export const QUERY_OFF = timer('query', false);
export const AUTH_FAILURE_ON = timer('authFailure', true);
export const AUTH_FAILURE_OFF = timer('authFailure', false);
export const AUTHENTICATION_OFF = timer('authentication', false);
export const REQUEST_BACKEND: SessionAction = { type: 'requestBackend' };
export const WITHDRAW_REQUEST: SessionAction = { type: 'withdrawRequest' };
export const LOGGED_IN: SessionAction = { type: 'loggedIn' };
export const CLOSE: SessionAction = { type: 'close' };
export const END_BACKEND: SessionAction = { type: 'endBackend' };
/** ReadyForQuery, idle: the end of the greeting. */
export const READY_IDLE = encodeBackend({ type: 'ReadyForQuery', status: 'I' });
