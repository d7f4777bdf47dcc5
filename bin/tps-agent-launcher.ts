#!/usr/bin/env node
/**
 * `tps-agent-launcher`: what the unit runs (docs/fleet.md, "The launcher"). It runs on the
 * package's own Node.js, root's and never updated by the agent (/opt/tps-agent/release, the
 * .deb's), and resolves the start (agent/update-boot.ts) BEFORE anything of the release on
 * trial runs; then it starts `<root>/current/bin/tps-agent.js` on that release's own Node.js
 * (`current/runtime/node`) as a child with the same arguments and exits as it exits. So a
 * release whose code cannot load, or whose Node.js cannot even start, still has its trial
 * counted and rolled back: nothing that judges it depends on it.
 *
 *   node launcher.js [--root DIR] <the agent's arguments>
 *
 * The update root is /var/lib/tps-agent/update unless `--root DIR` names another (tests,
 * or another layout).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  BOOT_RESOLVED_ENV,
  RESTART_EXIT_CODE,
  recordStartFailure,
  resolveUpdateAtBoot,
} from '../agent/update-boot.js';
import {
  DEFAULT_UPDATE_ROOT,
  RELEASE_ENTRY_FILE,
  RELEASE_RUNTIME_FILE,
} from '../agent/update-release.js';

export interface LaunchPlan {
  root: string;
  /** The arguments for the release, `--root` taken out. */
  args: string[];
  /** Whether this start runs the agent (only then is a trial boot counted). */
  runsAgent: boolean;
}

/** Reads `[--root DIR] …`; without it, the packaged layout's update root. */
export function planLaunch(argv: string[], defaultRoot = DEFAULT_UPDATE_ROOT): LaunchPlan {
  let root = path.resolve(defaultRoot);
  const args = [...argv];
  if (args[0] === '--root') {
    if (!args[1]) throw new Error('--root needs a directory');
    root = path.resolve(args[1]);
    args.splice(0, 2);
  }
  // `doctor`, `pair`, `--version`, `--help`: a person at the terminal, not a start to count.
  const runsAgent = args.length > 0 && args.includes('--config') && !/^[a-z]/.test(args[0]!);
  return { root, args, runsAgent };
}

export type LaunchOutcome =
  | { kind: 'restart'; reason: string }
  | { kind: 'run'; entry: string; runtime: string; resolved: boolean };

/**
 * The Node.js that runs `current`: the release's own; a release that brings none (built
 * before releases did, or a test's) runs on the launcher's.
 */
export function releaseRuntime(root: string): string {
  const own = path.join(root, 'current', RELEASE_RUNTIME_FILE);
  return fs.existsSync(own) ? own : process.execPath;
}

/** The start resolved on `root`: restart into the release before, or run `current`. */
export function decideLaunch(plan: LaunchPlan, now: () => Date): LaunchOutcome {
  const run = (resolved: boolean): LaunchOutcome => ({
    kind: 'run',
    entry: path.join(plan.root, 'current', RELEASE_ENTRY_FILE),
    runtime: releaseRuntime(plan.root),
    resolved,
  });
  if (!plan.runsAgent) return run(false);
  const decision = resolveUpdateAtBoot(plan.root, now);
  if (decision.restart) return { kind: 'restart', reason: decision.reason };
  return run(true);
}

/** Kept of the release's error output, for the roll-back's reason. */
const STDERR_TAIL = 2000;

/**
 * Runs the release as a child: its exit code (or 1 when it could not start, or died of a
 * signal) is the launcher's. Signals the supervisor sends (SIGTERM on stop) go to it.
 */
function runRelease(outcome: Extract<LaunchOutcome, { kind: 'run' }>, plan: LaunchPlan) {
  return new Promise<{ code: number; failure?: string }>((resolve) => {
    // The unit's Node options (memory, no JIT tiers) apply to the agent as to the launcher.
    const child = spawn(outcome.runtime, [...process.execArgv, outcome.entry, ...plan.args], {
      stdio: ['inherit', 'inherit', 'pipe'],
      env: outcome.resolved ? { ...process.env, [BOOT_RESOLVED_ENV]: plan.root } : process.env,
    });
    let tail = '';
    child.stderr.on('data', (chunk: Buffer) => {
      process.stderr.write(chunk);
      tail = (tail + chunk.toString()).slice(-STDERR_TAIL);
    });
    const forward = (signal: NodeJS.Signals) => () => child.kill(signal);
    for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
      process.on(signal, forward(signal));
    }
    child.once('error', (error) =>
      resolve({ code: 1, failure: `its Node.js did not start: ${error.message}` }),
    );
    child.once('close', (code, signal) => {
      if (code === 0 || code === RESTART_EXIT_CODE) return resolve({ code });
      const said = errorLine(tail);
      resolve({
        code: code ?? 1,
        failure: `${signal ? `it died of ${signal}` : `it exited with code ${code}`}${said ? `: ${said}` : ''}`,
      });
    });
  });
}

/** The line that names the error in what the release wrote last (Node's trace, or its own). */
export function errorLine(stderr: string): string | undefined {
  const lines = stderr
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('at ') && !/^Node\.js v\d/.test(line));
  return lines.findLast((line) => /^[A-Za-z]*Error\b/.test(line)) ?? lines.at(-1);
}

async function main(argv: string[]): Promise<void> {
  const plan = planLaunch(argv);
  const outcome = decideLaunch(plan, () => new Date());
  if (outcome.kind === 'restart') {
    process.stderr.write(`tps-agent-launcher: ${outcome.reason}; restarting\n`);
    process.exitCode = RESTART_EXIT_CODE;
    return;
  }
  const { code, failure } = await runRelease(outcome, plan);
  // Kept for the roll-back's reason once the trial's starts run out (outside a trial,
  // nothing is recorded).
  if (failure && outcome.resolved) recordStartFailure(plan.root, failure);
  if (failure) process.stderr.write(`tps-agent-launcher: the release stopped: ${failure}\n`);
  process.exitCode = code;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(
      `tps-agent-launcher: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    process.exitCode = 1;
  });
}
