#!/usr/bin/env node
/**
 * `tps-agent-launcher`: what the unit runs (docs/fleet.md, "The launcher"). It lives outside
 * the releases (`/opt/tps-agent/launcher.js`, installed by the .deb, never by an update), so
 * a release that cannot even load still has its trial counted and rolled back: the launcher
 * resolves the start (agent/update-boot.ts) BEFORE it imports `<root>/current/bin/tps-agent.js`
 * with the same arguments.
 *
 *   node launcher.js [--root DIR] <the agent's arguments>
 *
 * The update root is the launcher's own folder unless `--root DIR` names another (tests,
 * or a layout other than /opt/tps-agent).
 */
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  BOOT_RESOLVED_ENV,
  RESTART_EXIT_CODE,
  recordStartFailure,
  resolveUpdateAtBoot,
} from '../agent/update-boot.js';

export interface LaunchPlan {
  root: string;
  /** The arguments for the release, `--root` taken out. */
  args: string[];
  /** Whether this start runs the agent (only then is a trial boot counted). */
  runsAgent: boolean;
}

/** Reads `[--root DIR] …`; `ownDir` is the launcher's folder, the default root. */
export function planLaunch(argv: string[], ownDir: string): LaunchPlan {
  let root = path.resolve(ownDir);
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
  { kind: 'restart'; reason: string } | { kind: 'run'; entry: string; resolved: boolean };

/** The start resolved on `root`: restart into the release before, or run `current`. */
export function decideLaunch(plan: LaunchPlan, now: () => Date): LaunchOutcome {
  const entry = path.join(plan.root, 'current/bin/tps-agent.js');
  if (!plan.runsAgent) return { kind: 'run', entry, resolved: false };
  const decision = resolveUpdateAtBoot(plan.root, now);
  if (decision.restart) return { kind: 'restart', reason: decision.reason };
  return { kind: 'run', entry, resolved: true };
}

async function main(argv: string[]): Promise<void> {
  const plan = planLaunch(argv, path.dirname(fileURLToPath(import.meta.url)));
  const outcome = decideLaunch(plan, () => new Date());
  if (outcome.kind === 'restart') {
    process.stderr.write(`tps-agent-launcher: ${outcome.reason}; restarting\n`);
    process.exitCode = RESTART_EXIT_CODE;
    return;
  }
  if (outcome.resolved) process.env[BOOT_RESOLVED_ENV] = plan.root;
  process.argv = [process.argv[0]!, outcome.entry, ...plan.args];
  try {
    await import(pathToFileURL(outcome.entry).href);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // Kept for the roll-back's reason once the trial's starts run out.
    if (outcome.resolved) recordStartFailure(plan.root, message);
    throw error;
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(
      `tps-agent-launcher: the release did not start: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    process.exitCode = 1;
  });
}
