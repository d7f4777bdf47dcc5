/**
 * The fetch of the local path: HTTPS to the terminal's agent, trusting the certificates
 * the relay's `local-trust` operation gave (the account's authority that issued the
 * agent's certificate), and nothing else for it; the cloud path keeps the system's trust.
 */
import { Agent, fetch as undiciFetch } from 'undici';

export function trustingFetch(ca: string | string[]): typeof fetch {
  const dispatcher = new Agent({ connect: { ca } });
  return ((input: string | URL, init?: RequestInit) =>
    undiciFetch(input, { ...(init as object), dispatcher })) as unknown as typeof fetch;
}
