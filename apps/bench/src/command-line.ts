// Command-line parsing shared by the bench programs: `--help` prints the options (generated from
// the same table parseArgs reads, so it cannot drift), and an unknown or malformed option prints
// the message and the usage, exit code 2, instead of a stack trace.
import { parseArgs } from 'node:util';
import type { ParseArgsConfig } from 'node:util';

type Options = NonNullable<ParseArgsConfig['options']>;

export function usageOf(command: string, options: Options): string {
  const parts = Object.entries(options).map(([name, o]) => {
    const value = o.type === 'string' ? ` ${name.toUpperCase().replace(/-/g, '_')}` : '';
    const fallback = o.default === undefined || o.type === 'boolean' ? '' : ` (default ${String(o.default)})`;
    return `  --${name}${value}${o.multiple === true ? ' (repeatable)' : ''}${fallback}`;
  });
  return [`usage: ${command} [options]`, ...parts, '  --help'].join('\n');
}

/** parseArgs over process.argv, with --help and a clean usage error. */
export function parseCommandLine<T extends ParseArgsConfig & { options: Options }>(command: string, config: T): ReturnType<typeof parseArgs<T>> {
  const args = config.args ?? process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(`${usageOf(command, config.options)}\n`);
    process.exit(0);
  }
  try {
    return parseArgs(config);
  } catch (e) {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n${usageOf(command, config.options)}\n`);
    process.exit(2);
  }
}

/** A whole-number option's value (`--name`), at least `min`; a usage error otherwise. */
export function wholeOption(name: string, value: string, min = 1): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be a whole number >= ${min}, got ${value}`);
  return n;
}
