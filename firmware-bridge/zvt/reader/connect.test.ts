/** Opening a ZVT line: the TCP address forms, and clear errors for a wrong target. */
import { describe, expect, it } from 'vitest';
import { openZvtChannel, parseZvtTcpTarget } from './connect.js';

describe('openZvtChannel', () => {
  it('reads HOST:PORT, [v6]:PORT, tcp:// and a bare host (port 20007)', () => {
    expect(parseZvtTcpTarget('10.0.0.7:22000')).toEqual({ host: '10.0.0.7', port: 22000 });
    expect(parseZvtTcpTarget('[::1]:20008')).toEqual({ host: '::1', port: 20008 });
    expect(parseZvtTcpTarget('tcp://pt.local:20007')).toEqual({ host: 'pt.local', port: 20007 });
    expect(parseZvtTcpTarget('pt.local')).toEqual({ host: 'pt.local', port: 20007 });
    expect(parseZvtTcpTarget('pt.local:0')).toBeUndefined();
    expect(parseZvtTcpTarget('pt.local:70000')).toBeUndefined();
    expect(parseZvtTcpTarget('a:b:c')).toBeUndefined();
  });

  it('says what is wrong with a target it cannot open', async () => {
    await expect(openZvtChannel({ tcp: 'not an address:x' })).rejects.toThrow(/HOST:PORT/);
    await expect(openZvtChannel({ port: '/dev/does-not-exist-zvt' })).rejects.toThrow(
      /cannot open serial port \/dev\/does-not-exist-zvt/,
    );
  });
});
