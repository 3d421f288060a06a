// The median every benchmark reports ("median of N rounds / trials"): the middle value, or the mean of the middle two
// for an even count, of the figures that are there (null and non-finite left out); null when none is.
export function median(values: readonly (number | null)[]): number | null {
  const v = values.filter((x): x is number => x !== null && Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return null;
  const mid = v.length >> 1;
  return v.length % 2 === 1 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
}
