// The deployment recipes of docs/connect.md ("As a sidecar"), checked as far as this machine
// allows. The systemd unit: verified by systemd-analyze where it is installed, and its ExecStart
// run as systemd runs it (its Environment=, its directories) against a real `quicpool start`.
// The Kubernetes manifest: parsed as Kubernetes parses it (YAML 1.1), every field checked against
// the part of the Kubernetes API it uses, the references between its parts, and its connect.toml
// loaded by the config loader. (The Lambda extension: lambda-extension.test.ts.)
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type {} from '@quicpool/pg-fixture';
import { ALL_KEYS, loadConfig } from '../src/config/load.js';
import { loggedPort, startTestPooler, until } from './daemon.js';
import type { Daemon } from './daemon.js';

const upstream = inject('pg');
const deploy = (path: string): string => fileURLToPath(new URL(`../deploy/${path}`, import.meta.url));
const bin = fileURLToPath(new URL('../bin/quicpool', import.meta.url));
let dir: string;
let daemon: Daemon;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'quicpool-deploy-'));
  daemon = await startTestPooler(dir, upstream);
});
afterAll(async () => {
  await daemon?.stop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

/** A unit file's sections: [Section] -> its Key=Value lines in order (comments dropped). */
function parseUnit(text: string): Map<string, [string, string][]> {
  const sections = new Map<string, [string, string][]>();
  let current: [string, string][] | null = null;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const section = /^\[(\w+)\]$/.exec(line);
    if (section !== null) {
      current = [];
      sections.set(section[1] ?? '', current);
      continue;
    }
    const eq = line.indexOf('=');
    if (current === null || eq < 1) throw new Error(`not a unit file line: ${line}`);
    current.push([line.slice(0, eq), line.slice(eq + 1)]);
  }
  return sections;
}

const envName = (key: string): string => `QUICPOOL_${key.replace('.', '_').toUpperCase()}`;

describe('the systemd unit (deploy/systemd/quicpool-connect.service)', () => {
  const unitFile = deploy('systemd/quicpool-connect.service');
  const unit = parseUnit(readFileSync(unitFile, 'utf8'));
  const service = unit.get('Service') ?? [];
  const one = (key: string): string => {
    const v = service.filter(([k]) => k === key).map(([, value]) => value);
    expect(v, key).toHaveLength(1);
    return v[0] ?? '';
  };
  const environment = service.filter(([k]) => k === 'Environment').map(([, v]) => v.split('=') as [string, string]);

  it('is a unit systemd accepts: its sections, its command, config keys that exist, a stop timeout past the drain', () => {
    expect([...unit.keys()]).toEqual(['Unit', 'Service', 'Install']);
    expect(one('ExecStart').split(' ').slice(0, 2)).toEqual(['/usr/local/bin/quicpool', 'connect']);
    for (const [name] of environment) expect(ALL_KEYS.map(envName)).toContain(name);
    expect(one('KillSignal')).toBe('SIGTERM');
    expect(Number(one('TimeoutStopSec'))).toBeGreaterThan(30); // connect.drain_timeout_ms: 30 s
    // systemd-analyze checks the unit as systemd loads it, with its command present (the one the
    // unit names is where `npm install -g` puts it; here, this checkout's).
    const analyze = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
    if (analyze.error === undefined) {
      const copy = join(dir, 'quicpool-connect.service');
      spawnSync('sh', ['-c', `sed 's#/usr/local/bin/quicpool#${bin}#' '${unitFile}' > '${copy}'`]);
      const verify = spawnSync('systemd-analyze', ['verify', copy], { encoding: 'utf8' });
      expect(verify.stderr).toBe('');
      expect(verify.status).toBe(0);
    }
  });

  it('its ExecStart, run as the unit runs it, carries sessions over its socket and drains on SIGTERM', async () => {
    // The unit's paths, moved into this test's directory.
    const runtime = join(dir, 'run', 'quicpool-connect');
    const state = join(dir, 'lib', 'quicpool-connect');
    const config = join(dir, 'connect.toml');
    await mkdir(runtime, { recursive: true });
    await mkdir(state, { recursive: true });
    await writeFile(config, [
      '[connect]',
      `endpoints = ["127.0.0.1:${daemon.port('quic')}"]`,
      `ca_file = "${join(dir, 'certs', 'ca.pem')}"`,
      'server_name = "localhost"',
      'port = 0',
      'metrics_port = 0',
    ].join('\n') + '\n');
    const move = (s: string): string => s
      .replace('/usr/local/bin/quicpool', bin)
      .replace('/etc/quicpool/connect.toml', config)
      .replace(/\/run\/quicpool-connect/g, runtime)
      .replace(/\/var\/lib\/quicpool-connect/g, state);
    expect(one('WorkingDirectory')).toBe('/var/lib/quicpool-connect');
    const [command = '', ...args] = move(one('ExecStart')).split(' ');
    const env = Object.fromEntries(environment.map(([k, v]) => [k, move(v)]));
    const child = spawn(command, args, {
      cwd: move(one('WorkingDirectory')),
      env: { PATH: `${dirname(process.execPath)}:${process.env['PATH'] ?? ''}`, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await until(() => /quicpool connect ready/.test(out) || child.exitCode !== null);
      const port = loggedPort(out, 'tcp');
      expect(existsSync(join(runtime, `.s.PGSQL.${port}`))).toBe(true);
      const c = new pg.Client({ host: runtime, port, user: upstream.user, password: upstream.password, database: upstream.database });
      await c.connect();
      expect((await c.query<{ n: number }>('select 6 * 7 as n')).rows[0]?.n).toBe(42);
      await c.end();
      child.kill(one('KillSignal') as NodeJS.Signals);
      expect(await exited).toBe(0);
      expect(out).toMatch(/draining local sessions/);
      expect(existsSync(join(state, 'tickets'))).toBe(true); // a restart resumes with 0-RTT
    } finally {
      child.kill('SIGKILL');
    }
  });
});

// The Kubernetes API fields the manifest uses (reference: kubernetes.io/docs/reference/kubernetes-api):
// a field not listed here is a typo or a field Kubernetes does not have.
type Shape = 'string' | 'integer' | 'boolean' | 'int-or-string' | { readonly list: Shape } | { readonly map: Shape } | { readonly [field: string]: Shape };
const labels: Shape = { map: 'string' };
const metadata: Shape = { name: 'string', labels };
const httpProbe: Shape = { httpGet: { path: 'string', port: 'int-or-string' }, periodSeconds: 'integer', failureThreshold: 'integer', initialDelaySeconds: 'integer' };
const envVar: Shape = { name: 'string', value: 'string', valueFrom: { secretKeyRef: { name: 'string', key: 'string' } } };
const container: Shape = {
  name: 'string', image: 'string', args: { list: 'string' }, restartPolicy: 'string',
  ports: { list: { name: 'string', containerPort: 'integer' } },
  startupProbe: httpProbe, readinessProbe: httpProbe, livenessProbe: httpProbe,
  resources: { requests: { map: 'string' }, limits: { map: 'string' } },
  securityContext: { runAsNonRoot: 'boolean', runAsUser: 'integer', allowPrivilegeEscalation: 'boolean', readOnlyRootFilesystem: 'boolean', capabilities: { drop: { list: 'string' } } },
  volumeMounts: { list: { name: 'string', mountPath: 'string', subPath: 'string', readOnly: 'boolean' } },
  env: { list: envVar },
};
const KINDS: Readonly<Record<string, Shape>> = {
  ConfigMap: { apiVersion: 'string', kind: 'string', metadata, data: { map: 'string' } },
  Deployment: {
    apiVersion: 'string', kind: 'string', metadata,
    spec: {
      replicas: 'integer',
      selector: { matchLabels: labels },
      template: {
        metadata,
        spec: {
          terminationGracePeriodSeconds: 'integer',
          securityContext: { fsGroup: 'integer' },
          initContainers: { list: container },
          containers: { list: container },
          volumes: { list: { name: 'string', configMap: { name: 'string' }, secret: { secretName: 'string', defaultMode: 'integer' }, emptyDir: {} } },
        },
      },
    },
  },
};

/** Where `v` does not fit `shape`, one line each (none when it fits). */
function misfits(v: unknown, shape: Shape, at: string): string[] {
  if (shape === 'string') return typeof v === 'string' ? [] : [`${at}: a string`];
  if (shape === 'integer') return Number.isInteger(v) ? [] : [`${at}: an integer`];
  if (shape === 'boolean') return typeof v === 'boolean' ? [] : [`${at}: a boolean`];
  if (shape === 'int-or-string') return Number.isInteger(v) || typeof v === 'string' ? [] : [`${at}: an integer or a string`];
  if (typeof v !== 'object' || v === null) return [`${at}: an object`];
  if ('list' in shape && Object.keys(shape).length === 1) {
    return Array.isArray(v) ? v.flatMap((item, i) => misfits(item, shape.list as Shape, `${at}[${i}]`)) : [`${at}: a list`];
  }
  if ('map' in shape && Object.keys(shape).length === 1) {
    return Object.entries(v).flatMap(([k, item]) => misfits(item, shape.map as Shape, `${at}.${k}`));
  }
  const fields = shape as Readonly<Record<string, Shape>>;
  return Object.entries(v).flatMap(([k, item]) => {
    const s = fields[k];
    return s === undefined ? [`${at}.${k}: not a field here`] : misfits(item, s, `${at}.${k}`);
  });
}

interface Manifest {
  readonly configMap: { metadata: { name: string }; data: Record<string, string> };
  readonly deployment: {
    spec: { selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string> }; spec: PodSpec } };
  };
}
interface ContainerSpec {
  name: string; args?: string[]; restartPolicy?: string; ports?: { name: string; containerPort: number }[];
  startupProbe?: ProbeSpec; readinessProbe?: ProbeSpec; livenessProbe?: ProbeSpec;
  volumeMounts?: { name: string; mountPath: string; subPath?: string }[]; env?: { name: string; value?: string }[];
}
interface ProbeSpec { httpGet: { path: string; port: string | number } }
interface PodSpec {
  initContainers: ContainerSpec[]; containers: ContainerSpec[];
  volumes: { name: string; configMap?: { name: string }; secret?: { secretName: string; defaultMode: number }; emptyDir?: object }[];
}

describe('the Kubernetes sidecar manifest (deploy/kubernetes/quicpool-connect-sidecar.yaml)', () => {
  const text = readFileSync(deploy('kubernetes/quicpool-connect-sidecar.yaml'), 'utf8');
  // Kubernetes reads manifests as YAML 1.1 (0440 is octal there).
  const docs = parseAllDocuments(text, { version: '1.1' });

  it('every document parses and uses only fields of its kind', () => {
    expect(docs.map((d) => d.errors)).toEqual([[], []]);
    const values = docs.map((d) => d.toJS() as { kind?: string; apiVersion?: string });
    expect(values.map((v) => `${v.apiVersion}/${v.kind}`)).toEqual(['v1/ConfigMap', 'apps/v1/Deployment']);
    for (const v of values) {
      const shape = KINDS[v.kind ?? ''];
      expect(shape, v.kind).toBeDefined();
      expect(misfits(v, shape ?? {}, v.kind ?? '')).toEqual([]);
    }
  });

  it('its parts fit together: a native sidecar, volumes, probes on /readyz and /healthz, and a connect.toml the agent loads', async () => {
    const [configMap, deployment] = docs.map((d) => d.toJS()) as [Manifest['configMap'], Manifest['deployment']];
    const pod = deployment.spec.template.spec;
    expect(deployment.spec.selector.matchLabels).toEqual(deployment.spec.template.metadata.labels);
    const [sidecar] = pod.initContainers;
    const app = pod.containers[0];
    expect(sidecar?.restartPolicy).toBe('Always'); // a native sidecar: up before the app, down after it
    expect(pod.volumes.filter((v) => v.secret !== undefined).map((v) => v.secret?.defaultMode)).toEqual([0o440, 0o440]); // read by fsGroup

    const volumes = new Map(pod.volumes.map((v) => [v.name, v]));
    for (const m of [...(sidecar?.volumeMounts ?? []), ...(app?.volumeMounts ?? [])]) expect(volumes.has(m.name), m.name).toBe(true);
    const configVolume = pod.volumes.find((v) => v.configMap !== undefined);
    expect(configVolume?.configMap?.name).toBe(configMap.metadata.name);
    const mountOf = (volume: string): string => sidecar?.volumeMounts?.find((m) => m.name === volume)?.mountPath ?? '(not mounted)';

    // connect.toml: as the agent loads it, from where the sidecar's --config says.
    const args = sidecar?.args ?? [];
    expect(args.slice(0, 2)).toEqual(['connect', '--config']);
    const configMount = sidecar?.volumeMounts?.find((m) => m.name === configVolume?.name);
    expect(configMount?.mountPath).toBe(args[2]);
    const file = join(dir, 'k8s-connect.toml');
    await writeFile(file, configMap.data[configMount?.subPath ?? ''] ?? '');
    const config = await loadConfig(file);
    const under = (key: Parameters<typeof config.get>[0], volume: string): void =>
      expect(config.get<string>(key).startsWith(`${mountOf(volume)}/`), `${key} under ${volume}`).toBe(true);
    under('connect.ca_file', 'quicpool-tls');
    under('connect.cert_file', 'quicpool-tls');
    under('connect.key_file', 'quicpool-tls');
    under('connect.users_file', 'quicpool-users');
    under('connect.ticket_file', 'quicpool-state');
    under('connect.login_cache_file', 'quicpool-state');
    expect(volumes.get('quicpool-state')?.emptyDir).toBeDefined(); // writable with readOnlyRootFilesystem
    // Fast start on ("auto" with a certificate and the agent's own password check).
    expect([config.get('connect.fast_start'), config.get('connect.tcp_auth')]).toEqual(['auto', 'password']);

    // The probes reach the metrics endpoint on the pod's address.
    const metricsPort = sidecar?.ports?.find((p) => p.name === 'metrics');
    expect(metricsPort?.containerPort).toBe(config.get('connect.metrics_port'));
    expect(config.get('connect.metrics_host')).toBe('0.0.0.0');
    expect([sidecar?.startupProbe?.httpGet, sidecar?.readinessProbe?.httpGet, sidecar?.livenessProbe?.httpGet]).toEqual([
      { path: '/readyz', port: 'metrics' }, { path: '/readyz', port: 'metrics' }, { path: '/healthz', port: 'metrics' },
    ]);

    // The application reaches the agent in its pod.
    const env = new Map((app?.env ?? []).map((e) => [e.name, e.value]));
    expect([env.get('PGHOST'), env.get('PGPORT'), env.get('PGSSLMODE')]).toEqual([config.get('connect.host'), String(config.get('connect.port')), 'disable']);
  });
});
