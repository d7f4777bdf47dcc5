import { describe, expect, it } from 'vitest';
import { FleetConfig, effectiveFleetConfig } from './fleet-config.js';
import { localApiSettings } from './local-api.js';

const messages = (value: unknown) => {
  const parsed = FleetConfig.safeParse(value);
  return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};

describe('local_api in the fleet configuration', () => {
  it('is off with its defaults when no layer sets it', () => {
    expect(localApiSettings(effectiveFleetConfig([{}, { heartbeat_s: 5 }]).local_api)).toEqual({
      enabled: false,
      listen: { host: '0.0.0.0', port: 8443 },
      plain_http: false,
      while_unreachable: {
        max_amount: 50_000,
        max_pending_count: 100,
        max_pending_total: 500_000,
        max_pending_age_seconds: 86_400,
      },
    });
  });

  it('merges layers field by field, nested objects too', () => {
    const effective = effectiveFleetConfig([
      {
        local_api: { listen: { host: '192.168.1.20' }, while_unreachable: { max_amount: 10_000 } },
      },
      { local_api: { enabled: true } },
      { local_api: { listen: { port: 9443 }, while_unreachable: { max_pending_count: 5 } } },
    ]);
    expect(effective.local_api).toEqual({
      enabled: true,
      listen: { host: '192.168.1.20', port: 9443 },
      while_unreachable: { max_amount: 10_000, max_pending_count: 5 },
    });
  });

  it('refuses bad values with messages that name the field', () => {
    expect(messages({ local_api: { listen: { port: 80 } } })).toEqual([
      'local_api.listen.port: must be 1024-65535',
    ]);
    expect(messages({ local_api: { listen: { port: 70_000 } } })).toEqual([
      'local_api.listen.port: must be 1024-65535',
    ]);
    expect(messages({ local_api: { listen: { host: 'till-1.shop' } } })).toEqual([
      'local_api.listen.host: must be an IPv4 or IPv6 address, e.g. "0.0.0.0"',
    ]);
    expect(messages({ local_api: { while_unreachable: { max_amount: 12.5 } } })).toHaveLength(1);
    expect(messages({ local_api: { while_unreachable: { max_pending_count: 0 } } })).toHaveLength(
      1,
    );
    expect(messages({ local_api: { enabled: 'yes' } })).toHaveLength(1);
    expect(messages({ local_api: { listen: { port: 9443, tls: true } } })).toHaveLength(1);
    expect(messages({ local_api: { listen: { host: '::' } } })).toEqual([]);
  });

  it('takes plain HTTP only beside enabled: true, for benches', () => {
    expect(messages({ local_api: { plain_http: true } })).toEqual([
      'local_api.plain_http: plain_http needs enabled: true in the same layer (it is for benches only)',
    ]);
    expect(messages({ local_api: { enabled: false, plain_http: true } })).toHaveLength(1);
    expect(messages({ local_api: { enabled: true, plain_http: true } })).toEqual([]);
  });
});
