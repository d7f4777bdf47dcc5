/**
 * Who is asking, as the authenticator found it: an account credential reaches all its
 * account's terminals, a terminal credential only its own terminal.
 */
export interface Principal {
  accountId: string;
  /**
   * The credential's username: what a claim records as its claimer, what the failed-claim
   * limit counts, what cannot revoke itself. Basic auth and a console session give the same.
   */
  username: string;
  terminalId?: string;
}
