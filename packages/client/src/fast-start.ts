// Fast first query for pg clients on QUIC session streams. pg waits for the startup's
// ReadyForQuery before it sends any query, so a new session costs one round trip for the startup
// and one more for its first query. The quicpool pooler reads what follows the client's last
// authentication message (the StartupMessage itself under trust, else the password or the final
// SCRAM message) as the session's first requests and queues them until the session is ready, so
// the client may send its first query right behind that message: we hand pg a ReadyForQuery of
// our own at that point and drop the server's one for the startup when it arrives. The query then
// travels in the same flight as the client's last login message.
//
// Under trust, the StartupMessage is the last login message only if the pooler does not ask for a
// password, which the client cannot know before the first session: StartupHints remembers, per
// (user, database), that the pooler answered the StartupMessage with AuthenticationOk at once.
// If the pooler asks for a password after all (its configuration changed), the pipelined query
// fails with the pooler's protocol-violation error and the hint is forgotten.
//
// By default not in 0-RTT early data: a query could be replayed by anyone who recorded the first
// flight. On a connection still in its handshake the early ReadyForQuery waits for the handshake
// to complete, so only the StartupMessage rides in the 0-RTT flight and the query leaves with the
// client's handshake Finished. With `fastStart: 'early-data'` the query rides in 0-RTT too: a
// quicpool pooler never lets anything from early data change data before the handshake is
// confirmed (it waits; with `earlyData = "read-only"` it answers a single read-only query at once
// inside a READ ONLY transaction), so a replay cannot write; see docs/security.md for what a
// replay can still cause, and never use it against a server without that policy.
import type { QuicSessionStream } from '@quicpool/transport';

/** Remembers which (user, database) logins the pooler accepted without asking for a password. */
export class StartupHints {
  private readonly noPassword = new Set<string>();

  static key(user: string, database: string): string {
    return `${user}\u0000${database}`;
  }

  /** The pooler answered this login's StartupMessage with AuthenticationOk at once. */
  needsNoPassword(key: string): boolean {
    return this.noPassword.has(key);
  }

  learn(key: string, noPassword: boolean): void {
    if (noPassword) this.noPassword.add(key);
    else this.noPassword.delete(key);
  }

  get size(): number {
    return this.noPassword.size;
  }
}

/** `true`: pipelined after the handshake; 'early-data': in 0-RTT too; `false`: off. */
export type FastStartMode = boolean | 'early-data';

/** The parts of pg's Connection (pg 8.x) this module relies on. */
export interface PgConnectionInternals {
  emit(event: string | symbol, ...args: unknown[]): boolean;
  startup(config: unknown): void;
  password(password: string): void;
  sendSCRAMClientFinalMessage(data: string): void;
}

type Phase =
  /** Logging in; the server's messages go to pg unchanged. */
  | { kind: 'login'; askedForPassword: boolean }
  /** pg has our ReadyForQuery; the server's startup ReadyForQuery is still to be dropped. */
  | { kind: 'earlyReady' }
  | { kind: 'done' };

const AUTH_REQUESTS = new Set(['authenticationCleartextPassword', 'authenticationMD5Password', 'authenticationSASL']);

/**
 * Installs the pipelined startup on a pg Connection before pg connects over `stream`. `onSettled`
 * runs once the startup is over either way (for counters).
 */
export function pipelineStartup(
  con: PgConnectionInternals,
  stream: QuicSessionStream,
  hints: StartupHints,
  key: string,
  onSettled: (pipelined: boolean) => void = () => undefined,
  inEarlyData = false,
): void {
  let phase: Phase = { kind: 'login', askedForPassword: false };
  const emit = con.emit.bind(con);
  const startup = con.startup.bind(con);
  const password = con.password.bind(con);
  const scramFinal = con.sendSCRAMClientFinalMessage.bind(con);

  const restore = (pipelined: boolean): void => {
    phase = { kind: 'done' };
    // Instance properties shadowing the prototype's methods: deleting them restores pg's own.
    const own = con as unknown as Record<string, unknown>;
    delete own['emit'];
    delete own['startup'];
    delete own['password'];
    delete own['sendSCRAMClientFinalMessage'];
    onSettled(pipelined);
  };

  /** After the client's last login message: let pg send its first query right behind it. */
  const goEarly = (): void => {
    const ready = (): void => {
      if (phase.kind !== 'login' || stream.destroyed) return;
      phase = { kind: 'earlyReady' };
      emit('readyForQuery', { name: 'readyForQuery', length: 5, status: 'I' });
    };
    // pg is still inside its own handler; answer on the next tick, as a socket would.
    if (stream.isHandshakeConfirmed || inEarlyData) process.nextTick(ready);
    else stream.handshakeConfirmed().then(ready, () => undefined);
  };

  const self = con as unknown as Record<string, unknown>;
  self['startup'] = (config: unknown): void => {
    startup(config);
    if (hints.needsNoPassword(key)) goEarly();
  };
  self['password'] = (pw: string): void => {
    password(pw);
    goEarly();
  };
  self['sendSCRAMClientFinalMessage'] = (data: string): void => {
    scramFinal(data);
    goEarly();
  };
  self['emit'] = (event: string | symbol, ...args: unknown[]): boolean => {
    if (phase.kind === 'login') {
      if (typeof event === 'string' && AUTH_REQUESTS.has(event)) {
        phase = { kind: 'login', askedForPassword: true };
        hints.learn(key, false);
      } else if (event === 'authenticationOk') {
        hints.learn(key, !phase.askedForPassword);
      } else if (event === 'readyForQuery') {
        restore(false);
      } else if (event === 'errorMessage' || event === 'end' || event === 'error') {
        restore(false);
      }
      return emit(event, ...args);
    }
    if (phase.kind === 'earlyReady') {
      // The pooler asks for a password after all: the pipelined query will fail; forget the hint.
      if (typeof event === 'string' && AUTH_REQUESTS.has(event)) hints.learn(key, false);
      if (event === 'readyForQuery') {
        restore(true);
        return true; // pg already had ours
      }
      if (event === 'errorMessage' || event === 'end' || event === 'error') {
        // The login failed after all (or the stream died): pg reports it on the first query.
        if (event === 'errorMessage') hints.learn(key, false);
        restore(true);
      }
    }
    return emit(event, ...args);
  };
}
