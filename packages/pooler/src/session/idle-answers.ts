// Transaction pooling, no backend attached: a Sync group made only of Parse messages for
// statements the pool already knows (PreparedRegistry: a backend of the pool accepted the same
// text, parameter types and search_path) and Describe messages for statements whose description
// it has is answered by the pooler itself: ParseComplete, ParameterDescription and RowDescription
// (or NoData), then ReadyForQuery with the session's transaction status. PQprepare and
// PQdescribePrepared (pgbench -M prepared prepares synchronously, per client) then need no
// backend, so a client thread blocked in one of them cannot wait for a backend that a sibling
// client of the same thread holds. Nothing is answered before the Sync: any other message (Bind,
// Execute, Flush, a statement not known ...) hands the whole group back, to go to a backend as
// usual, so the client sees either all answers from the pooler or all from a backend.
import { encodeBackend, MessageType } from '@quicpool/wire';
import type { TransactionStatus } from '@quicpool/wire';
import type { HeldMessages } from './held-messages.js';
import { mayChangeSessionState } from './session-state-change.js';
import type { ClientStatement, StatementRouter } from '../prepared/statement-router.js';
import { PARSE_COMPLETE, parseName, poolerName, renameParse, statementTarget } from '../prepared/wire-names.js';

/** A group longer than this goes to a backend (what is collected here stays bounded). */
const MAX_GROUP = 64;

const READY: Readonly<Record<TransactionStatus, Buffer>> = {
  I: encodeBackend({ type: 'ReadyForQuery', status: 'I' }),
  T: encodeBackend({ type: 'ReadyForQuery', status: 'T' }),
  E: encodeBackend({ type: 'ReadyForQuery', status: 'E' }),
};

export type Offer =
  /** Kept: part of a group the pooler may answer. */
  | 'taken'
  /** A Sync ended a group the pooler answered (the answers were sent). */
  | 'answered'
  /** Needs a backend: the group's earlier messages were handed to `held`; this one follows them. */
  | 'refused';

export class IdleAnswers {
  /** The client's messages of the group so far, as received. */
  private group: Buffer[] = [];
  private answers: Buffer[] = [];
  private adopted: [string, ClientStatement][] = [];

  constructor(
    private readonly router: StatementRouter,
    private readonly send: (bytes: Buffer) => void,
  ) {}

  /** No group is being collected. */
  get empty(): boolean {
    return this.group.length === 0;
  }

  /** A client message while no backend is attached; `scope` is the client's search_path. */
  offer(type: number, bytes: Buffer, scope: string, status: TransactionStatus, held: HeldMessages): Offer {
    if (type === MessageType.Sync) {
      for (const [name, stmt] of this.adopted) this.router.adopt(name, stmt);
      for (const a of this.answers) this.send(a);
      this.send(READY[status]);
      this.reset();
      return 'answered';
    }
    const answered = this.group.length < MAX_GROUP && (type === MessageType.Parse ? this.parse(bytes, scope) : type === MessageType.Describe && this.describe(bytes));
    if (answered) {
      this.group.push(bytes);
      return 'taken';
    }
    // The messages taken so far go to a backend, in order; nothing was answered.
    if (this.group.length > 0) {
      for (const earlier of this.group) held.hold(earlier);
      this.reset();
    }
    return 'refused';
  }

  private reset(): void {
    if (this.group.length > 0) this.group = [];
    if (this.answers.length > 0) this.answers = [];
    if (this.adopted.length > 0) this.adopted = [];
  }

  private parse(bytes: Buffer, scope: string): boolean {
    const registry = this.router.registry;
    if (registry === null) return false;
    const { name, restStart } = parseName(bytes);
    // Unnamed statements live on one backend; an existing name is Postgres's 42P05 to give; and the
    // session-state policy decides about statements that leave state (it runs when they are forwarded).
    if (name === '' || this.router.statement(name) !== undefined || this.adoptedNamed(name) !== undefined) return false;
    if (mayChangeSessionState(MessageType.Parse, bytes)) return false;
    const pooler = poolerName(bytes.subarray(restStart), scope);
    if (!registry.has(pooler)) return false;
    this.adopted.push([name, { pooler, parse: renameParse(bytes, restStart, pooler) }]);
    this.answers.push(PARSE_COMPLETE);
    return true;
  }

  private describe(bytes: Buffer): boolean {
    const name = statementTarget(bytes);
    if (name === undefined || name === '') return false;
    const stmt = this.adoptedNamed(name) ?? this.router.statement(name);
    const d = stmt === undefined ? undefined : this.router.registry?.description(stmt.pooler);
    if (d === undefined) return false;
    this.answers.push(d.parameters, d.result);
    return true;
  }

  private adoptedNamed(name: string): ClientStatement | undefined {
    for (const [n, stmt] of this.adopted) if (n === name) return stmt;
    return undefined;
  }
}
