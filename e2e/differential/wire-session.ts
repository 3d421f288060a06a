// One session at the wire level for the differential test: writes raw frontend frames
// (@quicpool/wire's encoder) on any Duplex (a TCP socket to Postgres or to the pooler, a QUIC
// session stream) and records what the server sends as one token per message: its type and what
// a client acts on (SQLSTATE and severity, tags, rows, transaction status), and the close. Only
// the documented differences are left out of a token (see differences.ts): BackendKeyData values
// and the process id of a NotificationResponse.
import { createHash } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { BackendDecoder, encodeFrontend, PROTOCOL_3_0 } from '@quicpool/wire';
import type { BackendMessage, FrontendMessage } from '@quicpool/wire';

/** How long any one wait of a script may take before the script fails (it never passes by waiting). */
const WAIT_LIMIT_MS = 10_000;

/** A value as text; long ones (large rows) by their length and digest, to keep diffs readable. */
const text = (b: Buffer | null): string => {
  if (b === null) return 'NULL';
  if (b.length <= 200) return b.toString('utf8');
  return `<${b.length} bytes, sha256 ${createHash('sha256').update(b).digest('hex').slice(0, 16)}>`;
};

/** The token of one server message. `maskRows`: DataRow values vary (a process id) and are not compared. */
export function token(m: BackendMessage, maskRows: boolean): string {
  switch (m.type) {
    case 'AuthenticationOk':
    case 'AuthenticationKerberosV5':
    case 'AuthenticationCleartextPassword':
    case 'AuthenticationMD5Password':
    case 'AuthenticationGSS':
    case 'AuthenticationGSSContinue':
    case 'AuthenticationSSPI':
    case 'AuthenticationSASL':
    case 'AuthenticationSASLContinue':
    case 'AuthenticationSASLFinal':
    case 'BindComplete':
    case 'CloseComplete':
    case 'EmptyQueryResponse':
    case 'NoData':
    case 'ParseComplete':
    case 'PortalSuspended':
    case 'BackendKeyData':
    case 'CopyDone':
      return m.type;
    case 'ParameterStatus':
      return `ParameterStatus ${m.name}=${m.value}`;
    case 'ReadyForQuery':
      return `ReadyForQuery ${m.status}`;
    case 'CommandComplete':
      return `CommandComplete ${m.tag}`;
    case 'ErrorResponse':
    case 'NoticeResponse':
      return `${m.type} ${m.fields['V'] ?? m.fields['S'] ?? '?'} ${m.fields['C'] ?? '?'} ${m.fields['M'] ?? ''}`;
    case 'RowDescription':
      return `RowDescription ${m.fields.map((f) => `${f.name}:${f.dataTypeOid}:${f.format}`).join(',')}`;
    case 'DataRow':
      return maskRows ? `DataRow[${m.values.length}]` : `DataRow ${m.values.map(text).join('|')}`;
    case 'CopyInResponse':
    case 'CopyOutResponse':
    case 'CopyBothResponse':
      return `${m.type} ${m.format}/${m.columnFormats.join(',')}`;
    case 'CopyData':
      return `CopyData ${text(m.data)}`;
    case 'NotificationResponse':
      return `NotificationResponse ${m.channel}:${m.payload}`;
    case 'ParameterDescription':
      return `ParameterDescription ${m.parameterTypes.join(',')}`;
    case 'FunctionCallResponse':
      return `FunctionCallResponse ${text(m.result)}`;
    case 'NegotiateProtocolVersion':
      return `NegotiateProtocolVersion ${m.newestProtocolVersion} ${m.unrecognizedOptions.join(',')}`;
    default: {
      const never: never = m;
      throw new Error(`unknown backend message ${JSON.stringify(never)}`);
    }
  }
}

export class WireSession {
  /** What the client received, one token per message, then `close`. */
  readonly tokens: string[] = [];
  /** The startup's ParameterStatus tokens, sorted into `tokens` at its ReadyForQuery (see differences.ts). */
  private startupParameters: string[] = [];
  private inStartup = false;
  private readonly decoder = new BackendDecoder();
  private wake: Array<() => void> = [];
  private maskRows = false;
  private lastRow: (Buffer | null)[] | null = null;
  closed = false;
  ready = 0;
  processId = 0;
  secretKey: Buffer = Buffer.alloc(0);

  constructor(
    readonly label: string,
    private readonly stream: Duplex,
  ) {
    stream.on('data', (chunk: Buffer) => {
      this.decoder.push(chunk);
      for (let m = this.decoder.next(); m !== undefined; m = this.decoder.next()) this.receive(m);
      this.notify();
    });
    // A socket ends its side when the peer ends (allowHalfOpen false); a QUIC stream is told to.
    stream.on('end', () => {
      this.finish();
      if (!stream.writableEnded) stream.end();
    });
    stream.on('error', () => this.finish());
    stream.on('close', () => this.finish());
  }

