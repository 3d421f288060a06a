// quicpool-bench: every benchmark of quicpool in one program, `quicpool-bench <subcommand> [options]` (what
// `pnpm bench`, `pnpm bench:lan` ... run). The benchmarks start it as their child processes too (commands/workers.ts).
import { fileURLToPath } from 'node:url';
import { usageOf, UsageError } from '../command-line.js';
import { SUBCOMMANDS } from '../commands/index.js';
import { WORKERS } from '../commands/workers.js';

function programHelp(): string {
  const width = Math.max(...SUBCOMMANDS.map((s) => s.name.length));
  return [
    'usage: quicpool-bench <subcommand> [options]',
    '       quicpool-bench <subcommand> --help   (that subcommand\'s options)',
    '',
    'subcommands:',
    ...SUBCOMMANDS.map((s) => `  ${s.name.padEnd(width)}  ${s.summary}`),
    '',
    'With --json the last line printed is one JSON object. Exit code 0: done; 1: failed; 2: usage error.',
  ].join('\n');
}

/** Resolves to the exit code, or null when the process keeps running (a server, a worker). */
async function main(argv: readonly string[], program: string): Promise<number | null> {
  const [first, ...rest] = argv;
  const worker = first === undefined ? undefined : WORKERS.get(first);
  if (worker !== undefined) return worker(rest);
  if (first === undefined) throw new UsageError(`which subcommand?\n${programHelp()}`);
  if (first === '--help' || first === '-h') {
    process.stdout.write(`${programHelp()}\n`);
    return 0;
  }
  const sub = SUBCOMMANDS.find((s) => s.name === first);
  if (sub === undefined) throw new UsageError(`unknown subcommand '${first}'\n${programHelp()}`);
  const command = await sub.load();
  const usage = usageOf(`quicpool-bench ${sub.name}`, command.options, sub.summary);
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  try {
    return await command.run(rest, program);
  } catch (e) {
    if (e instanceof UsageError) throw new UsageError(`${e.message}\n${usage}`);
    throw e;
  }
}

const argv = process.argv.slice(2);
main(argv, fileURLToPath(import.meta.url)).then(
  (code) => {
    if (code !== null) process.exit(code);
  },
  (error: unknown) => {
    if (error instanceof UsageError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    process.stderr.write(`quicpool-bench ${argv[0] ?? ''} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
