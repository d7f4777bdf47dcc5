/**
 * The machine's `mosquitto` run on the files `tps broker mosquitto` writes (a password
 * file and an ACL), on free ports of its own: one listener for agents, one for relays, as
 * `tps broker mosquitto` prints. `reload()` is the operator's SIGHUP after writing the
 * files again. Also an anonymous one, as .ci/run starts for MQTT_URL, that a test stops
 * and starts again.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { mosquittoConf } from '../../cloud/mqtt/broker-files.js';
import { freePorts } from './e2e-parts.js';

export const MOSQUITTO_BINARY = [
  '/usr/sbin/mosquitto',
  '/usr/local/sbin/mosquitto',
  '/usr/bin/mosquitto',
  '/usr/local/bin/mosquitto',
  '/opt/homebrew/sbin/mosquitto',
].find((p) => fs.existsSync(p));

export interface PasswordMosquitto {
  /** The agents' listener. */
  url: string;
  /** The relays' listener. */
  relayUrl: string;
  /** Reads the password file and the ACL again (SIGHUP). */
  reload(): void;
  output(): string;
  stop(): Promise<void>;
}

export async function startPasswordMosquitto(
  dir: string,
  brokerDir: string,
): Promise<PasswordMosquitto> {
  if (!MOSQUITTO_BINARY) throw new Error('no mosquitto binary on this machine');
  // A port free when asked may be taken before Mosquitto binds it: try another.
  for (let attempt = 1; ; attempt++) {
    const [port, relayPort] = await freePorts(2);
    const conf = path.join(dir, 'mosquitto.conf');
    fs.writeFileSync(
      conf,
      [
        mosquittoConf(
          { passwordFile: path.join(brokerDir, 'passwd'), aclFile: path.join(brokerDir, 'acl') },
          {
            agents: { port: port!, host: '127.0.0.1' },
            relays: { port: relayPort!, host: '127.0.0.1' },
          },
        ),
        'persistence false',
        'log_dest stderr',
        'log_type error',
        'log_type warning',
        'log_type notice',
        'log_type information',
        // Started as root, Mosquitto would read the 0600 files as user 'mosquitto'.
        ...(process.getuid?.() === 0 ? ['user root'] : []),
        '',
      ].join('\n'),
    );
    const { child, output, started } = await runMosquitto(conf);
    if (started) {
      return {
        url: `mqtt://127.0.0.1:${port}`,
        relayUrl: `mqtt://127.0.0.1:${relayPort}`,
        reload: () => child.kill('SIGHUP'),
        output,
        stop: () => stopMosquitto(child),
      };
    }
    if (attempt === 3) throw new Error(`mosquitto did not start:\n${output()}`);
  }
}

/**
 * A Mosquitto that lets anyone in, configured as .ci/run starts one (Nagle off, nothing
 * kept across a restart), on `port`, or a free one. A test stops it and starts it again on
 * the same port: a broker's restart, every session and retained message gone.
 */
export interface AnonymousMosquitto {
  url: string;
  port: number;
  output(): string;
  stop(): Promise<void>;
}

export async function startAnonymousMosquitto(
  dir: string,
  port?: number,
): Promise<AnonymousMosquitto> {
  if (!MOSQUITTO_BINARY) throw new Error('no mosquitto binary on this machine');
  // A port free when asked may be taken before Mosquitto binds it: try another, unless the
  // caller needs that port (a restart).
  for (let attempt = 1; ; attempt++) {
    const listen = port ?? (await freePorts(1))[0]!;
    const conf = path.join(dir, 'mosquitto-anonymous.conf');
    fs.writeFileSync(
      conf,
      [
        `listener ${listen} 127.0.0.1`,
        'allow_anonymous true',
        'set_tcp_nodelay true',
        'persistence false',
        'log_dest stderr',
        'log_type error',
        'log_type warning',
        'log_type notice',
        'log_type information',
        '',
      ].join('\n'),
    );
    const { child, output, started } = await runMosquitto(conf);
    if (started) {
      return {
        url: `mqtt://127.0.0.1:${listen}`,
        port: listen,
        output,
        stop: () => stopMosquitto(child),
      };
    }
    if (attempt === 3 || port !== undefined)
      throw new Error(`mosquitto did not start:\n${output()}`);
  }
}

/** Runs `mosquitto -c conf` until it says it runs; one that did not start is killed. */
async function runMosquitto(
  conf: string,
): Promise<{ child: ChildProcess; output: () => string; started: boolean }> {
  let output = '';
  const child: ChildProcess = spawn(MOSQUITTO_BINARY!, ['-c', conf], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const started = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 10_000);
    child.stderr!.on('data', () => {
      if (/mosquitto version \S+ running/.test(output)) {
        clearTimeout(timer);
        resolve(true);
      }
    });
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(false);
    });
  });
  if (!started) child.kill('SIGKILL');
  return { child, output: () => output, started };
}

async function stopMosquitto(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}
