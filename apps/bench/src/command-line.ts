// The one option parser of the subcommands: each declares one table, which parseArgs reads and --help prints (no drift).
import { parseArgs } from 'node:util';
import type { ParseArgsConfig } from 'node:util';

export type Options = NonNullable<ParseArgsConfig['options']>;
export type Values<O extends Options> = ReturnType<typeof parseArgs<{ options: O; args: string[] }>>['values'];

/** A wrong option or value on the command line: exit code 2 and the usage, not a stack trace. */
export class UsageError extends Error {}

/** One subcommand, its option table erased: what the program's dispatcher needs of it. */
export interface Command {
  readonly options: Options;
  /** Runs with the arguments after the subcommand; resolves to the exit code, or null to keep the process running. */
  run(args: readonly string[], program: string): Promise<number | null>;
}

/** What a subcommand's run gets: its parsed options, its own arguments and the program file. */
export interface Invocation<O extends Options> {
  readonly values: Values<O>;
  readonly args: readonly string[];
  /** This program's built file: every child process of a benchmark runs it. */
  readonly program: string;
}

/** The `--json` option every benchmark shares: with it the last stdout line is one JSON object. */
export const JSON_OPTION = { json: { type: 'boolean', default: false } } as const;

export function usageOf(command: string, options: Options, summary?: string): string {
  const parts = Object.entries(options).map(([name, o]) => {
    const value = o.type === 'string' ? ` ${name.toUpperCase().replace(/-/g, '_')}` : '';
    const fallback = o.default === undefined || o.type === 'boolean' || (Array.isArray(o.default) && o.default.length === 0) ? '' : ` (default ${String(o.default)})`;
    return `  --${name}${value}${o.multiple === true ? ' (repeatable)' : ''}${fallback}`;
  });
  return [...(summary === undefined ? [] : [summary]), `usage: ${command} [options]`, ...parts, '  --help'].join('\n');
}

/** `spec.run` resolves to the exit code (nothing: 0), or null to keep the process running. */
export function defineCommand<O extends Options>(spec: { options: O; run(call: Invocation<O>): Promise<number | null | void> }): Command {
  return {
    options: spec.options,
    async run(args, program) {
      let values: Values<O>;
      try {
        values = parseArgs({ options: spec.options, args: [...args] }).values;
      } catch (e) {
        throw new UsageError(e instanceof Error ? e.message : String(e));
      }
      const code = await spec.run({ values, args, program });
      return code === undefined ? 0 : code;
    },
  };
}

/** A numeric option's value (`--name`) in [min, max], whole when asked; a usage error otherwise. */
export function numberOption(name: string, value: string | undefined, min = 0, max = Infinity, whole = false): number {
  const n = Number(value);
  if (value === undefined || value.trim() === '' || !Number.isFinite(n) || n < min || n > max || (whole && !Number.isInteger(n))) {
    const range = max === Infinity ? `>= ${min}` : `in [${min}, ${max}]`;
    throw new UsageError(`--${name} must be a ${whole ? 'whole ' : ''}number ${range}, got ${String(value)}`);
  }
  return n;
}

/** A whole-number option's value (`--name`), at least `min`; a usage error otherwise. */
export const wholeOption = (name: string, value: string, min = 1): number => numberOption(name, value, min, Infinity, true);

/** One of `allowed`, or a usage error naming them. */
export function choiceOption<T extends string>(name: string, value: string, allowed: readonly T[]): T {
  const found = allowed.find((a) => a === value);
  if (found === undefined) throw new UsageError(`--${name} takes ${allowed.join(', ')}; got ${value}`);
  return found;
}
