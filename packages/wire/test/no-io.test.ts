import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = fileURLToPath(new URL('../src', import.meta.url));
const FORBIDDEN = ['net', 'tls', 'dgram', 'stream', 'http', 'https', 'http2', 'child_process', 'worker_threads'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [p] : [];
  });
}

/** Every module specifier a file imports, re-exports or requires. */
function specifiers(text: string): string[] {
  const out: string[] = [];
  const patterns = [
    /\b(?:import|export)\s[^'"]*?\bfrom\s*['"]([^'"]+)['"]/g,
    /\bimport\s*['"]([^'"]+)['"]/g,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
    /\brequire\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const re of patterns) for (const m of text.matchAll(re)) out.push(m[1]!);
  return out;
}

describe('no I/O in the codec', () => {
  const files = sourceFiles(SRC);

  it('finds the sources and their imports', () => {
    expect(files.length).toBeGreaterThanOrEqual(15);
    const all = files.flatMap((f) => specifiers(readFileSync(f, 'utf8')));
    expect(all).toContain('pg-protocol');
    expect(all).toContain('./errors.js');
    // the scanner itself catches the forms it must
    expect(specifiers(`import x from 'node:net';\nexport * from "stream";\nconst t = require('tls'); await import('dgram')`)).toEqual([
      'node:net',
      'stream',
      'dgram',
      'tls',
    ]);
  });

  it('no file in src imports a socket or stream module', () => {
    const offenders: string[] = [];
    for (const f of files) {
      for (const s of specifiers(readFileSync(f, 'utf8'))) {
        const bare = s.replace(/^node:/, '').split('/')[0]!;
        if (FORBIDDEN.includes(bare)) offenders.push(`${relative(SRC, f)}: ${s}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});
