/**
 * The relay's base address (`https://host:port/pos`): the configured public one, or the
 * one its server listens on, known only once it listens (port 0 picks a free port).
 * CloudEvents name it as their `source`.
 */
import type { CloudConfig } from '../config.js';

export class RelayAddress {
  private bound: string | undefined;

  constructor(private readonly config: Pick<CloudConfig, 'publicUrl' | 'tlsCert' | 'host'>) {}

  /** The server listens on `port` now. */
  listening(port: number): void {
    const scheme = this.config.tlsCert ? 'https' : 'http';
    const host = this.config.host.includes(':') ? `[${this.config.host}]` : this.config.host;
    this.bound = `${scheme}://${host}:${port}/pos`;
  }

  /** Empty until the server listens, unless a public address is configured. */
  get baseUrl(): string {
    return this.config.publicUrl ?? this.bound ?? '';
  }
}
