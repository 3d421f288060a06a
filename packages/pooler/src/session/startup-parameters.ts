// Which StartupMessage parameters a pooled session accepts. A backend is shared, so a parameter
// can only be honoured if the pooler can re-apply it on whatever backend the client gets next
// (the "tracked" ones, re-applied with SET at attach), or if it may be ignored.
import { SQLSTATE } from '@quicpool/wire';
import type { SqlState } from '@quicpool/wire';

/**
 * Parameters kept per client and re-applied (SET) on each backend it is given, when the backend's
 * value differs. The server reports most of them (ParameterStatus), which is how the pooler knows
 * a backend's current value and sees a client change one with SET.
 */
export const TRACKED_PARAMETERS: ReadonlySet<string> = new Set([
  'application_name',
  'client_encoding',
  'DateStyle',
  'IntervalStyle',
  'TimeZone',
  'search_path',
  'standard_conforming_strings',
]);

// Startup names are case-sensitive on the wire but Postgres GUC names are not.
const CANONICAL = new Map([...TRACKED_PARAMETERS].map((n) => [n.toLowerCase(), n]));

export function canonicalTrackedName(name: string): string | undefined {
  return CANONICAL.get(name.toLowerCase());
}

export type StartupCheck =
  | { readonly ok: true; readonly user: string; readonly database: string; readonly tracked: Map<string, string> }
  | { readonly ok: false; readonly sqlstate: SqlState; readonly message: string };

export function checkStartupParameters(parameters: Readonly<Record<string, string>>, ignorable: ReadonlySet<string>): StartupCheck {
  const user = parameters['user'];
  if (user === undefined || user === '') {
    return { ok: false, sqlstate: SQLSTATE.INVALID_AUTHORIZATION_SPECIFICATION, message: 'no PostgreSQL user name specified in startup packet' };
  }
  const database = parameters['database'] || user;
  const tracked = new Map<string, string>();
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
    return {
      ok: false,
      sqlstate: SQLSTATE.FEATURE_NOT_SUPPORTED,
      message: `unsupported startup parameter: ${name} (add it to ignoreStartupParameters to have the pooler ignore it)`,
    };
  }
  return { ok: true, user, database, tracked };
}

/**
 * One statement that sets each parameter to its value as a StartupMessage would: `set_config`
 * parses the value as the parameter's own text form, so a list such as search_path `a, b` stays
 * two schemas (`SET search_path TO 'a, b'` would make it one schema named "a, b"). Names and
 * values are dollar-quoted (no escaping rules).
 */
export function setStatements(changes: ReadonlyMap<string, string>): string {
  const calls: string[] = [];
  for (const [name, value] of changes) calls.push(`pg_catalog.set_config(${dollarQuoted(name)}, ${dollarQuoted(value)}, false)`);
  return `SELECT ${calls.join(', ')}`;
}

function dollarQuoted(text: string): string {
  let tag = '$q$';
  for (let i = 0; text.includes(tag); i++) tag = `$q${i}$`;
  return `${tag}${text}${tag}`;
}
