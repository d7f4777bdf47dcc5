/**
 * One create at a time per terminal, first come first served: the service refuses a
 * second transaction while one runs (TERMINAL_BUSY), so payments of one client on one
 * terminal wait their turn instead of being refused.
 */
export class TerminalLocks {
  private readonly tails = new Map<string, Promise<void>>();

  /** Resolves with the release function once it is this caller's turn; rejects when `signal` aborts first. */
  async acquire(terminalId: string, signal: AbortSignal): Promise<() => void> {
    const previous = this.tails.get(terminalId) ?? Promise.resolve();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => held);
    this.tails.set(terminalId, tail);
    const unlock = () => {
      release();
      if (this.tails.get(terminalId) === tail) this.tails.delete(terminalId);
    };
    let onAbort!: () => void;
    const aborted = new Promise<'aborted'>((resolve) => {
      onAbort = () => resolve('aborted');
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
    const turn = await Promise.race([previous.then(() => 'ready' as const), aborted]);
    signal.removeEventListener('abort', onAbort);
    if (turn === 'aborted') {
      // Still in the queue: pass the turn on as soon as it comes.
      void previous.then(unlock);
      throw signal.reason;
    }
    return unlock;
  }
}
