export { Histogram, nearestRank, HISTOGRAM_MAX_VALUE } from './histogram.js';
export { CSV_COLUMNS, ORIGINAL_COLUMNS, EXTRA_COLUMNS, csvHeader, csvLine, toCsv, parseCsv } from './csv.js';
export type { CsvColumn, TelemetryRow } from './csv.js';
export { readProcSample, parseStatCpuTicks, parseStatusRssBytes, ProcDeltaReader, clockTicksPerSecond } from './proc.js';
export type { ProcSample } from './proc.js';
export { LoadRecorder, TelemetrySampler, FAILURE_REASONS } from './recorder.js';
export type { FailureReason, SamplerOptions } from './recorder.js';
