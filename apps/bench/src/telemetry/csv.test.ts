import { describe, expect, it } from 'vitest';
import { CSV_COLUMNS, csvHeader, parseCsv, toCsv } from './csv.js';
import type { TelemetryRow } from './csv.js';

describe('telemetry CSV', () => {
  it('has exactly the original columns first, then ours', () => {
    expect(csvHeader()).toBe(
      'timestamp_ms,active_number_of_queries,failed_number_of_queries,number_of_queries_processed,average_query_time_us,cpu_milliseconds,memory_bytes,' +
        'p50_us,p99_us,max_us,offered_per_sec,pooler_cpu_milliseconds,pooler_rss_bytes,rtt_ms,' +
        'forwarder_cpu_milliseconds,postgres_cpu_milliseconds,other_cpu_milliseconds,' +
        'client_cpu_us_per_query,forwarder_cpu_us_per_query,pooler_cpu_us_per_query,postgres_cpu_us_per_query',
    );
    expect(CSV_COLUMNS).toHaveLength(21);
  });

  it('writes null as an empty cell and round-trips', () => {
    const row: TelemetryRow = {
      timestamp_ms: 1_700_000_000_000,
      active_number_of_queries: 3,
      failed_number_of_queries: 0,
      number_of_queries_processed: 120,
      average_query_time_us: 1500,
      cpu_milliseconds: 40,
      memory_bytes: 80_000_000,
      p50_us: 1200,
      p99_us: 5000,
      max_us: 6000,
      offered_per_sec: 121,
      pooler_cpu_milliseconds: null,
      pooler_rss_bytes: null,
      rtt_ms: 30.25,
      forwarder_cpu_milliseconds: 12,
      postgres_cpu_milliseconds: 30,
      other_cpu_milliseconds: null,
      client_cpu_us_per_query: 333.333,
      forwarder_cpu_us_per_query: 100,
      pooler_cpu_us_per_query: null,
      postgres_cpu_us_per_query: 250,
    };
    const text = toCsv([row]);
    expect(text.split('\n')[1]).toBe('1700000000000,3,0,120,1500,40,80000000,1200,5000,6000,121,,,30.250,12,30,,333.333,100,,250');
    const parsed = parseCsv(text);
    expect(parsed.header).toEqual([...CSV_COLUMNS]);
    expect(parsed.rows[0]).toEqual({ ...row, rtt_ms: 30.25 });
  });
});
