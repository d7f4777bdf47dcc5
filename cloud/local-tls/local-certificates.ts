/**
 * Certificates for agents' local APIs (protocol/local-tls.ts): an agent's request over its
 * MQTT link is checked, signed under its account's authority and answered on the link;
 * the POS's `/terminal/local-trust` answers that authority with what the agent last
 * reported. A request is refused with its reason when its key or names are not acceptable,
 * or when it asks for a new certificate within LOCAL_CERT_MIN_INTERVAL_S of the last (a
 * repeat of the same request within it gets the same certificate again: its answer may
 * have been lost). Beyond REQUESTS_PER_WINDOW a terminal's requests are dropped unread.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import {
  LOCAL_CERT_MIN_INTERVAL_S,
  LOCAL_DNS_SUFFIX,
  LOCAL_CERT_VALIDITY_DAYS,
  LocalCertRequestId,
  LocalCertRequestMessage,
  localDnsName,
  type LocalCertMessage,
  type LocalTrustResponse,
} from '../../protocol/index.js';
import type { Clock } from '../../common/clock.js';
import type { Principal } from '../accounts/principal.js';
import type { TerminalRecord } from '../store/records.js';
import type { Store } from '../store/store.js';
import { LocalAuthority } from './authority.js';
import { checkPublicKey } from './public-key.js';

/** Requests one relay reads from one terminal per window; a flood beyond is dropped unread. */
const REQUESTS_PER_WINDOW = 10;
const WINDOW_MS = 10 * 60_000;
const DAY_MS = 86_400_000;

/** The terminal's last certificate and what it was made for, in the store's settings. */
interface IssuedRecord {
  public_key_sha256: string;
  ip_addresses: string[];
  dns_names: string[];
  port?: number;
  certificate: string;
  issued_at: string;
  expires_at: string;
}

const issuedKey = (terminalId: string) => `local_tls_certificate:${terminalId}`;

export interface LocalCertificatesOptions {
  store: Pick<Store, 'getSetting' | 'putSetting' | 'claimSetting' | 'getTerminal'>;
  clock: Clock;
  logger: Logger;
  /** Sends the answer to the terminal's agent (the MQTT link). */
  answer: (terminalId: string, message: LocalCertMessage) => void;
  /** The terminal, if the principal reaches it; throws the API's not-found otherwise. */
  authorize: (principal: Principal, terminalId: string) => Promise<TerminalRecord>;
}

export class LocalCertificates {
  private readonly authorities = new Map<string, Promise<LocalAuthority>>();
  private readonly windows = new Map<string, { startMs: number; count: number }>();
  private readonly inFlight = new Set<string>();

  constructor(private readonly options: LocalCertificatesOptions) {}

  /** An agent's request, as JSON from the link; answered on the link, never thrown. */
  async request(terminalId: string, raw: unknown): Promise<void> {
    if (!this.withinWindow(terminalId) || this.inFlight.has(terminalId)) {
      this.options.logger.debug({ terminalId }, 'local certificate request dropped: too many');
      return;
    }
    this.inFlight.add(terminalId);
    try {
      const message = await this.decide(terminalId, raw);
      if (message) this.options.answer(terminalId, message);
    } catch (error) {
      // The agent asks again later; nothing was stored for a certificate not sent.
      this.options.logger.error({ err: error, terminalId }, 'local certificate not issued');
    } finally {
      this.inFlight.delete(terminalId);
    }
  }

  /** What `/terminal/local-trust` answers for a terminal the principal reaches. */
  async trust(principal: Principal, terminalId: string): Promise<LocalTrustResponse> {
    const terminal = await this.options.authorize(principal, terminalId);
    const authority = await this.authority(terminal.accountId);
    const issued = await this.issued(terminalId);
    return {
      terminal_id: terminal.id,
      ca_certificate: authority.certificate,
      addresses: issued ? [...issued.ip_addresses, ...issued.dns_names] : [],
      ...(issued?.port !== undefined ? { port: issued.port } : {}),
      ...(issued ? { certificate_expires_at: issued.expires_at } : {}),
    };
  }