  private receive(m: BackendMessage): void {
    if (m.type === 'BackendKeyData') {
      this.processId = m.processId;
      this.secretKey = m.secretKey;
    }
    if (m.type === 'DataRow') this.lastRow = [...m.values];
    if (this.inStartup && m.type === 'ParameterStatus') {
      this.startupParameters.push(token(m, false));
      return;
    }
    if (this.inStartup && (m.type === 'ReadyForQuery' || m.type === 'ErrorResponse')) this.endStartup();
    if (m.type === 'ReadyForQuery') this.ready++;
    this.tokens.push(token(m, this.maskRows));
  }

  private endStartup(): void {
    this.inStartup = false;
    this.tokens.push(...this.startupParameters.sort());
    this.startupParameters = [];
  }

  private finish(): void {
    if (this.closed) return;
    if (this.inStartup) this.endStartup();
    this.closed = true;
    this.tokens.push('close');
    this.notify();
  }

  private notify(): void {
    const w = this.wake;
    this.wake = [];
    for (const f of w) f();
  }

  /** Writes the frames as one write (a pipeline). Nothing is written once the session is closed. */
  send(...messages: FrontendMessage[]): void {
    if (this.closed) return;
    this.stream.write(Buffer.concat(messages.map((m) => encodeFrontend(m))));
  }

  /** Writes raw bytes as they are. */
  sendBytes(bytes: Buffer): void {
    if (!this.closed) this.stream.write(bytes);
  }

  /** Ends the client's side (FIN), as a client that hangs up. */
  hangUp(): void {
    if (!this.stream.writableEnded) this.stream.end();
  }

  /** Waits until `done()` holds (or the session closed); fails the script after WAIT_LIMIT_MS. */
  async until(done: () => boolean, what: string): Promise<void> {
    const deadline = Date.now() + WAIT_LIMIT_MS;
    while (!done() && !this.closed) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`${this.label}: no ${what} within ${WAIT_LIMIT_MS} ms; received ${JSON.stringify(this.tokens.map((t) => (t.length > 300 ? `${t.slice(0, 300)}...` : t)))}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.wake.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** Waits for `n` more ReadyForQuery (or the close). */
  async readies(n: number): Promise<void> {
    const want = this.ready + n;
    await this.until(() => this.ready >= want, `${n} ReadyForQuery`);
  }

  /** Waits for the close. */
  async closing(): Promise<void> {
    await this.until(() => false, 'close');
  }

  /** Sends a StartupMessage and waits for its end (ReadyForQuery, or an error and the close). */
  async startup(parameters: Record<string, string>): Promise<void> {
    this.inStartup = true;
    this.send({ type: 'StartupMessage', protocolVersion: PROTOCOL_3_0, parameters });
    await this.readies(1);
  }

  /** A simple Query, waiting for its ReadyForQuery. */
  async query(sql: string): Promise<void> {
    this.send({ type: 'Query', query: sql });
    await this.readies(1);
  }

  /** A simple Query whose rows vary between runs (process ids): its DataRows are recorded masked. */
  async value(sql: string): Promise<string> {
    this.maskRows = true;
    this.lastRow = null;
    try {
      await this.query(sql);
    } finally {
      this.maskRows = false;
    }
    const v = this.firstValue();
    if (v === null || v === undefined) throw new Error(`${this.label}: ${sql} returned no value; received ${JSON.stringify(this.tokens)}`);
    return v.toString('utf8');
  }

  /** The value of a DataRow that was flushed (Execute, Flush), recorded masked. */
  async flushedValue(): Promise<string> {
    const at = this.tokens.length;
    await this.until(() => this.tokens.slice(at).some((t) => t.startsWith('DataRow')), 'flushed DataRow');
    const i = this.tokens.findIndex((t, j) => j >= at && t.startsWith('DataRow'));
    if (i < 0) throw new Error(`${this.label}: no DataRow flushed; received ${JSON.stringify(this.tokens)}`);
    this.tokens[i] = 'DataRow[1]';
    const v = this.firstValue();
    if (v === null || v === undefined) throw new Error(`${this.label}: an empty DataRow`);
    return v.toString('utf8');
  }

  private firstValue(): Buffer | null | undefined {
    return this.lastRow?.[0];
  }

  /** Sends Terminate and waits for the close (the end of every script's sessions). */
  async terminate(): Promise<void> {
    this.send({ type: 'Terminate' });
    this.hangUp();
    await this.closing();
  }

  destroy(): void {
    this.stream.destroy();
  }
}
