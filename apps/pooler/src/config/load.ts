// Loads quicpool.toml: parse, check every key against the schema (unknown keys, types, ranges),
// then apply environment variables (QUICPOOL_SECTION_KEY) and command-line overrides. Every error
// names the file (or variable/flag), the key and what is wrong.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parse, TomlError } from 'smol-toml';
import { SCHEMA, USER_KEYS } from './schema.js';
import type { KeySpec, Section, UserKey } from './schema.js';

export type Key = { [S in Section]: `${S}.${keyof (typeof SCHEMA)[S] & string}` }[Section];
export type Value = string | number | boolean | readonly string[] | null;
/** One user's settings: the string[] keys (certificate maps) as arrays, the others as strings. */
export type UserSettings = { -readonly [K in UserKey]?: (typeof USER_KEYS)[K]['type'] extends 'string[]' ? readonly string[] : string };

export class ConfigFileError extends Error {
  override readonly name = 'ConfigFileError';
  constructor(
    readonly source: string,
    readonly key: string,
    detail: string,
  ) {
    super(`${source}: ${key}: ${detail}`);
  }
}

export interface AppConfig {
  /** The file it came from (undefined: defaults only). */
  readonly file: string | undefined;
  readonly values: ReadonlyMap<Key, Value>;
  readonly users: ReadonlyMap<string, UserSettings>;
  get<T extends Value>(key: Key): T;
}

export function specOf(key: Key): KeySpec {
  const [section, name] = key.split('.') as [Section, string];
  const spec = (SCHEMA[section] as Record<string, KeySpec>)[name];
  if (spec === undefined) throw new Error(`no such key ${key}`);
  return spec;
}

export const ALL_KEYS: readonly Key[] = (Object.keys(SCHEMA) as Section[]).flatMap((s) => Object.keys(SCHEMA[s]).map((n) => `${s}.${n}` as Key));

const typeName = (v: unknown): string => (Array.isArray(v) ? 'array' : v === null ? 'null' : v instanceof Date ? 'date' : typeof v);

/** Checks one value against its spec; returns it normalised or throws naming the key. */
export function checkValue(source: string, key: string, spec: KeySpec, v: unknown): Value {
  const bad = (what: string): never => {
    throw new ConfigFileError(source, key, `${what}, got ${typeName(v)} ${JSON.stringify(v)}`);
  };
  switch (spec.type) {
    case 'string':
      return typeof v === 'string' ? v : bad('expected a string');
    case 'bool':
      return typeof v === 'boolean' ? v : bad('expected true or false');
    case 'int':
      if (typeof v !== 'number' || !Number.isInteger(v)) return bad('expected a whole number');
      return v < 0 ? bad('expected a whole number >= 0') : v;
    case 'port':
      if (typeof v !== 'number' || !Number.isInteger(v)) return bad('expected a port number (0-65535)');
      return v < 0 || v > 65535 ? bad('expected a port number (0-65535)') : v;
    case 'string[]':
      if (!Array.isArray(v) || !v.every((x): x is string => typeof x === 'string')) return bad('expected an array of strings');
      return v;
    case 'enum':
      if (typeof v !== 'string' || !(spec.values ?? []).includes(v)) return bad(`expected one of ${(spec.values ?? []).map((x) => JSON.stringify(x)).join(', ')}`);
      return v;
    default: {
      const never: never = spec.type;
      throw new Error(`unknown key type ${String(never)}`);
    }
  }
}

const isTable = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);

function readUsers(source: string, prefix: string, v: unknown, into: Map<string, UserSettings>): void {
  if (!isTable(v)) throw new ConfigFileError(source, prefix, `expected a table of users, got ${typeName(v)}`);
  for (const [name, u] of Object.entries(v)) {
    if (!isTable(u)) throw new ConfigFileError(source, `${prefix}.${name}`, `expected a table (${Object.keys(USER_KEYS).join(', ')}), got ${typeName(u)}`);
    const user: UserSettings = {};
    for (const [key, value] of Object.entries(u)) {
      const spec = (USER_KEYS as Record<string, KeySpec>)[key];
      if (spec === undefined) throw new ConfigFileError(source, `${prefix}.${name}.${key}`, `unknown key (expected one of ${Object.keys(USER_KEYS).join(', ')})`);
      (user as Record<string, Value>)[key] = checkValue(source, `${prefix}.${name}.${key}`, spec, value);
    }
    into.set(name, user);
  }
}

