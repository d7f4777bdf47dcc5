/**
 * A PT driven by a test script, over any ApduChannel: it records what the ECR sends and
 * writes what the script says, as hex. Test-only.
 */
import { fromHex, hexBytes } from '../apdu.js';
import type { ApduChannel } from '../channel.js';

export class ScriptedPt {
  /** Every APDU received, as hex. */
  readonly received: string[] = [];
  private read = 0;
  private readonly waiters: (() => void)[] = [];

  constructor(readonly channel: ApduChannel) {
    channel.on('apdu', (apdu) => {
      this.received.push(hexBytes(apdu));
      for (const wake of this.waiters.splice(0)) wake();
    });
  }

  /** The next APDU not yet taken by next(), waiting for it. */
  async next(timeoutMs = 5000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    while (this.read >= this.received.length) {
      if (Date.now() > deadline) throw new Error(`no APDU from the ECR within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 20);
      });
    }
    return this.received[this.read++] as string;
  }

  /** Waits for the next APDU and checks it. */
  async expect(hex: string): Promise<void> {
    const got = await this.next();
    if (got !== hexBytes(fromHex(hex))) throw new Error(`expected ${hex} from the ECR, got ${got}`);
  }

  send(hex: string | Buffer): Promise<void> {
    return this.channel.send(typeof hex === 'string' ? fromHex(hex) : hex);
  }

  /** Sends a PT message and checks the ECR's answer (80 00 00 unless told). */
  async tell(hex: string | Buffer, answer = '80 00 00'): Promise<void> {
    await this.send(hex);
    await this.expect(answer);
  }
}
