import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createAgentLogger } from './logging.js';

describe('agent logs', () => {
  it('never carry card data, secrets or print contents, however deep', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const logger = createAgentLogger('info', 'T-1', sink);
    logger.info(
      {
        broker: { url: 'mqtts://relay', password: 'hunter2-secret', key: '/etc/tps/agent.key' },
        report: {
          details: {
            payment_method_details: {
              card_number_customer: '************0119',
              card_number_merchant: '476173******0119',
            },
            customer_identity: {
              par: { par_value: 'PAR-VALUE-123' },
              tokenprovider_a: { card_token: 'TOKEN-456' },
            },
          },
        },
        command: { type: 'print', contents: 'iVBORw0KGgo-PNG-BYTES' },
      },
      'everything at once',
    );
    const text = lines.join('');
    for (const secret of [
      'hunter2-secret',
      '0119',
      'PAR-VALUE-123',
      'TOKEN-456',
      'PNG-BYTES',
      'agent.key',
    ]) {
      expect(text).not.toContain(secret);
    }
    expect(text).toContain('[redacted]');
    expect(JSON.parse(text)).toMatchObject({ terminal_id: 'T-1', msg: 'everything at once' });
  });
});
