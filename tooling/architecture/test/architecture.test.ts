// The repository's structure, checked on every run: arrows point one way (packages never import
// apps; the pooler and the client never import each other; no package's code reaches into another
// package's files), no import cycles inside a package, inside the pooler imports go from higher
// layers to lower ones only and no module keeps mutable state, the pooler reaches servers only
// through the transport, the daemon does not ship the test fixture, and every runtime dependency
// a manifest declares is imported by its code.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseCircular, parseDependencyTree } from 'dpdm';
import { describe, expect, it } from 'vitest';
import * as transport from '@quicpool/transport';

const root = fileURLToPath(new URL('../../..', import.meta.url));

interface Workspace {
  readonly dir: string;
  readonly name: string;
  readonly dependencies: readonly string[];
}

function workspaces(parent: string): Workspace[] {
  return readdirSync(join(root, parent))
    .map((d) => join(root, parent, d))
    .filter((d) => statSync(join(d, 'package.json'), { throwIfNoEntry: false })?.isFile() === true)
    .map((dir) => {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name: string; dependencies?: Record<string, string> };
      return { dir, name: pkg.name, dependencies: Object.keys(pkg.dependencies ?? {}) };
    });
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.name === 'node_modules' || e.name === 'dist') continue;
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.(ts|mts)$/.test(e.name) && !e.name.endsWith('.d.ts')) out.push(p);
    }
  };
  walk(dir);
  return out;
}

/** Module specifiers of `import`/`export ... from` and dynamic `import()` in a file. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs: string[] = [];
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|(?:import|require)\(\s*['"]([^'"]+)['"]\s*\)/g)) specs.push(m[1] ?? m[2] ?? '');
  return specs;
}

const packages = workspaces('packages');
const apps = workspaces('apps');
const isTest = (f: string): boolean => /\.test\.ts$/.test(f) || f.includes(`${sep}test${sep}`);
const rel = (f: string): string => relative(root, f);

describe('import direction', () => {
  it('packages never import apps, nor another package by a path', () => {
    const bad: string[] = [];
    for (const p of packages) {
      for (const f of sourceFiles(p.dir)) {
        for (const s of importsOf(f)) {
          if (apps.some((a) => s === a.name || s.startsWith(`${a.name}/`))) bad.push(`${rel(f)} imports the app ${s}`);
          if (s.startsWith('.') && !join(f, '..', s).startsWith(p.dir + sep)) bad.push(`${rel(f)} reaches outside its package: ${s}`);
        }
      }
    }
    expect(bad).toEqual([]);
  });

  it('the pooler and the client never import each other (their tests included)', () => {
    const bad: string[] = [];
    const pairs = [['packages/pooler', '@quicpool/client'], ['packages/client', '@quicpool/pooler']] as const;
    for (const [dir, other] of pairs) {
      for (const f of sourceFiles(join(root, dir))) if (importsOf(f).some((s) => s === other || s.startsWith(`${other}/`))) bad.push(`${rel(f)} imports ${other}`);
    }
    expect(bad).toEqual([]);
  });

  it('the daemon does not ship the test fixture', () => {
    const bad = sourceFiles(join(root, 'apps/pooler/src')).filter((f) => importsOf(f).some((s) => s.startsWith('@quicpool/pg-fixture')));
    expect(bad.map(rel)).toEqual([]);
  });
});

describe('no import cycles', () => {
  it.each(packages.map((p) => [rel(p.dir), p.dir] as const))('%s/src', async (_name, dir) => {
    const entries = sourceFiles(join(dir, 'src')).filter((f) => !isTest(f));
    // transform: type-only imports are erased first (a type may refer back without a cycle at run time).
    const tree = await parseDependencyTree(entries, { context: dir, transform: true, skipDynamicImports: true, tsconfig: join(dir, 'tsconfig.json') });
    const cycles = parseCircular(tree, true).map((c) => c.join(' -> '));
    expect(cycles).toEqual([]);
  });
});

/**
 * The pooler's folders, lowest first: a module imports (types included) only from its own folder
 * or one listed before it. `server` and `index` are the package's two top files.
 */
const POOLER_LAYERS = [
  'runtime', // clock, write batcher, the encoded error: what everything uses
  'auth', // SCRAM and md5, the algorithms
  'prepared', // statement names, registries and the router
  'backend', // one server connection: dial, login, its role, its reads and writes
  'upstream', // which host, which failures pass, outages
  'config',
  'workers', // what a daemon's workers share (counts, budgets, peers)
  'pool',
  'session', // one client session's state machine and its parts
  'cancel',
  'core', // what the sessions of a pooler share; the view
  'driver', // a session's stream, timers and pool on the event loop
  'server',
  'admin',
  'index',
] as const;

