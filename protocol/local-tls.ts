/**
 * TLS for the agent's API on the shop's network (docs/local-mode.md, "Trust: two
 * commands"): the agent makes its own key and asks the relay, over its MQTT link, for a
 * certificate naming the addresses it reports; the relay signs it under its account's
 * certificate authority; the POS fetches that authority in one API call
 * (`/terminal/local-trust`). No CSR: the link is already authenticated as the terminal,
 * and a certificate is worth nothing without the key that never leaves it.
 */
import { z } from 'zod';
import { TerminalId, TimestampV1 } from './fields.js';
import { plainText } from './plain-text.js';

/** A certificate's validity: short, so a terminal taken out of service stops being trusted soon. */
export const LOCAL_CERT_VALIDITY_DAYS = 30;
/** The agent asks for a new certificate once less than this share of its validity remains. */
export const LOCAL_CERT_RENEW_FRACTION = 1 / 3;
/** The most IP addresses and DNS names one request may name (a terminal has a few). */
export const LOCAL_CERT_MAX_IP_ADDRESSES = 16;
export const LOCAL_CERT_MAX_DNS_NAMES = 4;
/** A new certificate for one terminal at most this often (a repeat of the last is sent again). */
export const LOCAL_CERT_MIN_INTERVAL_S = 600;
/** An SPKI PEM of an RSA-4096 key is about 800 characters; nothing longer is read. */
export const LOCAL_PUBLIC_KEY_PEM_MAX = 1024;
/** A PEM certificate as the relay signs them (EC P-256 CA, up to 16 addresses): well under this. */
const CERTIFICATE_PEM_MAX = 8192;

/** Names under this suffix are the relay's to give: an agent may not ask for one. */
export const LOCAL_DNS_SUFFIX = '.tps.internal';

/**
 * The DNS name every terminal's certificate carries, whatever its addresses, and no other
 * terminal's does. A POS checks the agent's certificate against this name (TLS
 * `servername`) whichever address it connects to: an address is only what an agent
 * reported, and another terminal of the same account could report it too.
 */
export const localDnsName = (terminalId: string): string =>
  `${terminalId.toLowerCase()}${LOCAL_DNS_SUFFIX}`;

/** A host name as RFC 1123 allows it: dot-separated labels of letters, digits and hyphens. */
export const DnsName = z
  .string()
  .max(253)
  .regex(
    /^(?!-)[a-zA-Z0-9-]{1,63}(?<!-)(\.(?!-)[a-zA-Z0-9-]{1,63}(?<!-))*$/,
    'must be a host name: labels of letters, digits and hyphens, separated by dots',
  );

export const IpAddress = z.union([z.ipv4(), z.ipv6()]);

const PemCertificate = z
  .string()
  .max(CERTIFICATE_PEM_MAX)
  .regex(/^-----BEGIN CERTIFICATE-----\n[A-Za-z0-9+/=\n]+-----END CERTIFICATE-----\n?$/);

export const LocalCertRequestId = z.string().regex(/^[0-9a-f]{16,32}$/);

/** agent → relay (QoS 1, not retained): a certificate for this key and these addresses. */
export const LocalCertRequestMessage = z.object({
  request_id: LocalCertRequestId,
  /** SubjectPublicKeyInfo, PEM: EC P-256, or RSA of 2048 to 4096 bits. */
  public_key: z.string().max(LOCAL_PUBLIC_KEY_PEM_MAX),
  ip_addresses: z.array(IpAddress).max(LOCAL_CERT_MAX_IP_ADDRESSES),
  dns_names: z.array(DnsName).max(LOCAL_CERT_MAX_DNS_NAMES),
  /** Where the agent's API listens, told on to the POS with the trust. */
  port: z.int().min(1).max(65_535).optional(),
});
export type LocalCertRequestMessage = z.infer<typeof LocalCertRequestMessage>;

/** relay → agent (QoS 1, not retained): the answer to one request. */
export const LocalCertMessage = z.discriminatedUnion('outcome', [
  z.object({
    request_id: LocalCertRequestId,
    outcome: z.literal('ISSUED'),
    certificate: PemCertificate,
    ca_certificate: PemCertificate,
    expires_at: TimestampV1,
  }),
  z.object({
    /** Absent when the request was too malformed to read its id. */
    request_id: LocalCertRequestId.optional(),
    outcome: z.literal('REFUSED'),
    reason: plainText(300),
    /** Asking again before this many seconds is refused the same way. */
    retry_after_s: z.int().min(0).optional(),
  }),
]);
export type LocalCertMessage = z.infer<typeof LocalCertMessage>;

/** `POST /terminal/local-trust`: what a POS trusts to reach this terminal's agent. */
export const LocalTrustRequest = z.object({ terminal_id: TerminalId });
export type LocalTrustRequest = z.infer<typeof LocalTrustRequest>;

export const LocalTrustResponse = z.object({
  terminal_id: TerminalId,
  /** The account's authority, PEM: the only certificate to trust (node's https `ca`). */
  ca_certificate: PemCertificate,
  /**
   * Where the agent said it is: its IP addresses, its host name, and the name every
   * certificate of this terminal carries; empty until the agent first got a certificate.
   */
  addresses: z
    .array(z.union([IpAddress, DnsName]))
    .max(LOCAL_CERT_MAX_IP_ADDRESSES + LOCAL_CERT_MAX_DNS_NAMES + 1),
  port: z.int().min(1).max(65_535).optional(),
  /** When the agent's current certificate ends; absent until it has one. */
  certificate_expires_at: TimestampV1.optional(),
});
export type LocalTrustResponse = z.infer<typeof LocalTrustResponse>;
