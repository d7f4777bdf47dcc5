/**
 * A TCP relay between an agent and its broker that loses every connection while cut, so
 * that "the link is down" is a real lost connection (as test/local-mode.test.ts does).
 */
import net from 'node:net';

export class LinkSwitch {
  private readonly sockets = new Set<net.Socket>();
  private cutOff = false;
  private readonly server: net.Server;

  constructor(private readonly target: { host: string; port: number }) {
    this.server = net.createServer({ noDelay: true }, (client) => {
      if (this.cutOff) return void client.destroy();
      const upstream = net.connect({ ...this.target, noDelay: true });
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => {});
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
  }

  /** Listens on a free port; answers the broker URL to give the agent. */
  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `mqtt://127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
  }

  cut(): void {
    this.cutOff = true;
    for (const socket of this.sockets) socket.destroy();
  }

  restore(): void {
    this.cutOff = false;
  }

  close(): Promise<void> {
    this.cut();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
