/**
 * The child half of ipc.ts: samples RSS every 100 ms, answers the parent's requests
 * (samples, a CPU profile of a chosen window), and exits when asked or when the parent
 * goes away.
 */
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import type {
  ChildMessage,
  FleetAgents,
  FleetReply,
  FleetRequest,
  ParentRequest,
  ProcessSample,
  SwarmCommand,
  SwarmStats,
} from './ipc.js';

export interface ChildHooks {
  parked?: () => number;
  reportsTaken?: () => number;
  /** The agent fleet: its agents for samples, and its own requests. */
  agents?: () => FleetAgents;
  fleet?: (request: FleetRequest) => Promise<FleetReply>;
  /** The wake-up servers: when each transaction's result was taken in (or its timer fired). */
  reportTimes?: () => Array<[string, number]>;
  /** The fleet phase's swarm of lightweight agents. */
  swarm?: (command: SwarmCommand) => Promise<SwarmStats | undefined>;
  stop: () => Promise<void>;
}

const SAMPLE_INTERVAL_MS = 100;

export function send(message: ChildMessage): void {
  process.send?.(message);
}

/** A V8 CPU profile of this process between start() and stop(). */
class Profiler {
  private session: Session | undefined;

  async start(): Promise<void> {
    this.session = new Session();
    this.session.connect();
    await this.session.post('Profiler.enable');
    await this.session.post('Profiler.start');
  }

  async stop(file: string): Promise<void> {
    if (!this.session) throw new Error('no profile running');
    const { profile } = await this.session.post('Profiler.stop');
    this.session.disconnect();
    this.session = undefined;
    fs.writeFileSync(file, JSON.stringify(profile));
  }
}

/**
 * CPU time of this process's main thread, from /proc (utime and stime, fields 14 and 15
 * of stat(5), in ticks of 1/100 s); undefined where there is no /proc.
 */
function mainThreadCpuMs(): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

export function serveParent(hooks: ChildHooks): void {
  let peakRss = process.memoryUsage.rss();
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage.rss());
  }, SAMPLE_INTERVAL_MS);
  sampler.unref();
  const profiler = new Profiler();

  const sample = (): ProcessSample => {
    const rss = process.memoryUsage.rss();
    const cpu = process.cpuUsage();
    peakRss = Math.max(peakRss, rss);
    return {
      rss,
      peakRss,
      heapUsed: process.memoryUsage().heapUsed,
      cpuMs: (cpu.user + cpu.system) / 1000,
      mainThreadCpuMs: mainThreadCpuMs(),
      sockets: process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length,
      ...(hooks.parked ? { parked: hooks.parked() } : {}),
      ...(hooks.reportsTaken ? { reportsTaken: hooks.reportsTaken() } : {}),
      ...(hooks.agents ? { agents: hooks.agents() } : {}),
    };
  };

  const stop = () => {
    clearInterval(sampler);
    hooks.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`bench child: stop failed: ${String(error)}\n`);
        process.exit(1);
      },
    );
  };

  const answer = (id: number, work: Promise<void>) =>
    work.then(
      () => send({ type: 'reply', id }),
      (error: unknown) => send({ type: 'reply', id, error: String(error) }),
    );

  process.on('message', (message: ParentRequest) => {
    switch (message.type) {
      case 'sample':
        if (message.gc) globalThis.gc?.();
        if (message.resetPeak) peakRss = process.memoryUsage.rss();
        send({ type: 'reply', id: message.id, sample: sample() });
        break;
      case 'profile-start':
        void answer(message.id, profiler.start());
        break;
      case 'profile-stop':
        void answer(message.id, profiler.stop(message.file));
        break;
      case 'fleet-register':
      case 'fleet-connect': {
        const fleet = hooks.fleet;
        if (!fleet) {
          send({ type: 'reply', id: message.id, error: 'not a fleet child' });
          break;
        }
        fleet(message).then(
          (reply) => send({ type: 'reply', id: message.id, fleet: reply }),
          (error: unknown) =>
            send({
              type: 'reply',
              id: message.id,
              error: error instanceof Error ? (error.stack ?? error.message) : String(error),
            }),
        );
        break;
      }
      case 'report-times':
        send({
          type: 'reply',
          id: message.id,
          ...(hooks.reportTimes
            ? { reportTimes: hooks.reportTimes() }
            : { error: 'this child records no report times' }),
        });
        break;
      case 'swarm': {
        const swarm = hooks.swarm;
        if (!swarm) {
          send({ type: 'reply', id: message.id, error: 'not a swarm child' });
          break;
        }
        swarm(message.command).then(
          (stats) => send({ type: 'reply', id: message.id, ...(stats ? { swarm: stats } : {}) }),
          (error: unknown) => send({ type: 'reply', id: message.id, error: String(error) }),
        );
        break;
      }
      case 'stop':
        send({ type: 'reply', id: message.id });
        stop();
        break;
    }
  });
  process.once('disconnect', stop);
}

/** Reports a start failure to the parent and exits. */
export function failStart(error: unknown): void {
  send({
    type: 'failed',
    message: error instanceof Error ? (error.stack ?? error.message) : String(error),
  });
  process.exitCode = 1;
  process.disconnect?.();
}
