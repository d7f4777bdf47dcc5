/**
 * A door in front of a broker that is down: a TCP forwarder that accepts an agent's
 * connection at once, holds its bytes, and knocks on the broker's port every few
 * milliseconds; once the broker accepts, it waits (`holdMs`, or until `gate()` resolves)
 * and then lets everything through, both ways. An agent behind it comes back to a
 * restarting relay at a moment the test chooses, whatever its random back-off. Any network
 * hop that connects lazily (a proxy, a load balancer) behaves the same.
 *
 *   agent ──TCP──▶ door (accepts at once, holds) ··knock··▶ broker (down … up)
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import mqtt from 'mqtt';
import { terminalTopics } from '../../protocol/index.js';

export interface BrokerDoor {
  /** mqtt://127.0.0.1:PORT: what the agent is configured with. */
  url: string;
  /** Connections let through so far. */
  readonly passed: number;
  close(): Promise<void>;
}

export async function startBrokerDoor(
  target: { host: string; port: number },
  options: { holdMs?: number; gate?: () => Promise<void>; knockEveryMs?: number } = {},
): Promise<BrokerDoor> {
  const holdMs = options.holdMs ?? 0;
  const gate = options.gate ?? (() => new Promise<void>((resolve) => setTimeout(resolve, holdMs)));
  const knockEveryMs = options.knockEveryMs ?? 5;
  const sockets = new Set<net.Socket>();
  let passed = 0;
  let closed = false;

  const server = net.createServer({ noDelay: true }, (client) => {
    sockets.add(client);
    const held: Buffer[] = [];
    const hold = (chunk: Buffer) => held.push(chunk);
    client.on('data', hold);
    client.on('error', () => client.destroy());
    client.once('close', () => sockets.delete(client));

    const knock = () => {
      if (closed || client.destroyed) return;
      const upstream = net.connect({ ...target, noDelay: true });
      const knockAgain = () => {
        upstream.destroy();
        setTimeout(knock, knockEveryMs);
      };
      upstream.once('error', knockAgain);
      upstream.once('connect', () => {
        upstream.off('error', knockAgain);
        upstream.on('error', () => upstream.destroy());
        sockets.add(upstream);
        upstream.once('close', () => {
          sockets.delete(upstream);
          client.destroy();
        });
        client.once('close', () => upstream.destroy());
        const open = () => {
          if (client.destroyed) {
            upstream.destroy();
            return;
          }
          passed++;
          client.off('data', hold);
          for (const chunk of held) upstream.write(chunk);
          client.pipe(upstream);
          upstream.pipe(client);
        };
        gate().then(open, () => client.destroy());
      });
    };
    knock();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `mqtt://127.0.0.1:${port}`,
    get passed() {
      return passed;
    },
    close: () =>
      new Promise<void>((resolve) => {
        closed = true;
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * Resolves as soon as a relay on the broker at `url` listens to agents' reports: it signs
 * in as another terminal's agent (`probe`), publishes a status report every few ms and
 * waits for the relay's report-ack, which the relay sends once it is subscribed.
 */
export async function relayHearsReports(
  url: string,
  probe: { terminalId: string; username: string; password: string },
  options: { everyMs?: number; timeoutMs?: number } = {},
): Promise<void> {
  const topics = terminalTopics(probe.terminalId);
  const client = await mqtt.connectAsync(url, {
    clientId: `agent-${probe.terminalId}`,
    username: probe.username,
    password: probe.password,
    clean: true,
    protocolVersion: 4,
    reconnectPeriod: 0,
    connectTimeout: 5000,
  });
  const journal = randomBytes(16).toString('hex');
  let seq = 0;
  let timer: NodeJS.Timeout | undefined;
  try {
    await client.subscribeAsync(topics.reportAck, { qos: 1 });
    await new Promise<void>((resolve, reject) => {
      const deadline = setTimeout(
        () => reject(new Error('the relay never acknowledged a report')),
        options.timeoutMs ?? 15_000,
      );
      client.on('message', (topic) => {
        if (topic !== topics.reportAck) return;
        clearTimeout(deadline);
        resolve();
      });
      const send = () => {
        const report = { type: 'status', at: new Date().toISOString(), readings: {} };
        client.publish(topics.report, JSON.stringify({ journal, seq: ++seq, report }), {
          qos: 1,
        });
        timer = setTimeout(send, options.everyMs ?? 5);
      };
      send();
    });
  } finally {
    clearTimeout(timer);
    await client.endAsync(true);
  }
}
