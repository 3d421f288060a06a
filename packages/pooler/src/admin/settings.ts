// The settings statements a session sends before its first command: the pooler replays a client's
// startup parameters (application_name from psql, options=-c...) as
// `SELECT pg_catalog.set_config('name', $q$value$q$, false), ...;RESET "name";...`, and drivers
// send `SET name = value` or `SET name TO value`. The admin console has no settings to change,
// so it answers them as a server would (the value, or the command tag) and remembers the values
// for ParameterStatus; nothing is run. Anything else is not a settings query (null).

export type SettingStatement =
  | { readonly kind: 'set_config'; readonly values: readonly (readonly [name: string, value: string])[] }
  | { readonly kind: 'set'; readonly name: string; readonly value: string | null }
  | { readonly kind: 'reset'; readonly name: string | null };

/** The longest query looked at (the pooler's replay of every tracked parameter fits easily). */
const MAX_QUERY = 64 * 1024;

class Scanner {
  i = 0;
  constructor(private readonly s: string) {}

  skipSpace(): void {
    while (this.i < this.s.length && /\s/.test(this.s[this.i]!)) this.i++;
  }

  done(): boolean {
    this.skipSpace();
    return this.i >= this.s.length;
  }

  /** Consumes `word` (case-insensitive, a whole word or punctuation) when it comes next. */
  eat(word: string): boolean {
    this.skipSpace();
    const end = this.i + word.length;
    if (this.s.slice(this.i, end).toLowerCase() !== word.toLowerCase()) return false;
    if (/\w$/.test(word) && end < this.s.length && /[\w$]/.test(this.s[end]!)) return false;
    this.i = end;
    return true;
  }

  /** A name: plain (folded to lower case) or double-quoted; dotted names are kept whole (a.b). */
  name(): string | null {
    this.skipSpace();
    let out = '';
    for (;;) {
      if (this.s[this.i] === '"') {
        const close = this.s.indexOf('"', this.i + 1);
        if (close < 0) return null;
        out += this.s.slice(this.i + 1, close);
        this.i = close + 1;
      } else {
        const m = /^[A-Za-z_][\w$]*/.exec(this.s.slice(this.i));
        if (m === null) return null;
        out += m[0].toLowerCase();
        this.i += m[0].length;
      }
      if (this.s[this.i] !== '.') return out;
      out += '.';
      this.i++;
    }
  }

  /** A string constant: '...' (with '' for a quote) or $tag$...$tag$. */
  literal(): string | null {
    this.skipSpace();
    if (this.s[this.i] === "'") {
      let out = '';
      for (let j = this.i + 1; j < this.s.length; j++) {
        if (this.s[j] !== "'") {
          out += this.s[j];
        } else if (this.s[j + 1] === "'") {
          out += "'";
          j++;
        } else {
          this.i = j + 1;
          return out;
        }
      }
      return null;
    }
    const tag = /^\$(?:[A-Za-z_]\w*)?\$/.exec(this.s.slice(this.i));
    if (tag === null) return null;
    const start = this.i + tag[0].length;
    const close = this.s.indexOf(tag[0], start);
    if (close < 0) return null;
    this.i = close + tag[0].length;
    return this.s.slice(start, close);
  }

  /** A SET value: a literal, a number or a word, possibly several separated by commas (a list). */
  setValue(): string | null {
    const parts: string[] = [];
    do {
      this.skipSpace();
      const number = /^[-+]?\d+(?:\.\d+)?/.exec(this.s.slice(this.i));
      let v: string | null;
      if (number !== null) {
        this.i += number[0].length;
        v = number[0];
      } else {
        v = this.literal() ?? this.name();
      }
      if (v === null) return null;
      parts.push(v);
    } while (this.eat(','));
    return parts.join(', ');
  }
}

function setConfig(s: Scanner): SettingStatement | null {
  const values: (readonly [string, string])[] = [];
  do {
    if (!(s.eat('pg_catalog.set_config') || s.eat('set_config')) || !s.eat('(')) return null;
    const name = s.literal();
    if (name === null || !s.eat(',')) return null;
    const value = s.literal();
    if (value === null || !s.eat(',') || !(s.eat('false') || s.eat('true')) || !s.eat(')')) return null;
    values.push([name, value]);
  } while (s.eat(','));
  return { kind: 'set_config', values };
}

function statement(s: Scanner): SettingStatement | null {
  if (s.eat('select')) return setConfig(s);
  if (s.eat('reset')) {
    if (s.eat('all')) return { kind: 'reset', name: null };
    const name = s.name();
    return name === null ? null : { kind: 'reset', name };
  }
  if (s.eat('set')) {
    if (!s.eat('session')) s.eat('local');
    const name = s.name();
    if (name === null || !(s.eat('to') || s.eat('='))) return null;
    if (s.eat('default')) return { kind: 'set', name, value: null };
    const value = s.setValue();
    return value === null ? null : { kind: 'set', name, value };
  }
  return null;
}

/** The statements of `query` when every one of them is a settings statement; else null. */
export function parseSettings(query: string): SettingStatement[] | null {
  if (query.length > MAX_QUERY) return null;
  const s = new Scanner(query);
  const out: SettingStatement[] = [];
  while (!s.done()) {
    const st = statement(s);
    if (st === null) return null;
    out.push(st);
    if (!s.eat(';') && !s.done()) return null;
  }
  return out.length > 0 ? out : null;
}
