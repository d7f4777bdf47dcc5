/**
 * Who may use the agent's local API: a POS credential of this terminal, checked against
 * the verifiers the relay delivers over the link (docs/local-mode.md, "Credentials and
 * trust"). `remoteAddress` lets an implementation count failed sign-ins by source.
 */
export interface LocalApiAuthenticator {
  check(
    authorization: string | undefined,
    remoteAddress: string,
  ): Promise<
    { ok: true; username: string } | { ok: false; status: 401 | 429; retryAfterSeconds?: number }
  >;
}
