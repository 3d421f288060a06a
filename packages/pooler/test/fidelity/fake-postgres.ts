// A tiny model of what Postgres does with prepared statements in the extended protocol, for
// property tests of the statement router: named statements, ignore-till-Sync after an error,
// Close of a missing statement is no error, DEALLOCATE [ALL] in simple queries, and the unnamed
// statement (dropped by the next unnamed Parse before it is parsed, and by a simple Query).
import { decodeFrontendMessage, encodeBackend, errorResponse } from '@quicpool/wire';

const ok = (tag: string): Buffer => encodeBackend({ type: 'CommandComplete', tag });

export class FakePostgres {
  readonly statements = new Map<string, string>();
  private readonly portals = new Map<string, string>();
  private ignoring = false;

  /** One frontend message in, the backend messages it produces out. */
  receive(bytes: Buffer): Buffer[] {
    const m = decodeFrontendMessage(bytes);
    if (this.ignoring && m.type !== 'Sync') return [];
    switch (m.type) {
      case 'Parse':
        if (m.name === '') this.statements.delete('');
        if (m.query === 'bad') return this.error('42601');
        if (m.name !== '' && this.statements.has(m.name)) return this.error('42P05');
        this.statements.set(m.name, m.query);
        return [encodeBackend({ type: 'ParseComplete' })];
      case 'Bind':
        if (!this.statements.has(m.statement)) return this.error('26000');
        this.portals.set(m.portal, this.statements.get(m.statement) ?? '');
        return [encodeBackend({ type: 'BindComplete' })];
      case 'Describe':
        if (m.target === 'S' && !this.statements.has(m.name)) return this.error('26000');
        if (m.target === 'P' && !this.portals.has(m.name)) return this.error('34000');
        return m.target === 'S'
          ? [encodeBackend({ type: 'ParameterDescription', parameterTypes: [] }), encodeBackend({ type: 'NoData' })]
          : [encodeBackend({ type: 'NoData' })];
      case 'Close':
        if (m.target === 'S') this.statements.delete(m.name);
        return [encodeBackend({ type: 'CloseComplete' })];
      case 'Execute': {
        const text = this.portals.get(m.portal);
        if (text === undefined) return this.error('34000');
        if (text === 'boom') return this.error('22012');
        return [ok(`SELECT ${text}`)]; // the tag names the statement's text: running another's shows
      }
      case 'Sync':
        this.ignoring = false;
        this.portals.clear();
        return [encodeBackend({ type: 'ReadyForQuery', status: 'I' })];
      case 'Query': {
        this.statements.delete('');
        const rfq = encodeBackend({ type: 'ReadyForQuery', status: 'I' });
        if (/^deallocate all$/i.test(m.query)) {
          this.statements.clear();
          return [ok('DEALLOCATE ALL'), rfq];
        }
        const d = /^deallocate "?([^"]+)"?$/i.exec(m.query);
        if (d !== null) {
          if (!this.statements.delete(d[1] ?? '')) return [...this.error('26000', false), rfq];
          return [ok('DEALLOCATE'), rfq];
        }
        return [ok('SELECT 1'), rfq];
      }
      default:
        return [];
    }
  }

  private error(code: string, extended = true): Buffer[] {
    if (extended) this.ignoring = true;
    return [errorResponse('ERROR', code, `error ${code}`)];
  }
}
