// The driver programs of programs/ (psycopg 3, asyncpg, pg8000, pgjdbc, pgx v4): whether this
// machine has each driver (all come from Debian; PyPI, Maven and the Go proxy are not used), the
// one build step the compiled ones need, and running a program against a host and port.
import { execFile } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const DRIVER_NAMES = ['psycopg', 'asyncpg', 'pg8000', 'pgjdbc', 'pgx'] as const;
export type DriverName = (typeof DRIVER_NAMES)[number];

const PROGRAMS = join(dirname(fileURLToPath(import.meta.url)), 'programs');
/** Debian's Python: a pyenv python3 earlier on PATH would not see Debian's packages. */
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const JDBC_JAR = '/usr/share/java/postgresql.jar';
const GOPATH = '/usr/share/gocode';
const PGX_SOURCE = join(GOPATH, 'src/github.com/jackc/pgx/v4/conn.go');

/** How to start a built program: the file and the arguments before the tag and schema. */
export interface Command {
  readonly file: string;
  readonly args: readonly string[];
}

export interface Driver {
  readonly name: DriverName;
  /** The Debian packages it needs (what the missing-driver message and `.ci/run` install). */
  readonly packages: readonly string[];
  /** null when the driver is there, else what is missing and the apt-get line that brings it. */
  missing(): Promise<string | null>;
  /** Compiles the program where needed (into `buildDir`) and says how to run it. */
  build(buildDir: string): Promise<Command>;
}

interface Exec {
  readonly stdout: string;
  readonly stderr: string;
}

/** Children still running, so the test can check that none is left (and end them if so). */
export const running = new Set<ChildProcess>();

function exec(file: string, args: readonly string[], o: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<Exec> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      file,
      args,
      { cwd: o.cwd, env: o.env ?? process.env, timeout: o.timeoutMs ?? 60_000, killSignal: 'SIGKILL', maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        running.delete(child);
        if (error) reject(Object.assign(new Error(`${file} ${args.join(' ')}: ${error.message}\n${stderr.slice(-4_000)}`), { stdout, stderr }));
        else resolve({ stdout, stderr });
      },
    );
    running.add(child);
  });
}

const works = (file: string, args: readonly string[]): Promise<boolean> =>
  exec(file, args, { timeoutMs: 30_000 }).then(
    () => true,
    () => false,
  );

const aptLine = (packages: readonly string[]): string => `apt-get install -y --no-install-recommends ${packages.join(' ')}`;

function python(name: DriverName, module: string, pkg: string, file: string): Driver {
  return {
    name,
    packages: [pkg],
    missing: async () => ((await works(PYTHON, ['-c', `import ${module}`])) ? null : `${name}: Python module ${module} is not installed for ${PYTHON} (Debian: ${aptLine([pkg])})`),
    build: () => Promise.resolve({ file: PYTHON, args: [join(PROGRAMS, file)] }),
  };
}

export const DRIVERS: readonly Driver[] = [
  python('psycopg', 'psycopg', 'python3-psycopg', 'psycopg_prog.py'),
  python('asyncpg', 'asyncpg', 'python3-asyncpg', 'asyncpg_prog.py'),
  python('pg8000', 'pg8000', 'python3-pg8000', 'pg8000_prog.py'),
  {
    name: 'pgjdbc',
    packages: ['default-jdk-headless', 'libpostgresql-jdbc-java'],
    missing: async () => {
      const want: string[] = [];
      if (!(await works('javac', ['-version'])) || !(await works('java', ['-version']))) want.push('default-jdk-headless');
      if (!existsSync(JDBC_JAR)) want.push('libpostgresql-jdbc-java');
      return want.length === 0 ? null : `pgjdbc: ${want.includes('default-jdk-headless') ? 'a JDK (java, javac)' : ''}${want.length === 2 ? ' and ' : ''}${want.includes('libpostgresql-jdbc-java') ? JDBC_JAR : ''} not installed (Debian: ${aptLine(want)})`;
    },
    build: async (buildDir) => {
      // Compiled once (1-2 s); `java Pgjdbc.java` would compile again on every run.
      const out = join(buildDir, 'java');
      await mkdir(out, { recursive: true });
      await exec('javac', ['-nowarn', '-d', out, '-cp', JDBC_JAR, join(PROGRAMS, 'Pgjdbc.java')]);
      // C1 only and the serial collector: a short run spends less CPU on the JIT and GC threads.
      return { file: 'java', args: ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC', '-cp', `${out}:${JDBC_JAR}`, 'Pgjdbc'] };
    },
  },
  {
    name: 'pgx',
    packages: ['golang-go', 'golang-github-jackc-pgx-v4-dev'],
    missing: async () => {
      const want: string[] = [];
      if (!(await works('go', ['version']))) want.push('golang-go');
      if (!existsSync(PGX_SOURCE)) want.push('golang-github-jackc-pgx-v4-dev');
      return want.length === 0 ? null : `pgx: ${want.join(' and ')} not installed (Debian: ${aptLine(want)})`;
    },
    build: async (buildDir) => {
      // Offline, in GOPATH mode against Debian's sources. Go's own build cache (GOCACHE, else
      // ~/.cache/go-build) makes a second run's build take ~1 s instead of 10-20 s; without a home
      // the cache goes into buildDir (removed after the run).
      const bin = join(buildDir, 'pgx-prog');
      const env: NodeJS.ProcessEnv = { ...process.env, GO111MODULE: 'off', GOPATH, GOFLAGS: '', CGO_ENABLED: '0' };
      if (!env.GOCACHE && !env.HOME && !env.XDG_CACHE_HOME) env.GOCACHE = join(buildDir, 'gocache');
      await exec('go', ['build', '-o', bin, '.'], { cwd: join(PROGRAMS, 'pgx'), env, timeoutMs: 180_000 });
      return { file: bin, args: [] };
    },
  },
];

export interface Endpoint {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly database: string;
}

/**
 * The environment of a program: this process's, less every libpq variable (PGSSLMODE, PGOPTIONS ...
 * of the caller's shell), plus the endpoint. Each driver keeps its own defaults otherwise (TLS
 * 'prefer' where it has one: Postgres says yes, the pooler and the agent say no).
 */
function programEnv(e: Endpoint): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('PG')) env[k] = v;
  return { ...env, PGHOST: e.host, PGPORT: String(e.port), PGUSER: e.user, PGDATABASE: e.database };
}

export type Outcome = { readonly ok: true; readonly result: unknown; readonly ms: number } | { readonly ok: false; readonly error: string; readonly ms: number };

/** Runs a built program; its last line of output is its JSON result. Never rejects. */
export async function runProgram(cmd: Command, endpoint: Endpoint, tag: string, schema: string, timeoutMs = 90_000): Promise<Outcome> {
  const started = Date.now();
  try {
    const { stdout } = await exec(cmd.file, [...cmd.args, tag, schema], { env: programEnv(endpoint), timeoutMs });
    const last = stdout.trim().split('\n').at(-1) ?? '';
    return { ok: true, result: JSON.parse(last) as unknown, ms: Date.now() - started };
  } catch (e) {
    return { ok: false, error: e instanceof Error ? e.message : String(e), ms: Date.now() - started };
  }
}

/** The steps of a result that ended in an error (`{ error, sqlstate, message }`), with it. */
export function failedSteps(result: unknown): string[] {
  if (typeof result !== 'object' || result === null) return ['(not a JSON object)'];
  return Object.entries(result)
    .filter(([, v]) => typeof v === 'object' && v !== null && 'error' in v)
    .map(([k, v]) => `${k}: ${JSON.stringify(v)}`);
}