describe('inside the pooler', () => {
  const srcDir = join(root, 'packages/pooler/src');
  const src = sourceFiles(srcDir).filter((f) => !isTest(f));
  const layerOf = (f: string): string => relative(srcDir, f).split(sep)[0]!.replace(/\.[jt]s$/, '');

  it('imports point from higher layers to lower ones', () => {
    const bad: string[] = [];
    for (const f of src) {
      const from = layerOf(f);
      for (const s of importsOf(f).filter((x) => x.startsWith('.'))) {
        const to = layerOf(resolve(dirname(f), s));
        if (to === from) continue;
        const [i, j] = [POOLER_LAYERS.indexOf(from as never), POOLER_LAYERS.indexOf(to as never)];
        if (i < 0 || j < 0 || j > i) bad.push(`${rel(f)} (${from}) imports ${s} (${to})`);
      }
    }
    expect(bad).toEqual([]);
    expect(new Set(src.map(layerOf))).toEqual(new Set(POOLER_LAYERS));
  });

  it('keeps no mutable state in a module (only in the objects the pooler makes)', () => {
    const bad: string[] = [];
    for (const f of src) {
      const text = readFileSync(f, 'utf8');
      for (const m of text.matchAll(/^(?:export\s+)?(let|var)\s+(\w+)/gm)) bad.push(`${rel(f)}: module-level ${m[1]} ${m[2]}`);
      // A module-level collection is a constant table: never changed after it is made.
      for (const m of text.matchAll(/^(?:export\s+)?const\s+(\w+)\s*(?::[^=]+)?=\s*(?:new\s+(?:Map|Set|WeakMap|WeakSet|Array)\b|\[)/gm)) {
        const name = m[1]!;
        if (new RegExp(`\\b${name}\\.(?:set|add|delete|clear|push|pop|shift|unshift|splice)\\(|\\b${name}\\[[^\\]]+\\]\\s*=[^=]`).test(text)) bad.push(`${rel(f)}: module-level ${name} is changed`);
      }
    }
    expect(bad).toEqual([]);
  });
});

describe('the pooler reaches servers through the transport', () => {
  const src = sourceFiles(join(root, 'packages/pooler/src')).filter((f) => !isTest(f));

  it('creates no sockets itself (node:net, node:tls, node:dgram)', () => {
    const bad = src.filter((f) => importsOf(f).some((s) => /^(node:)?(net|tls|dgram)$/.test(s)));
    expect(bad.map(rel)).toEqual([]);
  });

  it('never branches on a transport class (capabilities live on SessionStream)', () => {
    // Every class the transport exports (QuicSessionStream, QuicListener, TransportError ...).
    const classes = Object.entries(transport).filter(([, v]) => typeof v === 'function' && /^class\b/.test(Function.prototype.toString.call(v))).map(([k]) => k).filter((k) => k !== 'TransportError');
    expect(classes).toContain('QuicSessionStream');
    const bad: string[] = [];
    for (const f of src) {
      const text = readFileSync(f, 'utf8');
      for (const c of [...classes, 'Socket', 'TLSSocket']) if (new RegExp(`instanceof\\s+(?:\\w+\\.)?${c}\\b`).test(text)) bad.push(`${rel(f)}: instanceof ${c}`);
    }
    expect(bad).toEqual([]);
  });
});

describe('manifests', () => {
  it('every runtime dependency of a package or app is imported by its code', () => {
    const unused: string[] = [];
    for (const w of [...packages, ...apps]) {
      const imported = new Set(sourceFiles(join(w.dir, 'src')).filter((f) => !isTest(f)).flatMap(importsOf));
      const scripts = readFileSync(join(w.dir, 'package.json'), 'utf8');
      for (const d of w.dependencies) {
        const used = [...imported].some((s) => s === d || s.startsWith(`${d}/`));
        // Types packages serve the declarations of an imported module; build helpers run from scripts.
        const typesOf = d.startsWith('@types/') && [...imported].some((s) => s === d.slice('@types/'.length));
        const inScripts = new RegExp(`"[^"]*\\b${d.replace(/[/@.-]/g, '\\$&')}\\b[^"]*"\\s*[,}]`).test(scripts.replace(/"dependencies"[\s\S]*?\}/, ''));
        if (!used && !typesOf && !inScripts) unused.push(`${w.name}: ${d}`);
      }
    }
    expect(unused).toEqual([]);
  });
});
