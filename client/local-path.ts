/**
 * The fetch of the local path: HTTPS to the terminal's agent, trusting the certificates
 * the relay's `local-trust` operation gave (the account's authority that issued the
 * agent's certificate), and nothing else for it; the cloud path keeps the system's trust.
 * The certificate is checked against the terminal's own name (`<terminal_id>.tps.internal`)
 * whatever address is dialled: an address in a certificate is only what an agent reported,
 * and another terminal of the account could report it too (docs/local-mode.md).
 */
import { Agent, fetch as undiciFetch } from 'undici';

export function trustingFetch(ca: string | string[], serverName: string): typeof fetch {
  const dispatcher = new Agent({ connect: { ca, servername: serverName } });
  return ((input: string | URL, init?: RequestInit) =>
    undiciFetch(input, { ...(init as object), dispatcher })) as unknown as typeof fetch;
}
