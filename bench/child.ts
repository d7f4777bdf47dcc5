/** The parent half of ipc.ts: forks a bench child and talks to it. */
import { fork, type ChildProcess } from 'node:child_process';
import type { ChildMessage, ParentRequest, ProcessSample } from './ipc.js';

/** A request without its id (Omit applied to each member of the union). */
type Request = ParentRequest extends infer R ? (R extends unknown ? Omit<R, 'id'> : never) : never;

export interface ChildOptions {
  env?: Record<string, string>;
  execArgv?: string[];
}

export class BenchChild {
  private nextId = 1;
  private readonly pending = new Map<number, (message: ChildMessage) => void>();
  private readonly exited: Promise<number | null>;

  private constructor(
    private readonly child: ChildProcess,
    readonly origin: string,
  ) {
    child.on('message', (message: ChildMessage) => {
      if (message.type !== 'reply') return;
      const settle = this.pending.get(message.id);
      this.pending.delete(message.id);
      settle?.(message);
    });
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  /** Forks `module` (a file URL of a compiled bench entry) and waits for its `ready`. */
  static async start(module: URL, options: ChildOptions = {}): Promise<BenchChild> {
    const child = fork(module, [], {
      env: { ...process.env, ...options.env },
      execArgv: options.execArgv ?? [],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const origin = await new Promise<string>((resolve, reject) => {
      child.on('message', (message: ChildMessage) => {
        if (message.type === 'ready') resolve(message.origin);
        if (message.type === 'failed')
          reject(new Error(`child failed to start: ${message.message}`));
      });
      child.once('exit', (code) => reject(new Error(`child exited with ${code} before ready`)));
    });
    return new BenchChild(child, origin);
  }

  private request(request: Request): Promise<ChildMessage> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, resolve);
      this.child.send({ ...request, id } as ParentRequest, (error) => {
        if (error) {
          this.pending.delete(id);
          reject(error);
        }
      });
    });
  }

  async sample(options: { resetPeak?: boolean; gc?: boolean } = {}): Promise<ProcessSample> {
    const reply = await this.request({ type: 'sample', ...options });
    if (reply.type !== 'reply' || !reply.sample) throw new Error('child sent no sample');
    return reply.sample;
  }

  /** Starts a V8 CPU profile in the child. */
  async profileStart(): Promise<void> {
    const reply = await this.request({ type: 'profile-start' });
    if (reply.type === 'reply' && reply.error) throw new Error(reply.error);
  }

  /** Stops the child's CPU profile and has it written to `file`. */
  async profileStop(file: string): Promise<void> {
    const reply = await this.request({ type: 'profile-stop', file });
    if (reply.type === 'reply' && reply.error) throw new Error(reply.error);
  }

  /** Asks the child to close and exit; kills it if it has not gone within 10 s. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    await this.request({ type: 'stop' }).catch(() => undefined);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await this.exited;
    clearTimeout(timer);
  }
}
