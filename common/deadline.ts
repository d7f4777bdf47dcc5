/**
 * An answer awaited for at most so long: a reader's status, a database's probe. The verdict
 * "no answer" waits for the loop's poll phase after the timer: after a stall of this
 * process (a long synchronous task, a starved CPU) the timer runs before the loop reads an
 * answer that came in time, and that answer must win, or a busy process gives up a lead or
 * calls a working reader dead.
 */
export function withDeadline<T>(
  answer: Promise<T>,
  ms: number,
  message = `no answer within ${ms} ms`,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    answer,
    new Promise<never>((_, reject) => {
      // setImmediate runs after the poll phase that follows the timers.
      timer = setTimeout(() => setImmediate(() => reject(new Error(message))), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
