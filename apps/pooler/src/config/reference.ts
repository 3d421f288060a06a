// Renders the config reference (docs/config.md) from the schema, so the page lists every key.
import { DATABASE_KEYS, SCHEMA, USER_KEYS } from './schema.js';
import type { KeySpec, Section } from './schema.js';

const def = (s: KeySpec): string => (s.default === null ? '(unset)' : Array.isArray(s.default) ? `[${s.default.map((x) => JSON.stringify(x)).join(', ')}]` : JSON.stringify(s.default));
const type = (s: KeySpec): string => (s.type === 'enum' ? (s.values ?? []).map((v) => `"${v}"`).join(' \\| ') : s.type === 'port' ? 'port (0-65535)' : s.type === 'int' ? 'integer >= 0' : s.type);

export function configReference(): string {
  const out: string[] = [];
  for (const section of Object.keys(SCHEMA) as Section[]) {
    out.push(`### [${section}]`, '', '| key | type | default | reload | meaning |', '| --- | --- | --- | --- | --- |');
    for (const [name, spec] of Object.entries(SCHEMA[section]) as [string, KeySpec][]) {
      out.push(`| \`${section}.${name}\` | ${type(spec)} | \`${def(spec)}\` | ${spec.live ? 'live' : 'restart'} | ${spec.doc} |`);
    }
    out.push('');
  }
  out.push('### [databases.NAME]', '', '| key | type | default | reload | meaning |', '| --- | --- | --- | --- | --- |');
  for (const [name, spec] of Object.entries(DATABASE_KEYS) as [string, KeySpec][]) {
    out.push(`| \`databases.NAME.${name}\` | ${type(spec)} | \`${def(spec)}\` | live | ${spec.doc} |`);
  }
  out.push('');
  out.push('### [users.NAME]', '', '| key | type | default | reload | meaning |', '| --- | --- | --- | --- | --- |');
  for (const [name, spec] of Object.entries(USER_KEYS) as [string, KeySpec][]) {
    out.push(`| \`users.NAME.${name}\` | ${type(spec)} | \`${def(spec)}\` | live | ${spec.doc} |`);
  }
  return `${out.join('\n')}\n`;
}
