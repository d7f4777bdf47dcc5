/**
 * The agent's TLS identity for its API on the shop's network (docs/local-mode.md, "Trust:
 * two commands"): its own EC P-256 key, made once and kept in `<data_dir>/local-tls/`
 * (mode 0600; it never leaves the terminal), and a certificate the relay signs under the
 * account's authority, asked for over the MQTT link (protocol/local-tls.ts) with the
 * addresses the terminal has. Asked again when less than a third of its validity remains,
 * when the addresses change, and when there is none. Nothing here reads X.509 beyond what
 * node's own `X509Certificate` does: the agent's bundle stays without a certificate builder.
 */
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  X509Certificate,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomBytes,
  type KeyObject,
} from 'node:crypto';
import type { Logger } from 'pino';
import {
  DnsName,
  LOCAL_CERT_MAX_DNS_NAMES,
  LOCAL_CERT_MAX_IP_ADDRESSES,
  LOCAL_CERT_RENEW_FRACTION,
  LocalCertMessage,
  type LocalCertRequestMessage,
} from '../../protocol/local-tls.js';
import { Backoff, type BackoffOptions } from '../../common/backoff.js';
import type { Clock, Timers } from '../../common/clock.js';

/** What a TLS server needs: `tls.createSecureContext({ key, cert, ca })`. */
export interface LocalTlsCredentials {
  key: string;
  cert: string;
  /** The account's authority, PEM. */
  ca: string;
}

/** Where the terminal is on the shop's network, as it tells the relay. */
export interface LocalAddresses {
  ip_addresses: string[];
  dns_names: string[];
}

export interface LocalTlsIdentityOptions {
  dataDir: string;
  /** Off: nothing is asked (the fleet's `local_api` setting decides, once there is one). */
  enabled: boolean;
  clock: Clock;
  timers: Timers;
  logger: Logger;
  /** Sends a request over the MQTT link; false when it cannot leave now (disconnected). */
  send: (request: LocalCertRequestMessage) => boolean;
  /** Where the terminal is; default: its non-internal interfaces and its host name. */
  addresses?: () => LocalAddresses;
  /** Where the local API listens, told to the POS with the trust. */
  port?: number;
  /** How often to look at the certificate and the addresses (default 1 h). */
  checkEveryMs?: number;
  /** A request without an answer this long has failed (default 60 s). */
  answerTimeoutMs?: number;
  /**
   * The wait after a failed or refused request before the next (default 1 min doubling
   * to 1 h, jittered; never shorter than a refusal's `retry_after_s`): a relay that does
   * not answer, an older one, is not asked every minute for ever.
   */
  retry?: Partial<BackoffOptions>;
}

interface StoredCertificate extends LocalAddresses {
  certificate: string;
  ca_certificate: string;
  port?: number;
}

export class LocalTlsIdentity extends EventEmitter<{ renewed: [LocalTlsCredentials] }> {
  private readonly dir: string;
  private key: KeyObject | undefined;
  private keyPem = '';
  private stored: StoredCertificate | undefined;
  private pending: { id: string; addresses: LocalAddresses } | undefined;
  /** No request before this time: after a failure or a refusal. */
  private notBeforeMs = 0;
  /** One timer: the answer's deadline while a request waits, else the next check. */
  private timer: unknown;
  private stopped = false;
  private readonly backoff: Backoff;

  constructor(private readonly options: LocalTlsIdentityOptions) {
    super();
    this.dir = path.join(options.dataDir, 'local-tls');
    this.backoff = new Backoff({ initialMs: 60_000, maxMs: 3_600_000, ...options.retry });
  }

  /** Reads (or makes) the key and the last certificate; asks for one if it must. */
  start(): void {
    if (!this.options.enabled) return;
    this.loadKey();
    this.stored = this.loadCertificate();
    this.check();
  }

  stop(): void {
    this.stopped = true;
    this.options.timers.clearTimeout(this.timer);
  }

  /** The key, the certificate and the authority to serve with; undefined until there is one. */
  current(): LocalTlsCredentials | undefined {
    if (!this.stored) return undefined;
    return { key: this.keyPem, cert: this.stored.certificate, ca: this.stored.ca_certificate };
  }

  /** The link is up: a request that could not leave, or is due, goes now. */
  linkUp(): void {
    if (!this.options.enabled || this.stopped) return;
    this.pending = undefined;
    this.check();
  }

  /** The relay's answer, as JSON from the link. */
  received(value: unknown): void {
    const { logger } = this.options;
    const parsed = LocalCertMessage.safeParse(value);
    if (!parsed.success || !this.pending || parsed.data.request_id !== this.pending.id) {
      logger.warn('ignored a local certificate answer that is not for the request waiting');
      return;
    }
    const answer = parsed.data;
    const addresses = this.pending.addresses;
    this.pending = undefined;
    if (answer.outcome === 'REFUSED') {
      logger.warn({ reason: answer.reason }, 'the relay refused a local certificate');
      const retryAfterMs =
        answer.retry_after_s === undefined ? undefined : answer.retry_after_s * 1000;
      this.failed(retryAfterMs);
      return;
    }
    const certificate = new X509Certificate(answer.certificate);
    const ca = new X509Certificate(answer.ca_certificate);
    if (!certificate.checkPrivateKey(this.key!) || !certificate.verify(ca.publicKey)) {
      logger.error('the relay answered a certificate not for this key or not of its authority');
      this.failed();
      return;
    }
    this.stored = {
      ...addresses,
      certificate: answer.certificate,
      ca_certificate: answer.ca_certificate,
      ...(this.options.port !== undefined ? { port: this.options.port } : {}),
    };
    writePrivate(path.join(this.dir, 'certificate.json'), JSON.stringify(this.stored));
    logger.info({ expiresAt: answer.expires_at }, 'local certificate received');
    this.backoff.reset();
    this.notBeforeMs = 0;
    this.schedule(this.checkEveryMs);
    this.emit('renewed', this.current()!);
  }