async function parseFile(file: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new ConfigFileError(file, '(file)', `cannot read: ${e instanceof Error ? e.message : String(e)}`);
  }
  try {
    return parse(text);
  } catch (e) {
    if (e instanceof TomlError) throw new ConfigFileError(file, `line ${e.line}`, `invalid TOML: ${e.message.split('\n')[0] ?? ''}`);
    throw e;
  }
}

export interface Overrides {
  /** Environment (QUICPOOL_SECTION_KEY=value). */
  readonly env?: NodeJS.ProcessEnv;
  /** `--set section.key=value` and named flags, already as key -> raw string. */
  readonly flags?: ReadonlyMap<string, string>;
}

/** A raw string from the environment or a flag, read as the key's type. */
function fromString(source: string, key: string, spec: KeySpec, raw: string): Value {
  switch (spec.type) {
    case 'string':
    case 'enum':
      return checkValue(source, key, spec, raw);
    case 'bool':
      return checkValue(source, key, spec, raw === 'true' ? true : raw === 'false' ? false : raw);
    case 'int':
    case 'port':
      return checkValue(source, key, spec, /^-?\d+$/.test(raw) ? Number(raw) : raw);
    case 'string[]':
      return raw === '' ? [] : raw.split(',').map((s) => s.trim());
    default: {
      const never: never = spec.type;
      throw new Error(`unknown key type ${String(never)}`);
    }
  }
}

export async function loadConfig(file: string | undefined, overrides: Overrides = {}): Promise<AppConfig> {
  const values = new Map<Key, Value>();
  for (const key of ALL_KEYS) values.set(key, specOf(key).default);
  const users = new Map<string, UserSettings>();
  const source = file ?? '(defaults)';
  if (file !== undefined) {
    const doc = await parseFile(file);
    for (const [section, table] of Object.entries(doc)) {
      if (section === 'users') {
        readUsers(file, 'users', table, users);
        continue;
      }
      const specs = (SCHEMA as Record<string, Record<string, KeySpec>>)[section];
      if (specs === undefined) throw new ConfigFileError(file, section, `unknown section (expected ${[...Object.keys(SCHEMA), 'users'].join(', ')})`);
      if (!isTable(table)) throw new ConfigFileError(file, section, `expected a table, got ${typeName(table)}`);
      for (const [name, v] of Object.entries(table)) {
        const spec = specs[name];
        if (spec === undefined) throw new ConfigFileError(file, `${section}.${name}`, `unknown key (expected one of ${Object.keys(specs).join(', ')})`);
        values.set(`${section}.${name}` as Key, checkValue(file, `${section}.${name}`, spec, v));
      }
    }
  }
  for (const [name, raw] of Object.entries(overrides.env ?? {})) {
    if (!name.startsWith('QUICPOOL_') || raw === undefined) continue;
    const key = ALL_KEYS.find((k) => `QUICPOOL_${k.replace('.', '_').toUpperCase()}` === name);
    if (key === undefined) continue; // other QUICPOOL_* variables are not config keys
    values.set(key, fromString(`environment ${name}`, key, specOf(key), raw));
  }
  for (const [key, raw] of overrides.flags ?? []) {
    if (!(ALL_KEYS as readonly string[]).includes(key)) throw new ConfigFileError('command line', key, `unknown key (see docs/config.md)`);
    values.set(key as Key, fromString('command line', key, specOf(key as Key), raw));
  }
  const base = file === undefined ? process.cwd() : dirname(resolve(file));
  const usersFile = values.get('auth.users_file');
  if (typeof usersFile === 'string') {
    const path = resolve(base, usersFile);
    const doc = await parseFile(path);
    for (const [section, table] of Object.entries(doc)) {
      if (section !== 'users') throw new ConfigFileError(path, section, 'a users file holds only [users.NAME] tables');
      readUsers(path, 'users', table, users);
    }
  }
  // Files named in the config must exist now, not at the first TLS handshake.
  for (const key of ['tls.cert_file', 'tls.key_file'] as const) {
    const v = values.get(key);
    if (typeof v === 'string') {
      const path = resolve(base, v);
      if (!existsSync(path)) throw new ConfigFileError(source, key, `file not found: ${path}`);
      values.set(key, path);
    }
  }
  if ((values.get('tls.cert_file') === null) !== (values.get('tls.key_file') === null)) {
    throw new ConfigFileError(source, 'tls.key_file', 'tls.cert_file and tls.key_file go together');
  }
  return {
    file,
    values,
    users,
    get<T extends Value>(key: Key): T {
      return values.get(key) as T;
    },
  };
}
