/**
 * The byte stream under the MQTT link: TCP for mqtt://, TLS for mqtts://, always with
 * Nagle's algorithm off. With it on, every QoS 1 round trip waits for the kernel's delayed
 * ACK (≈ 40-90 ms instead of ≈ 0.1 ms; docs/architecture.md, platform facts). Certificate files are read at each
 * connect, so a renewed certificate is used at the next reconnect without a restart.
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import type { Duplex } from 'node:stream';
import type { BrokerConfig } from './config.js';

export interface BrokerAddress {
  tls: boolean;
  host: string;
  port: number;
}

export function brokerAddress(url: string): BrokerAddress {
  const parsed = new URL(url);
  const secure = parsed.protocol === 'mqtts:';
  // IPv6 literals come bracketed in URLs; net wants them bare.
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  return { tls: secure, host, port: parsed.port ? Number(parsed.port) : secure ? 8883 : 1883 };
}

export function openBrokerSocket(broker: BrokerConfig): Duplex {
  const address = brokerAddress(broker.url);
  if (!address.tls) {
    return net.connect({ host: address.host, port: address.port, noDelay: true });
  }
  const read = (file: string | undefined) => (file === undefined ? undefined : readFileSync(file));
  const socket = tls.connect({
    host: address.host,
    port: address.port,
    ...(net.isIP(address.host) === 0 ? { servername: address.host } : {}),
    ca: read(broker.ca),
    cert: read(broker.cert),
    key: read(broker.key),
    minVersion: 'TLSv1.2',
  });
  // tls.connect takes no noDelay option: set it now (kept until the socket exists) and
  // again once connected.
  socket.setNoDelay(true);
  socket.once('secureConnect', () => socket.setNoDelay(true));
  return socket;
}
