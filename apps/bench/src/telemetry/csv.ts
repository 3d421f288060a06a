// The telemetry CSV: the original's seven columns first (its order and names: its plotting scripts read ours), then ours.

export const CSV_COLUMNS = [
  // The original's seven.
  'timestamp_ms', 'active_number_of_queries', 'failed_number_of_queries', 'number_of_queries_processed',
  'average_query_time_us', 'cpu_milliseconds', 'memory_bytes',
  // Ours: latency percentiles of the interval, the offered rate, the pooler's CPU and RSS, the path's RTT.
  'p50_us', 'p99_us', 'max_us', 'offered_per_sec', 'pooler_cpu_milliseconds', 'pooler_rss_bytes', 'rtt_ms',
  // The other processes' CPU in the same interval (/proc; 1000 = one core), the rest of the machine's as "other".
  'forwarder_cpu_milliseconds', 'postgres_cpu_milliseconds', 'other_cpu_milliseconds',
  // Each process's CPU per query answered in the interval (µs).
  'client_cpu_us_per_query', 'forwarder_cpu_us_per_query', 'pooler_cpu_us_per_query', 'postgres_cpu_us_per_query',
] as const;

/** The per-process CPU columns, in the order reports list them. */
export const PROCESS_CPU = [
  { process: 'client', ms: 'cpu_milliseconds' },
  { process: 'forwarder', ms: 'forwarder_cpu_milliseconds' },
  { process: 'pooler', ms: 'pooler_cpu_milliseconds' },
  { process: 'postgres', ms: 'postgres_cpu_milliseconds' },
] as const;

/** One telemetry row (one second of one client variant). null = not applicable (empty cell). */
export type TelemetryRow = { readonly [K in (typeof CSV_COLUMNS)[number]]: number | null };

export const EMPTY_ROW = Object.fromEntries(CSV_COLUMNS.map((column) => [column, null])) as TelemetryRow;

function cell(value: number | null): string {
  if (value === null || !Number.isFinite(value)) return '';
  // Integers stay integers; fractions keep 3 decimals (µs and ms resolution is plenty).
  return Number.isInteger(value) ? String(value) : value.toFixed(3);
}

export const csvHeader = (): string => CSV_COLUMNS.join(',');

/** The whole file: header, one line per row, trailing newline. */
export function toCsv(rows: readonly TelemetryRow[]): string {
  return `${[csvHeader(), ...rows.map((row) => CSV_COLUMNS.map((column) => cell(row[column])).join(','))].join('\n')}\n`;
}

/** Reads a file written by toCsv back (tests and report regeneration). */
export function parseCsv(text: string): { header: string[]; rows: Array<Record<string, number | null>> } {
  const [first = '', ...lines] = text.split('\n').filter((line) => line.length > 0);
  const header = first.split(',');
  const rows = lines.map((line) => {
    const cells = line.split(',');
    return Object.fromEntries(header.map((name, i) => [name, (cells[i] ?? '') === '' ? null : Number(cells[i])]));
  });
  return { header, rows };
}
