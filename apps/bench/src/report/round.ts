// Rounding of the printed and JSON figures, one place for every benchmark.
export const round1 = (x: number): number => Math.round(x * 10) / 10;
export const round2 = (x: number): number => Math.round(x * 100) / 100;
