/**
 * The machine's `mosquitto` run on the files `tps broker mosquitto` writes (a password
 * file and an ACL), on free ports of its own: one listener for agents, one for relays, as
 * `tps broker mosquitto` prints. `reload()` is the operator's SIGHUP after writing the
 * files again.
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
    let output = '';
    const child: ChildProcess = spawn(MOSQUITTO_BINARY, ['-c', conf], {
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
    if (started) {
      return {
        url: `mqtt://127.0.0.1:${port}`,
        relayUrl: `mqtt://127.0.0.1:${relayPort}`,
        reload: () => child.kill('SIGHUP'),
        output: () => output,
        stop: async () => {
          if (child.exitCode !== null || child.signalCode !== null) return;
          const exited = new Promise((resolve) => child.once('exit', resolve));
          child.kill('SIGTERM');
          await exited;
        },
      };
    }
    child.kill('SIGKILL');
    if (attempt === 3) throw new Error(`mosquitto did not start:\n${output}`);
  }
}
