/**
 * The agent secret of a simulated terminal the relay hosts, derived from its terminal id
 * and a key kept once in the store. Every relay on the store derives the same secret, so
 * when the leader dies and another relay hosts the simulators, they sign in with the
 * credential an external broker already knows (its password file from `tps broker
 * mosquitto` carries the stored hash, which no longer changes). The secret is never
 * stored, printed or logged; the store keeps its `$7$` hash, as for any agent.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { hashForBroker, isBrokerHash, verifyBrokerHash } from '../accounts/mosquitto-hash.js';
import type { Store } from '../store/store.js';

export const SIMULATOR_SECRET_KEY_SETTING = 'simulator_secret_key';

export class SimulatorSecrets {
  private key: Promise<Buffer> | undefined;

  constructor(
    private readonly store: Pick<
      Store,
      'claimSetting' | 'findAgentCredential' | 'putAgentCredential'
    >,
  ) {}

  /**
   * The terminal's secret, its hash stored first when the store holds none that matches
   * (a new simulator, or one whose credential was made by an older relay at every start).
   */
  async issue(terminalId: string, now: Date): Promise<string> {
    const secret = createHmac('sha256', await this.secretKey())
      .update(`simulator-agent:${terminalId}`)
      .digest('base64url');
    const stored = await this.store.findAgentCredential(terminalId);
    if (stored === undefined || !isBrokerHash(stored) || !verifyBrokerHash(secret, stored)) {
      await this.store.putAgentCredential(terminalId, hashForBroker(secret), now.toISOString());
    }
    return secret;
  }

  private secretKey(): Promise<Buffer> {
    this.key ??= this.store
      .claimSetting(SIMULATOR_SECRET_KEY_SETTING, randomBytes(32).toString('base64'))
      .then((stored) => Buffer.from(stored, 'base64'));
    // A failed read is tried again at the next start, not remembered.
    this.key.catch(() => (this.key = undefined));
    return this.key;
  }
}
