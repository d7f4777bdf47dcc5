/**
 * What the update tests share: small agent releases built and signed in the test (their
 * `bin/tps-agent.js` runs this checkout's agent, healthy or with a reader that never
 * answers), a stand-in for the relay's archive route, an MQTT client that publishes update
 * orders and keeps each agent's update status, and a supervisor that starts
 * `<root>/current/bin/tps-agent.js` again whenever it exits, as systemd's Restart= does.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import mqtt, { type MqttClient } from 'mqtt';
import * as tar from 'tar';
import { signManifest } from '../../common/release-signature.js';
import {
  PresenceMessage,
  UpdateStatusMessage,
  parseTopic,
  releaseArchiveName,
  releaseArchivePath,
  terminalTopics,
  type ReleaseManifest,
  type UpdateOrderMessage,
} from '../../protocol/index.js';
import { installRelease, switchCurrent, thisArch } from '../../agent/update-release.js';

const repo = path.resolve(import.meta.dirname, '../..');
export const ARCH = thisArch() ?? 'linux-x64';

export interface ReleaseOptions {
  version: string;
  privateKeyPem: string;
  /**
   * `unhealthy`: the agent runs with a reader that is not there, so it never answers.
   * `broken`: the entry throws as it loads, before any of the agent's code runs.
   */
  health?: 'healthy' | 'unhealthy' | 'broken';
  /**
   * `broken`: the release brings a Node.js (runtime/node) that cannot start, an ELF file
   * cut short as a bad download or another CPU's binary would be; its code is fine.
   */
  runtime?: 'broken';
  /** The manifest's node_abi (default: this Node.js's major). */
  nodeAbi?: string[];
  /** Change the entry after signing: its hash no longer matches the manifest. */
  tamperFile?: boolean;
}

/** Builds `tps-agent-<version>-<arch>.tar.gz` in `dir`; answers its path. */
export async function buildRelease(dir: string, options: ReleaseOptions): Promise<string> {
  const source = fs.mkdtempSync(path.join(dir, `src-${options.version}-`));
  const files: Record<string, { text: string | Buffer; mode: 0o644 | 0o755 }> = {
    'package.json': { text: '{"type":"module"}\n', mode: 0o644 },
    'bin/tps-agent.js': { text: entryScript(options), mode: 0o755 },
  };
  if (options.runtime === 'broken') {
    files['runtime/node'] = {
      text: Buffer.concat([Buffer.from('7f454c46', 'hex'), Buffer.alloc(60)]),
      mode: 0o755,
    };
  }
  for (const [file, { text, mode }] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(source, file)), { recursive: true });
    fs.writeFileSync(path.join(source, file), text, { mode });
  }
  const manifest: ReleaseManifest = {
    name: 'tps-agent',
    version: options.version,
    arch: ARCH,
    node_abi: options.nodeAbi ?? [process.versions.node.split('.')[0]!],
    created_at: new Date().toISOString(),
    files: Object.entries(files).map(([file, { text, mode }]) => ({
      path: file,
      size: Buffer.byteLength(text),
      sha256: createHash('sha256').update(text).digest('hex'),
      mode,
    })),
  };
  const manifestBytes = Buffer.from(JSON.stringify(manifest, null, 2));
  fs.writeFileSync(path.join(source, 'manifest.json'), manifestBytes);
  fs.writeFileSync(
    path.join(source, 'manifest.sig'),
    signManifest(manifestBytes, options.privateKeyPem),
  );
  if (options.tamperFile) {
    fs.appendFileSync(path.join(source, 'bin/tps-agent.js'), '// changed after signing\n');
  }
  const archive = path.join(dir, releaseArchiveName(options.version, ARCH));
  await tar.c({ gzip: true, file: archive, cwd: source, portable: true }, [
    'manifest.json',
    'manifest.sig',
    ...Object.keys(files),
  ]);
  return archive;
}

function entryScript(options: ReleaseOptions): string {
  if (options.health === 'broken') {
    return `// tps-agent ${options.version} (a test release): cannot even load.
throw new Error('tps-agent ${options.version} is broken: it throws as it loads');
`;
  }
  const unhealthy =
    options.health === 'unhealthy'
      ? `
// This release's reader is not there: it never answers, the health check fails.
const at = args.indexOf('--config') + 1;
const config = JSON.parse(fs.readFileSync(args[at], 'utf8'));
config.reader = { port: '/dev/tps-test-no-such-reader' };
args[at] = path.join(path.dirname(args[at]), 'agent-unhealthy.json');
fs.writeFileSync(args[at], JSON.stringify(config));
`
      : '';
  return `// tps-agent ${options.version} (a test release): runs the agent of this checkout.
import fs from 'node:fs';
import path from 'node:path';
const args = process.argv.slice(2);
${unhealthy}
process.argv = [process.argv[0], process.argv[1], 'agent', ...args];
await import(${JSON.stringify(pathToFileURL(path.join(repo, 'bin/tps.ts')).href)});
`;
}

/** Installs a release archive as the first one, `current` pointing at it. */
export async function installFirst(
  root: string,
  archive: string,
  version: string,
  publicKeyPem: string,
) {
  await installRelease({ root, archive, version, arch: ARCH, publicKeyPem });
  switchCurrent(root, version);
}

