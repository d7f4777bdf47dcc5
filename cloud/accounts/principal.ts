/**
 * Who is asking, as the authenticator found it: an account credential reaches all its
 * account's terminals, a terminal credential only its own terminal.
 */
export interface Principal {
  accountId: string;
  /** The credential's username, when it signed in with one. */
  username?: string;
  terminalId?: string;
}
