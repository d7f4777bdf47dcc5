/**
 * The messages between the bench and its child processes (the bare server, the relay,
 * the agent fleet). A child reports `ready` once it listens, then answers each request
 * by its id.
 */

/** What a child knows about itself: memory and, for the relay, its parked long polls. */
export interface ProcessSample {
  /** Resident set size now, bytes. */
  rss: number;
  /** Largest RSS seen by the 100 ms sampler since start or the last reset, bytes. */
  peakRss: number;
  heapUsed: number;
  /** CPU time (user + system) used by the process since it started, ms. */
  cpuMs: number;
  /** CPU time of the main thread alone (Linux), where the event loop runs. */
  mainThreadCpuMs?: number;
  /** Open TCP sockets of the process (listening socket included). */
  sockets: number;
  /** Long polls parked on the relay's change feed; absent for the other children. */
  parked?: number;
  /** Reports the relay has taken in, when it counts them (BENCH_COUNT_REPORTS=1). */
  reportsTaken?: number;
  /** The agent fleet's agents; absent for the other children. */
  agents?: FleetAgents;
}

/** The agents of the fleet child, as the fleet sees them. */
export interface FleetAgents {
  started: number;
  /** Agents whose MQTT link has its CONNACK now. */
  connected: number;
  /** Warnings and errors the agents logged, by message ("3× disconnected from the broker"). */
  warnings: string;
}

/** A terminal the fleet registered with POST /pos/v1/terminal/create. */
export interface FleetTerminal {
  terminal_id: string;
  /** The POS credential of the terminal. */
  username: string;
  password: string;
}

export interface FleetConnectOptions {
  /** Agents started per second (a ramp: a busy process accepts ≈ 100-150 connections a second). */
  ratePerSecond: number;
  /** The emulated reader's delay for ordinary payments (trigger amounts set their own). */
  delayMs: number;
  heartbeatS: number;
}

/** A terminal of the fleet phase's swarm: its id and its agent's broker credential. */
export interface SwarmTerminal {
  id: string;
  password: string;
}

/** What the bench asks of a swarm child (bench/fleet-swarm.ts). */
export type SwarmCommand =
  /** Connects one lightweight agent per terminal, `ratePerSecond` a second. */
  | {
      kind: 'start';
      brokerUrl: string;
      terminals: SwarmTerminal[];
      ratePerSecond: number;
      heartbeatMs: number;
    }
  /** Every agent beats at this period from now on (each at its own phase of it). */
  | { kind: 'period'; heartbeatMs: number }
  /** Starts counting reports (sent, acknowledged, within 1 s) afresh. */
  | { kind: 'reset' }
  | { kind: 'stats' };

/** The swarm's counts since the last reset; `connected` and `reporting` are now. */
export interface SwarmStats {
  agents: number;
  connected: number;
  /** Connected, with a report-ack received since the latest connect. */
  reporting: number;
  /** Reports published since the reset that are at least 1 s old, and of those, acked within 1 s. */
  reportsDue: number;
  ackedWithin1s: number;
  /** Report-ack latencies since the reset, ms, as recorded (the bench merges them). */
  ackMs: number[];
  /** transaction.start commands taken (distinct command ids), and transactions charged twice. */
  starts: number;
  chargedTwice: number;
  /** Connection errors and closes since the start, by message. */
  problems: string;
}

export type ParentRequest =
  | { id: number; type: 'sample'; resetPeak?: boolean; gc?: boolean }
  | { id: number; type: 'profile-start' }
  /** Stops the CPU profile and writes it (V8 .cpuprofile JSON) to `file`. */
  | { id: number; type: 'profile-stop'; file: string }
  /** Fleet: registers `count` terminals (account credential), `concurrency` at a time. */
  | { id: number; type: 'fleet-register'; count: number; concurrency: number }
  /** Fleet: starts one agent per registered terminal; answers once all are started. */
  | { id: number; type: 'fleet-connect'; options: FleetConnectOptions }
  /** Wake-up servers: when each transaction's result was taken in (relay: BENCH_REPORT_TIMES=1). */
  | { id: number; type: 'report-times' }
  | { id: number; type: 'swarm'; command: SwarmCommand }
  | { id: number; type: 'stop' };

export type FleetRequest = Extract<ParentRequest, { type: 'fleet-register' | 'fleet-connect' }>;

/** The fleet's answer: the terminals it registered (fleet-register), and how long it took. */
export interface FleetReply {
  ms: number;
  terminals?: FleetTerminal[];
}

export type ChildMessage =
  /** `brokerUrl`: the relay's MQTT broker, where agents connect. */
  | { type: 'ready'; origin: string; brokerUrl?: string }
  | {
      type: 'reply';
      id: number;
      sample?: ProcessSample;
      fleet?: FleetReply;
      /** [transaction id, epoch ms with µs precision] of each COMPLETED report taken in. */
      reportTimes?: Array<[string, number]>;
      swarm?: SwarmStats;
      error?: string;
    }
  | { type: 'failed'; message: string };
