/** The agent's link to the broker through a TCP switch a test cuts and restores: a real lost connection. */
// One switch for the tests and the bench (bench/link-switch.ts).
export { LinkSwitch } from '../../bench/link-switch.js';

/** Turns the event loop until `done` answers true; fails after `attempts` looks. */
export async function until(what: string, done: () => boolean | Promise<boolean>, attempts = 1500) {
  for (let i = 0; i < attempts; i++) {
    if (await done()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`never happened: ${what}`);
}
