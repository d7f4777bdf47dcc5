/**
 * The fleet phase's floor: bare aedes (its defaults, no sign-in, no rules) on a port of
 * its own, and one subscriber in the same process that answers every report with its
 * report-ack and does nothing else. What a heartbeat costs here is what an MQTT round
 * trip costs on this machine; the relay adds its checks, its parsing and its store.
 */
import net from 'node:net';
import { Aedes } from 'aedes';
import { failStart, send, serveParent } from './child-side.js';

const REPORT = /^tps\/v1\/t\/([^/]+)\/report$/;

async function main(): Promise<void> {
  const broker = await Aedes.createBroker();
  // The in-process subscriber: a report's seq comes back as its ack.
  broker.subscribe(
    'tps/v1/t/+/report',
    (packet, done) => {
      const id = REPORT.exec(packet.topic)?.[1];
      const seq = /"seq":(\d+)/.exec(packet.payload.toString())?.[1];
      if (id && seq) {
        broker.publish(
          {
            cmd: 'publish',
            topic: `tps/v1/t/${id}/report-ack`,
            payload: Buffer.from(`{"seq":${seq}}`),
            qos: 1,
            retain: false,
            dup: false,
          },
          () => undefined,
        );
      }
      done();
    },
    () => undefined,
  );
  const server = net.createServer({ noDelay: true }, (socket) => broker.handle(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  serveParent({
    stop: async () => {
      await new Promise<void>((resolve) => broker.close(() => resolve()));
      server.close();
    },
  });
  send({ type: 'ready', origin: '', brokerUrl: `mqtt://127.0.0.1:${port}` });
}

main().catch(failStart);
