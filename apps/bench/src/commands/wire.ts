// `quicpool-bench wire` (`pnpm bench:wire`): decoding throughput of @quicpool/wire against pg-protocol's Parser on the
// workload's responses: by default src/wire/select-trunc.bin.gz, a real PostgreSQL's, recorded by --record <postgres URL>
// (to --fixture FILE, then exit); --fixture FILE replays other bytes (gzipped or not), --synthesize generates them.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { BackendDecoder } from '@quicpool/wire';
import { Parser } from 'pg-protocol/dist/parser.js';
import { defineCommand, JSON_OPTION } from '../command-line.js';
import { selectTruncStream, MESSAGES_PER_QUERY } from '../wire/fixture.js';
import { measure, splitChunks } from '../wire/measure.js';
import { recordSelectTrunc } from '../wire/record.js';
import type { Contender, Result } from '../wire/measure.js';

// Resolves from both src/commands (source) and dist/bin (built): two levels up is the package root.
const RECORDED = fileURLToPath(new URL('../../src/wire/select-trunc.bin.gz', import.meta.url));

function load(file: string): Buffer {
  const b = readFileSync(file);
  return b[0] === 0x1f && b[1] === 0x8b ? gunzipSync(b) : b;
}

export const command = defineCommand({
  options: {
    ...JSON_OPTION,
    queries: { type: 'string', default: '4000' },
    chunk: { type: 'string', default: '65536' },
    rounds: { type: 'string', default: '15' },
    passes: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '1500' },
    fixture: { type: 'string' },
    synthesize: { type: 'boolean', default: false },
    record: { type: 'string' },
  },
  async run({ values: args }) {
    if (args.record !== undefined) {
      const file = args.fixture ?? RECORDED;
      const gz = await recordSelectTrunc(args.record, Number(args.queries));
      writeFileSync(file, gz);
      console.log(`recorded ${args.queries} responses to ${file} (${gz.length} bytes gzipped)`);
      return;
    }

    const fixture = args.fixture ?? (!args.synthesize && existsSync(RECORDED) ? RECORDED : undefined);
    const queries = Number(args.queries);
    const stream = fixture !== undefined ? load(fixture) : selectTruncStream(queries);
    const source =
      fixture !== undefined
        ? `recorded from a real PostgreSQL: ${fixture.replace(/^.*\/apps\/bench\//, 'apps/bench/')}`
        : `${queries} x SELECT trunc(random()*100) FROM generate_series(1,10), synthesized in the real shapes`;
    const chunks = splitChunks(stream, Number(args.chunk));

    const contenders: Contender[] = [
      {
        name: 'wire frame-only (advance)',
        run(cs) {
          const d = new BackendDecoder();
          let n = 0;
          for (const c of cs) {
            d.push(c);
            while (d.advance() >= 0) n++;
          }
          d.end();
          return n;
        },
      },
      {
        name: 'wire raw (nextRaw {type,bytes})',
        run(cs) {
          const d = new BackendDecoder();
          let n = 0;
          for (const c of cs) {
            d.push(c);
            while (d.nextRaw() !== undefined) n++;
          }
          d.end();
          return n;
        },
      },
      {
        name: 'wire typed (next)',
        run(cs) {
          const d = new BackendDecoder();
          let n = 0;
          for (const c of cs) {
            d.push(c);
            while (d.next() !== undefined) n++;
          }
          d.end();
          return n;
        },
      },
      {
        name: 'pg-protocol Parser',
        run(cs) {
          const p = new Parser();
          let n = 0;
          const onMessage = (): void => {
            n++;
          };
          for (const c of cs) p.parse(c, onMessage);
          return n;
        },
      },
    ];

    const results = measure(contenders, chunks, { rounds: Number(args.rounds), passes: Number(args.passes), warmupMs: Number(args.warmup) });

    const expected = results[3]!.messagesPerPass;
    if (fixture === undefined && expected !== queries * MESSAGES_PER_QUERY) {
      throw new Error(`pg-protocol saw ${expected} messages, expected ${queries * MESSAGES_PER_QUERY}`);
    }
    for (const r of results) if (r.messagesPerPass !== expected) throw new Error(`${r.name} saw ${r.messagesPerPass} messages, pg-protocol ${expected}`);

    const pg = results[3]!.messagesPerSecond;
    const ratio = (r: Result): number => r.messagesPerSecond / pg;
    const rows = results.map((r) => [r.name, (r.messagesPerSecond / 1e6).toFixed(2), r.megabytesPerSecond.toFixed(1), `${ratio(r).toFixed(2)}x`]);
    const header = ['decoder', 'M msg/s', 'MB/s', 'vs pg-protocol'];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
    const line = (cells: string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');

    console.log(
      `wire bench: ${stream.length} bytes, ${expected} backend messages (${source}), ` +
        `${chunks.length} chunks of ${args.chunk} B, median of ${args.rounds} interleaved rounds x ${args.passes} passes, node ${process.version}`,
    );
    for (const row of [header, widths.map((w) => '-'.repeat(w)), ...rows]) console.log(line(row));
    console.log(`targets: frame-only >= 2x pg-protocol, typed >= 1x pg-protocol`);

    if (args.json) {
      console.log(JSON.stringify({
        rawVsPgProtocol: Number(ratio(results[0]!).toFixed(3)),
        rawMessageVsPgProtocol: Number(ratio(results[1]!).toFixed(3)),
        typedVsPgProtocol: Number(ratio(results[2]!).toFixed(3)),
        messagesPerSecond: Object.fromEntries(results.map((r) => [r.name, Math.round(r.messagesPerSecond)])),
        bytes: stream.length,
        messages: expected,
        chunkSize: Number(args.chunk),
        source: fixture !== undefined ? 'recorded' : 'synthesized',
      }));
    }
  },
});
