/**
 * The relay as a separate process (`tps cloud`), for tests that kill it. It listens on
 * a free port, which the banner on stderr tells.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { repoRoot, tpsArgv } from './tps-command.js';

export interface RelayProcess {
  child: ChildProcess;
  /** e.g. http://127.0.0.1:41234/pos */
  baseUrl: string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** Runs `tps` as a user runs it after a build. */
export function spawnTps(args: string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, tpsArgv(args), {
    cwd: repoRoot,
    env: { ...process.env, TPS_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

export function startRelayProcess(env: Record<string, string>): Promise<RelayProcess> {
  const child = spawnTps(['cloud'], {
    TPS_PORT: '0',
    TPS_MQTT_PORT: '0',
    TPS_HOST: '127.0.0.1',
    ...env,
  });
  return new Promise((resolve, reject) => {
    let stderr = '';
    const timer = setTimeout(() => reject(new Error(`relay did not start:\n${stderr}`)), 20_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /listening on (https?:\/\/\S+?\/pos)\//.exec(stderr);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve({
          child,
          baseUrl: match[1],
          kill: (signal = 'SIGKILL') =>
            new Promise((done) => {
              if (child.exitCode !== null || child.signalCode !== null) return done();
              child.once('exit', () => done());
              child.kill(signal);
            }),
        });
      }
    });
    child.stdout!.resume();
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`relay exited with ${code}:\n${stderr}`));
    });
  });
}
