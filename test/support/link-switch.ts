/** The agent's link to the broker through a TCP switch a test cuts and restores: a real lost connection. */
import net from 'node:net';

/** A TCP relay between agent and broker that loses every connection while cut. */
export class LinkSwitch {
  private readonly sockets = new Set<net.Socket>();
  private cutOff = false;
  private readonly server: net.Server;
  constructor(private readonly target: { host: string; port: number }) {
    this.server = net.createServer((client) => {
      if (this.cutOff) return void client.destroy();
      const upstream = net.connect(this.target);
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

/** Turns the event loop until `done` answers true; fails after `attempts` looks. */
export async function until(what: string, done: () => boolean | Promise<boolean>, attempts = 1500) {
  for (let i = 0; i < attempts; i++) {
    if (await done()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`never happened: ${what}`);
}
