// Line charts as inline SVG strings: the report must open offline, so no plotting library runs in the browser.

/** points: [x, y]; y null = no value (a gap in the line). */
export type Series = { name: string; color: string; points: ReadonlyArray<readonly [number, number | null]>; dashed?: boolean };

/** id marks the SVG (data-panel) so tests and readers can find a panel. */
type ChartOptions = Readonly<{ id: string; title: string; xLabel: string; yLabel: string; series: readonly Series[]; width: number; height: number }>;

export const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2', '#17becf'];

export const escapeXml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** 'Nice' tick step (1, 2 or 5 x 10^k) giving about `target` ticks over [0, max]. */
function niceStep(max: number, target = 5): number {
  if (!(max > 0)) return 1;
  const raw = max / target;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const residual = raw / magnitude;
  return (residual <= 1 ? 1 : residual <= 2 ? 2 : residual <= 5 ? 5 : 10) * magnitude;
}

function formatTick(value: number): string {
  const abs = Math.abs(value);
  if (abs >= 1e9) return `${+(value / 1e9).toFixed(1)}G`;
  if (abs >= 1e6) return `${+(value / 1e6).toFixed(1)}M`;
  if (abs >= 1e4) return `${+(value / 1e3).toFixed(1)}k`;
  return String(+value.toFixed(3));
}

/** The 'd' attribute of one series: a path broken at null values. */
function pathData(points: Series['points'], x: (v: number) => number, y: (v: number) => number): string {
  const parts: string[] = [];
  let pen = false;
  for (const [px, py] of points) {
    if (py === null || !Number.isFinite(py)) {
      pen = false;
      continue;
    }
    parts.push(`${pen ? 'L' : 'M'}${x(px).toFixed(1)},${y(py).toFixed(1)}`);
    pen = true;
  }
  return parts.join('');
}

export function lineChart(options: ChartOptions): string {
  const { width, height } = options;
  const margin = { left: 58, right: 12, top: 28, bottom: 40 };
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const xs = options.series.flatMap((s) => s.points.map(([px]) => px));
  const ys = options.series.flatMap((s) => s.points.map(([, py]) => py)).filter((v): v is number => v !== null && Number.isFinite(v));
  const xMax = Math.max(1, ...xs);
  const top = Math.max(0, ...ys) * 1.05;
  const yStep = niceStep(top);
  const yMax = Math.max(yStep, Math.ceil(top / yStep) * yStep);
  const xStep = niceStep(xMax, 6);
  const x = (v: number): number => margin.left + (v / xMax) * plotW;
  const y = (v: number): number => margin.top + plotH - (v / yMax) * plotH;

  const grid: string[] = [];
  // Bounded: niceStep gives about 5-6 ticks per axis.
  for (let v = 0; v <= yMax + yStep / 2 && grid.length < 40; v += yStep) {
    grid.push(`<line x1="${margin.left}" x2="${margin.left + plotW}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#e5e5e5"/>`);
    grid.push(`<text x="${margin.left - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end" font-size="11">${formatTick(v)}</text>`);
  }
  for (let v = 0; v <= xMax + xStep / 2 && grid.length < 100; v += xStep) {
    grid.push(`<text x="${x(v).toFixed(1)}" y="${margin.top + plotH + 15}" text-anchor="middle" font-size="11">${formatTick(v)}</text>`);
  }
  const dash = (s: Series): string => (s.dashed === true ? ' stroke-dasharray="5 3"' : '');
  const lines = options.series.map((s) => {
    const d = pathData(s.points, x, y);
    return d === '' ? '' : `<path d="${d}" fill="none" stroke="${s.color}" stroke-width="1.8"${dash(s)} data-series="${escapeXml(s.name)}"/>`;
  });
  const legend = options.series.map((s, i) => {
    const lx = margin.left + 8 + (i % 3) * 140;
    const ly = margin.top + 12 + Math.floor(i / 3) * 14;
    return `<line x1="${lx}" x2="${lx + 16}" y1="${ly - 4}" y2="${ly - 4}" stroke="${s.color}" stroke-width="2"${dash(s)}/><text x="${lx + 20}" y="${ly}" font-size="11">${escapeXml(s.name)}</text>`;
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-panel="${escapeXml(options.id)}" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif">`,
    `<text x="${width / 2}" y="16" text-anchor="middle" font-size="13" font-weight="bold">${escapeXml(options.title)}</text>`,
    ...grid,
    `<rect x="${margin.left}" y="${margin.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#999"/>`,
    ...lines,
    ...legend,
    `<text x="${margin.left + plotW / 2}" y="${height - 6}" text-anchor="middle" font-size="11">${escapeXml(options.xLabel)}</text>`,
    `<text transform="translate(13 ${margin.top + plotH / 2}) rotate(-90)" text-anchor="middle" font-size="11">${escapeXml(options.yLabel)}</text>`,
    '</svg>',
  ].join('\n');
}