/** The relay's archive route, for the agent's credential only. */
export async function serveArchives(credential: { username: string; password: string }) {
  const archives = new Map<string, string>();
  const requests: string[] = [];
  const expected = `Basic ${Buffer.from(`${credential.username}:${credential.password}`).toString('base64')}`;
  const server = http.createServer((request, response) => {
    requests.push(request.url ?? '');
    if (request.headers.authorization !== expected) {
      response.writeHead(401).end();
      return;
    }
    const file = [...archives].find(
      ([version]) => `/pos${releaseArchivePath(version, ARCH)}` === request.url,
    )?.[1];
    if (!file) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, {
      'content-type': 'application/gzip',
      'content-length': fs.statSync(file).size,
    });
    fs.createReadStream(file).pipe(response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/pos`,
    archives,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Publishes update orders (retained) and keeps what agents say about their updates. */
export class UpdateDesk {
  readonly client: MqttClient;
  readonly statuses: Array<UpdateStatusMessage & { terminalId: string }> = [];
  readonly presence: Array<PresenceMessage & { terminalId: string }> = [];

  constructor(url: string) {
    this.client = mqtt.connect(url, {
      clientId: `test-desk-${process.pid}-${Math.random().toString(16).slice(2, 8)}`,
      protocolVersion: 4,
      reconnectPeriod: 50,
    });
    this.client.on('connect', () =>
      this.client.subscribe(['tps/v1/t/+/update-status', 'tps/v1/t/+/presence'], { qos: 1 }),
    );
    this.client.on('message', (topic, payload) => {
      const parsed = parseTopic(topic);
      if (!parsed || payload.length === 0) return;
      const json: unknown = JSON.parse(payload.toString());
      if (parsed.kind === 'update-status') {
        this.statuses.push({
          ...UpdateStatusMessage.parse(json),
          terminalId: parsed.terminalId,
        });
      } else if (parsed.kind === 'presence') {
        this.presence.push({ ...PresenceMessage.parse(json), terminalId: parsed.terminalId });
      }
    });
  }

  order(terminalId: string, order: UpdateOrderMessage): void {
    this.client.publish(terminalTopics(terminalId).update, JSON.stringify(order), {
      qos: 1,
      retain: true,
    });
  }

  latest(terminalId: string): UpdateStatusMessage | undefined {
    return this.statuses.filter((s) => s.terminalId === terminalId).at(-1);
  }

  /** The outcome of an order once the agent is idle, running, and connected again. */
  async outcome(terminalId: string, orderId: string, ms = 15_000) {
    await until(
      () => {
        const status = this.latest(terminalId);
        const presence = this.presence.filter((p) => p.terminalId === terminalId).at(-1);
        return (
          status?.phase === 'idle' && status.last?.order_id === orderId && !!presence?.connected
        );
      },
      ms,
      `the outcome of ${orderId}`,
    );
    return this.latest(terminalId)!;
  }

  async close(): Promise<void> {
    await this.client.endAsync(true);
  }
}

/**
 * Starts `<root>/current/bin/tps-agent.js` again whenever it exits; with `launcher`, through
 * bin/tps-agent-launcher.ts, as the packaged unit does.
 */
export class Supervisor {
  starts = 0;
  readonly exits: Array<{ code: number | null; signal: string | null }> = [];
  output = '';
  private child: ChildProcess | undefined;
  private stopped = false;

  constructor(
    private readonly root: string,
    private readonly configFile: string,
    private readonly env: Record<string, string> = {},
    private readonly launcher = false,
  ) {}

  /** The process the supervisor started last (the launcher becomes the agent in it). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(): void {
    this.starts += 1;
    const entry = this.launcher
      ? [path.join(repo, 'bin/tps-agent-launcher.ts'), '--root', this.root]
      : [path.join(this.root, 'current/bin/tps-agent.js')];
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', ...entry, '--config', this.configFile],
      { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...this.env } },
    );
    this.child = child;
    child.stdout!.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    child.once('exit', (code, signal) => {
      this.exits.push({ code, signal });
      if (!this.stopped) setTimeout(() => this.stopped || this.start(), 100);
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise((resolve) => {
      child.once('exit', resolve);
      child.kill('SIGKILL');
    });
  }
}

export function until(check: () => boolean, ms: number, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const poll = setInterval(() => {
      if (check()) {
        clearInterval(poll);
        resolve();
      } else if (Date.now() - started > ms) {
        clearInterval(poll);
        reject(new Error(`timed out waiting for ${what}`));
      }
    }, 25);
  });
}

export interface UpdatableTerminal {
  /** A new folder for the terminal: its releases, config, journal. */
  root: string;
  terminalId: string;
  broker: { url: string; username: string; password: string };
  /** The archive installed first, and its version. */
  first: { archive: string; version: string };
  publicKeyPem: string;
  /** Where the agent downloads releases (a relay's API base, …/pos). */
  relay: string;
  readerDelayMs?: number;
  env?: Record<string, string>;
  /** Started through the launcher (bin/tps-agent-launcher.ts), as the packaged unit does. */
  launcher?: boolean;
}

/**
 * A terminal as installed on hardware: its first release in `releases/`, `current`
 * pointing at it, a config with an update section (5 s to prove health), and its agent
 * started by a supervisor.
 */
export async function startUpdatableTerminal(t: UpdatableTerminal) {
  fs.mkdirSync(t.root, { recursive: true });
  fs.writeFileSync(path.join(t.root, 'release-key.pem'), t.publicKeyPem);
  await installFirst(t.root, t.first.archive, t.first.version, t.publicKeyPem);
  const configFile = path.join(t.root, 'agent.json');
  fs.writeFileSync(
    configFile,
    JSON.stringify({
      terminal_id: t.terminalId,
      broker: t.broker,
      reader: { emulated: { state_file: 'reader.json', delay_ms: t.readerDelayMs ?? 100 } },
      data_dir: 'data',
      log_level: 'info',
      update: { root: t.root, public_key: 'release-key.pem', relay: t.relay, health_deadline_s: 5 },
    }),
  );
  const supervisor = new Supervisor(t.root, configFile, t.env, t.launcher);
  supervisor.start();
  return { root: t.root, configFile, supervisor };
}