  /** Asks for a certificate when there is none, it nears its end, or the addresses moved. */
  check(): void {
    if (!this.options.enabled || this.stopped || !this.key) return;
    // A request waits: its deadline is the timer, and its answer decides.
    if (this.pending) return;
    const nowMs = this.options.clock.now().getTime();
    if (nowMs < this.notBeforeMs) {
      this.schedule(Math.min(this.checkEveryMs, this.notBeforeMs - nowMs));
      return;
    }
    this.schedule(this.checkEveryMs);
    const addresses = this.addresses();
    const why = this.renewalReason(addresses, nowMs);
    if (!why) return;
    const request: LocalCertRequestMessage = {
      request_id: randomBytes(8).toString('hex'),
      public_key: createPublicKey(this.key).export({ type: 'spki', format: 'pem' }).toString(),
      ...addresses,
      ...(this.options.port !== undefined ? { port: this.options.port } : {}),
    };
    // Not connected: linkUp() asks when the link is back.
    if (!this.options.send(request)) return;
    this.options.logger.info({ why }, 'asking the relay for a local certificate');
    this.pending = { id: request.request_id, addresses };
    this.schedule(this.options.answerTimeoutMs ?? 60_000, () => {
      this.pending = undefined;
      this.failed();
    });
  }

  private get checkEveryMs(): number {
    return this.options.checkEveryMs ?? 3_600_000;
  }

  /** No request before the back-off's next wait (at least `retryAfterMs`) has passed. */
  private failed(retryAfterMs?: number): void {
    const waitMs = this.backoff.next(retryAfterMs);
    this.notBeforeMs = this.options.clock.now().getTime() + waitMs;
    this.schedule(waitMs);
  }

  private renewalReason(addresses: LocalAddresses, nowMs: number): string | undefined {
    if (!this.stored) return 'none yet';
    const certificate = new X509Certificate(this.stored.certificate);
    if (!certificate.checkPrivateKey(this.key!)) return 'not for this key';
    const from = certificate.validFromDate.getTime();
    const to = certificate.validToDate.getTime();
    if (to - nowMs < (to - from) * LOCAL_CERT_RENEW_FRACTION) return 'near its end';
    if (
      !sameSet(addresses.ip_addresses, this.stored.ip_addresses) ||
      !sameSet(addresses.dns_names, this.stored.dns_names) ||
      this.stored.port !== this.options.port
    ) {
      return 'the addresses changed';
    }
    return undefined;
  }

  private addresses(): LocalAddresses {
    return (this.options.addresses ?? interfaceAddresses)();
  }

  /** Sets the one timer: `instead` runs when given, else a check. */
  private schedule(ms: number, instead?: () => void): void {
    this.options.timers.clearTimeout(this.timer);
    if (this.stopped) return;
    this.timer = this.options.timers.setTimeout(() => (instead ?? (() => this.check()))(), ms, {
      unref: true,
    });
  }

  private loadKey(): void {
    const file = path.join(this.dir, 'key.pem');
    fs.mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    if (!fs.existsSync(file)) {
      const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
      writePrivate(file, privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
    }
    this.keyPem = fs.readFileSync(file, 'utf8');
    this.key = createPrivateKey(this.keyPem);
  }

  private loadCertificate(): StoredCertificate | undefined {
    try {
      return JSON.parse(
        fs.readFileSync(path.join(this.dir, 'certificate.json'), 'utf8'),
      ) as StoredCertificate;
    } catch {
      // None yet, or unreadable: asked for again.
      return undefined;
    }
  }
}

/**
 * The IPv4 and IPv6 addresses of the non-internal interfaces, and the host name. IPv6
 * addresses with a scope (link-local) are left out: a certificate cannot name a zone.
 */
export function interfaceAddresses(): LocalAddresses {
  const ips = Object.values(os.networkInterfaces())
    .flat()
    .filter((a) => a && !a.internal && !(a.family === 'IPv6' && a.scopeid))
    .map((a) => a!.address);
  const host = os.hostname();
  return {
    ip_addresses: [...new Set(ips)].slice(0, LOCAL_CERT_MAX_IP_ADDRESSES),
    dns_names: DnsName.safeParse(host).success
      ? [host.toLowerCase()].slice(0, LOCAL_CERT_MAX_DNS_NAMES)
      : [],
  };
}

/** Written whole (a crash leaves the old file or the new one), readable by the agent alone. */
function writePrivate(file: string, text: string): void {
  const temp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temp, text, { mode: 0o600 });
  fs.renameSync(temp, file);
}

const sameSet = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && [...a].sort().join(',') === [...b].sort().join(',');