  private async decide(terminalId: string, raw: unknown): Promise<LocalCertMessage | undefined> {
    const requestId = LocalCertRequestId.safeParse((raw as { request_id?: unknown })?.request_id);
    const refuse = (reason: string, retryAfterS?: number): LocalCertMessage => ({
      ...(requestId.success ? { request_id: requestId.data } : {}),
      outcome: 'REFUSED',
      reason,
      ...(retryAfterS !== undefined ? { retry_after_s: retryAfterS } : {}),
    });
    const parsed = LocalCertRequestMessage.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      return refuse(`${issue.path.map(String).join('.') || '(message)'}: ${issue.message}`);
    }
    const request = parsed.data;
    const taken = request.dns_names.find((name) => name.toLowerCase().endsWith(LOCAL_DNS_SUFFIX));
    if (taken) return refuse(`dns_names: ${taken} is the relay's to give (${LOCAL_DNS_SUFFIX})`);
    const key = checkPublicKey(request.public_key);
    if ('refused' in key) return refuse(key.refused);
    const terminal = await this.options.store.getTerminal(terminalId);
    if (!terminal) {
      this.options.logger.warn({ terminalId }, 'local certificate request of no terminal ignored');
      return undefined;
    }
    const wanted = {
      public_key_sha256: createHash('sha256').update(key.der).digest('hex'),
      ip_addresses: unique(request.ip_addresses.map(normalIp)),
      dns_names: unique([
        localDnsName(terminalId),
        ...request.dns_names.map((n) => n.toLowerCase()),
      ]),
      ...(request.port !== undefined ? { port: request.port } : {}),
    };
    const now = this.options.clock.now();
    const previous = await this.issued(terminalId);
    const sinceMs = previous ? now.getTime() - Date.parse(previous.issued_at) : Infinity;
    if (previous && sinceMs >= 0 && sinceMs < LOCAL_CERT_MIN_INTERVAL_S * 1000) {
      if (sameRequest(previous, wanted)) {
        const authority = await this.authority(terminal.accountId);
        return issuedMessage(request.request_id, previous, authority);
      }
      const retryAfterS = Math.ceil((LOCAL_CERT_MIN_INTERVAL_S * 1000 - sinceMs) / 1000);
      return refuse(`a new certificate at most every ${LOCAL_CERT_MIN_INTERVAL_S} s`, retryAfterS);
    }
    const authority = await this.authority(terminal.accountId);
    // Whole seconds: a certificate's times have no finer ones, and expires_at must be its own.
    const notAfter = new Date(
      Math.floor((now.getTime() + LOCAL_CERT_VALIDITY_DAYS * DAY_MS) / 1000) * 1000,
    );
    const certificate = await authority.sign({
      terminalId,
      publicKey: key.der,
      keyType: key.type,
      ipAddresses: wanted.ip_addresses,
      dnsNames: wanted.dns_names,
      notAfter,
    });
    const record: IssuedRecord = {
      ...wanted,
      certificate,
      issued_at: now.toISOString(),
      expires_at: notAfter.toISOString(),
    };
    await this.options.store.putSetting(issuedKey(terminalId), JSON.stringify(record));
    this.options.logger.info(
      { terminalId, expiresAt: record.expires_at, addresses: record.ip_addresses.length },
      'local certificate issued',
    );
    return issuedMessage(request.request_id, record, authority);
  }

  private async issued(terminalId: string): Promise<IssuedRecord | undefined> {
    const stored = await this.options.store.getSetting(issuedKey(terminalId));
    return stored === undefined ? undefined : (JSON.parse(stored) as IssuedRecord);
  }

  private authority(accountId: string): Promise<LocalAuthority> {
    let authority = this.authorities.get(accountId);
    if (!authority) {
      authority = LocalAuthority.of(this.options.store, accountId, this.options.clock);
      // A failed read is tried again by the next caller, not remembered.
      authority.catch(() => this.authorities.delete(accountId));
      this.authorities.set(accountId, authority);
    }
    return authority;
  }

  private withinWindow(terminalId: string): boolean {
    const nowMs = this.options.clock.now().getTime();
    let window = this.windows.get(terminalId);
    if (!window || nowMs - window.startMs >= WINDOW_MS || nowMs < window.startMs) {
      window = { startMs: nowMs, count: 0 };
      this.windows.set(terminalId, window);
    }
    window.count++;
    return window.count <= REQUESTS_PER_WINDOW;
  }
}

function issuedMessage(
  requestId: string,
  record: IssuedRecord,
  authority: LocalAuthority,
): LocalCertMessage {
  return {
    request_id: requestId,
    outcome: 'ISSUED',
    certificate: record.certificate,
    ca_certificate: authority.certificate,
    expires_at: record.expires_at,
  };
}

function sameRequest(
  previous: IssuedRecord,
  wanted: Pick<IssuedRecord, 'public_key_sha256' | 'ip_addresses' | 'dns_names' | 'port'>,
): boolean {
  return (
    previous.public_key_sha256 === wanted.public_key_sha256 &&
    previous.port === wanted.port &&
    sameSet(previous.ip_addresses, wanted.ip_addresses) &&
    sameSet(previous.dns_names, wanted.dns_names)
  );
}

const unique = (values: string[]) => [...new Set(values)];
const sameSet = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && [...a].sort().join(',') === [...b].sort().join(',');

/** One spelling per address, so that `::1` and `0:0::1` are one name. */
function normalIp(address: string): string {
  return address.includes(':') ? new URL(`http://[${address}]/`).hostname.slice(1, -1) : address;
}
