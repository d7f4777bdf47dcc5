/** The parent half of ipc.ts: forks a bench child and talks to it. */
import { fork, type ChildProcess } from 'node:child_process';
import type {
  ChildMessage,
  FleetConnectOptions,
  FleetReply,
  ParentRequest,
  ProcessSample,
  SwarmCommand,
  SwarmStats,
} from './ipc.js';

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
    /** The relay's MQTT broker (mqtt://host:port), for the relay child. */
    readonly brokerUrl: string | undefined,
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
    const ready = await new Promise<Extract<ChildMessage, { type: 'ready' }>>((resolve, reject) => {
      child.on('message', (message: ChildMessage) => {
        if (message.type === 'ready') resolve(message);
        if (message.type === 'failed')
          reject(new Error(`child failed to start: ${message.message}`));
      });
      child.once('exit', (code) => reject(new Error(`child exited with ${code} before ready`)));
    });
    return new BenchChild(child, ready.origin, ready.brokerUrl);
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

  /** Wake-up servers: when each transaction's result was taken in (epoch ms, µs precision). */
  async reportTimes(): Promise<Map<string, number>> {
    const reply = await this.request({ type: 'report-times' });
    if (reply.type !== 'reply' || !reply.reportTimes) {
      throw new Error(reply.type === 'reply' && reply.error ? reply.error : 'child sent no times');
    }
    return new Map(reply.reportTimes);
  }

  /** Fleet child: registers `count` terminals through the relay's API. */
  async fleetRegister(count: number, concurrency: number): Promise<FleetReply> {
    return this.fleetReply(await this.request({ type: 'fleet-register', count, concurrency }));
  }

  /** Fleet child: starts one agent per registered terminal, at a ramp. */
  async fleetConnect(options: FleetConnectOptions): Promise<FleetReply> {
    return this.fleetReply(await this.request({ type: 'fleet-connect', options }));
  }

  private fleetReply(reply: ChildMessage): FleetReply {
    if (reply.type !== 'reply') throw new Error('child sent no reply');
    if (reply.error) throw new Error(reply.error);
    if (!reply.fleet) throw new Error('child sent no fleet reply');
    return reply.fleet;
  }

  /** Swarm child: a command; `stats` answers the counts. */
  async swarm(command: SwarmCommand): Promise<SwarmStats | undefined> {
    const reply = await this.request({ type: 'swarm', command });
    if (reply.type !== 'reply') throw new Error('child sent no reply');
    if (reply.error) throw new Error(reply.error);
    return reply.swarm;
  }

  /** Sends the child a signal (the relay closes on SIGTERM) and waits until it has exited. */
  /** For reading its CPU time from /proc (proc-usage.ts). */
  get pid(): number {
    return this.child.pid ?? 0;
  }

  async signal(signal: NodeJS.Signals): Promise<number | null> {
    if (this.child.exitCode === null) this.child.kill(signal);
    return this.exited;
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
