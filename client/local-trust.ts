/**
 * What a POS needs to reach a terminal's agent over HTTPS on the shop's network, from
 * one call (`/terminal/local-trust`): the account's certificate authority as the `ca` to
 * trust (node's https `ca` option, undici's `Agent({ connect: { ca } })`), and the
 * addresses to try. No certificate is installed anywhere and nothing is configured: the
 * authority vouches for that account's agents alone (docs/local-mode.md, "Trust: two
 * commands").
 */
import { localDnsName, type LocalTrustResponse } from '../protocol/index.js';

export interface LocalTrust {
  terminalId: string;
  /** PEM: the one certificate to trust for HTTPS to this terminal's agent. */
  ca: string;
  /**
   * The name to check the agent's certificate against (TLS `servername`, undici's
   * `connect.servername`), whichever address is used: only this terminal's certificate
   * carries it, while an address is what any agent of the account could report.
   */
  serverName: string;
  /** The agent's addresses, IP first; empty until its agent got a certificate. */
  addresses: string[];
  port?: number;
  /** `https://<address>:<port>/pos` for each address, once the agent said its port. */
  baseUrls: string[];
  /** When the agent's certificate ends; the agent renews it long before. */
  certificateExpiresAt?: string;
}

export function localTrustOf(answer: LocalTrustResponse): LocalTrust {
  const { port } = answer;
  const host = (address: string) => (address.includes(':') ? `[${address}]` : address);
  return {
    terminalId: answer.terminal_id,
    ca: answer.ca_certificate,
    serverName: localDnsName(answer.terminal_id),
    addresses: answer.addresses,
    ...(port !== undefined ? { port } : {}),
    baseUrls:
      port === undefined ? [] : answer.addresses.map((a) => `https://${host(a)}:${port}/pos`),
    ...(answer.certificate_expires_at !== undefined
      ? { certificateExpiresAt: answer.certificate_expires_at }
      : {}),
  };
}
