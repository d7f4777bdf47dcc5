#!/usr/bin/env node
/**
 * `tps-agent-launcher`: what the unit runs (docs/fleet.md, "The launcher"). It runs on the
 * package's own Node.js, root's and never updated by the agent (/opt/tps-agent/release, the
 * .deb's), and resolves the start (agent/update-boot.ts) BEFORE anything of the release on
 * trial runs; then it replaces itself (execve: same process, nothing of it stays resident)
 * with `<root>/current/bin/tps-agent.js` on that release's own Node.js
 * (`current/runtime/node`), with the same arguments. A trial start whose Node.js cannot run
 * is recorded here; one that stops after the exec, before it proved healthy, is counted by
 * the next start's judgement (the supervisor restarts it). So a release whose code cannot
 * load, or whose Node.js cannot even start, still has its trial counted and rolled back:
 * nothing that judges it depends on it.
 *
 *   node launcher.js [--root DIR] <the agent's arguments>
 *
 * The update root is /var/lib/tps-agent/update unless `--root DIR` names another (tests,
 * or another layout).
 */
import { spawnSync } from 'node:child_process';
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
  | {
      kind: 'run';
      entry: string;
      runtime: string;
      /** The launcher judged this start: the release is told so and does not count it again. */
      resolved: boolean;
      /** This start is a trial's: the release on trial is `current`. */
      trial: boolean;
    };

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
  const run = (resolved: boolean, trial: boolean): LaunchOutcome => ({
    kind: 'run',
    entry: path.join(plan.root, 'current', RELEASE_ENTRY_FILE),
    runtime: releaseRuntime(plan.root),
    resolved,
    trial,
  });
  if (!plan.runsAgent) return run(false, false);
  const decision = resolveUpdateAtBoot(plan.root, now);
  if (decision.restart) return { kind: 'restart', reason: decision.reason };
  return run(true, decision.trial !== undefined);
}

/**
 * Whether `runtime` runs at all (`--version`), asked only before a trial's start: a release
 * whose Node.js cannot even start is seen here, with the reason, instead of by the next start.
 * Answers why not, or undefined.
 */
export function runtimeProblem(runtime: string): string | undefined {
  const probe = spawnSync(runtime, ['--version'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 30_000,
  });
  if (probe.error) return `its Node.js did not start: ${probe.error.message}`;
  if (probe.status !== 0) {
    const said = probe.stderr.toString().trim().split('\n').at(-1);
    return `its Node.js did not start: ${probe.signal ? `it died of ${probe.signal}` : `it exited with code ${probe.status}`}${said ? `: ${said}` : ''}`;
  }
  return undefined;
}

function main(argv: string[]): void {
  const plan = planLaunch(argv);
  const outcome = decideLaunch(plan, () => new Date());
  if (outcome.kind === 'restart') {
    process.stderr.write(`tps-agent-launcher: ${outcome.reason}; restarting\n`);
    process.exitCode = RESTART_EXIT_CODE;
    return;
  }
  if (outcome.trial) {
    const problem = runtimeProblem(outcome.runtime);
    if (problem) {
      // Kept for the roll-back's reason once the trial's starts run out.
      recordStartFailure(plan.root, problem);
      process.stderr.write(`tps-agent-launcher: the release did not start: ${problem}\n`);
      process.exitCode = 1;
      return;
    }
  }
  // This process becomes the release (same pid, nothing of the launcher stays resident):
  // the unit's Node options (memory, no JIT tiers) apply to it as to the launcher. A start
  // that fails from here on is counted by the next start's judgement.
  process.execve!(
    outcome.runtime,
    [outcome.runtime, ...process.execArgv, outcome.entry, ...plan.args],
    outcome.resolved ? { ...process.env, [BOOT_RESOLVED_ENV]: plan.root } : process.env,
  );
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    main(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(
      `tps-agent-launcher: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    process.exitCode = 1;
  }
}
