// Which StartupMessage parameters a pooled session accepts. A backend is shared, so a parameter
// can only be honoured if the pooler can re-apply it on whatever backend the client gets next
// (the "tracked" ones, re-applied with SET at attach), or if it may be ignored.
import { SQLSTATE } from '@quicpool/wire';
import type { SqlState } from '@quicpool/wire';

/**
 * Parameters kept per client and re-applied (SET) on each backend it is given, when the backend's
 * value differs. The server reports most of the first group (ParameterStatus), which is how the
 * pooler knows a backend's current value and sees a client change one with SET. The others (and
 * search_path before PostgreSQL 18) are not reported: the pooler knows their value on a backend
 * from what it SET there itself (a client's SQL SET of them is session state: see
 * session-state-change.ts). idle_session_timeout is not among them on purpose: applied to a
 * pooled backend it would end the backend while it sits idle in the pool.
 */
export const TRACKED_PARAMETERS: ReadonlySet<string> = new Set([
  'application_name',
  'client_encoding',
  'DateStyle',
  'IntervalStyle',
  'TimeZone',
  'search_path',
  'standard_conforming_strings',
  'statement_timeout',
  'lock_timeout',
  'idle_in_transaction_session_timeout',
  'default_transaction_isolation',
  'default_transaction_read_only',
]);

// Startup names are case-sensitive on the wire but Postgres GUC names are not.
const CANONICAL = new Map([...TRACKED_PARAMETERS].map((n) => [n.toLowerCase(), n]));

export function canonicalTrackedName(name: string): string | undefined {
  return CANONICAL.get(name.toLowerCase());
}

export type StartupCheck =
  | { readonly ok: true; readonly user: string; readonly database: string; readonly tracked: Map<string, string> }
  | { readonly ok: false; readonly sqlstate: SqlState; readonly message: string };

/** What a refused startup parameter's message calls the ignore list (the daemon passes its config key). */
export const DEFAULT_IGNORE_KEY = 'ignoreStartupParameters';

/**
 * The settings in a startup `options` value, as the server reads it: words separated by
 * whitespace (a backslash keeps the next character, e.g. an escaped space), each `-c name=value`,
 * `-cname=value` or `--name=value` (dashes in the name become underscores). Anything else (a
 * command-line switch such as `-d 5`) gives null.
 */
export function parseOptions(options: string): Map<string, string> | null {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  for (let i = 0; i < options.length; i++) {
    const c = options[i]!;
    if (c === '\\' && i + 1 < options.length) {
      word += options[++i]!;
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  const settings = new Map<string, string>();
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    let setting: string | undefined;
    if (w === '-c') setting = words[++i];
    else if (w.startsWith('--')) setting = w.slice(2);
    else if (w.startsWith('-c')) setting = w.slice(2);
    const eq = setting?.indexOf('=') ?? -1;
    if (setting === undefined || eq <= 0) return null;
    settings.set(setting.slice(0, eq).replaceAll('-', '_'), setting.slice(eq + 1));
  }
  return settings;
}

const unsupported = (what: string, ignoreKey: string): StartupCheck => ({
  ok: false,
  sqlstate: SQLSTATE.FEATURE_NOT_SUPPORTED,
  message: `unsupported startup parameter: ${what} (the pooler cannot keep it per client; add it to ${ignoreKey} to have the pooler ignore it)`,
});

export function checkStartupParameters(parameters: Readonly<Record<string, string>>, ignorable: ReadonlySet<string>, ignoreKey = DEFAULT_IGNORE_KEY): StartupCheck {
  const user = parameters['user'];
  if (user === undefined || user === '') {
    return { ok: false, sqlstate: SQLSTATE.INVALID_AUTHORIZATION_SPECIFICATION, message: 'no PostgreSQL user name specified in startup packet' };
  }
  const database = parameters['database'] || user;
  const tracked = new Map<string, string>();
  const fromOptions = new Map<string, string>();
  for (const [name, value] of Object.entries(parameters)) {
    if (name === 'user' || name === 'database') continue;
    if (name.startsWith('_pq_.')) continue; // protocol options: answered by NegotiateProtocolVersion
    if (name === 'fallback_application_name') {
      if (!('application_name' in parameters)) tracked.set('application_name', value);
      continue;
    }
    if (name === 'replication') {
      return { ok: false, sqlstate: SQLSTATE.FEATURE_NOT_SUPPORTED, message: 'replication connections are not supported by the pooler' };
    }
    const canonical = canonicalTrackedName(name);
    if (canonical !== undefined) {
      tracked.set(canonical, value);
      continue;
    }
    if (ignorable.has(name)) continue;
    if (name === 'options') {
      const settings = parseOptions(value);
      if (settings === null) return unsupported(`options "${value}" (only -c name=value and --name=value are understood)`, ignoreKey);
      for (const [n, v] of settings) {
        const c = canonicalTrackedName(n);
        if (c !== undefined) fromOptions.set(c, v);
        else if (!ignorable.has(n)) return unsupported(`${n} (in options)`, ignoreKey);
      }
      continue;
    }
    return unsupported(name, ignoreKey);
  }
  // As in Postgres, a parameter given by itself wins over the same one in options.
  for (const [n, v] of fromOptions) if (!tracked.has(n)) tracked.set(n, v);
  return { ok: true, user, database, tracked };
}

/**
 * One simple Query that gives a backend the client's values: `set_config(name, value, false)` for
 * each (it takes the value as the server takes a startup parameter, so a list such as search_path
 * `a,b` stays a list), `RESET name` for null; values dollar-quoted (no escaping rules). The names
 * are TRACKED_PARAMETERS only.
 */
export function setStatements(changes: ReadonlyMap<string, string | null>): string {
  const sets: string[] = [];
  let resets = '';
  for (const [name, value] of changes) {
    if (value === null) {
      resets += `RESET "${name}";`;
      continue;
    }
    // The value must not hold the tag, nor end in its start (a value `$q` would close at `$q$q$`).
    let tag = '$q$';
    for (let i = 0; (value + tag).indexOf(tag) !== value.length; i++) tag = `$q${i}$`;
    sets.push(`pg_catalog.set_config('${name}', ${tag}${value}${tag}, false)`);
  }
  return (sets.length > 0 ? `SELECT ${sets.join(', ')};` : '') + resets;
}
