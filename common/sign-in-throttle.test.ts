import { describe, expect, it } from 'vitest';
import { HashGate, HashingBusy, SignInThrottle, sourceOf } from './sign-in-throttle.js';

describe('sourceOf', () => {
  it('counts IPv4 (also IPv4-mapped) per address and IPv6 per /64', () => {
    expect(sourceOf('192.0.2.7')).toBe('192.0.2.7');
    expect(sourceOf('::ffff:192.0.2.7')).toBe('192.0.2.7');
    expect(sourceOf('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(sourceOf('2001:db8:1:2:bbbb:cccc:dddd:eeee')).toBe('2001:db8:1:2::/64');
    expect(sourceOf('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(sourceOf('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(sourceOf(undefined)).toBe('unknown');
  });
});

describe('SignInThrottle', () => {
  const limits = { windowMs: 60_000, perUserSource: 3, perSource: 5, perUser: 8 };

  it('refuses a pair over its limit until its window ends, and a success clears the pair', () => {
    let now = 0;
    const throttle = new SignInThrottle(limits, () => now);
    for (let i = 0; i < 3; i++) {
      expect(throttle.check('u', 'a')).toBeUndefined();
      throttle.failed('u', 'a');
    }
    now = 10_000;
    expect(throttle.check('u', 'a')).toBe(50);
    expect(throttle.check('u', 'b')).toBeUndefined();
    now = 60_000;
    expect(throttle.check('u', 'a')).toBeUndefined();
    throttle.failed('u', 'a');
    throttle.failed('u', 'a');
    throttle.succeeded('u', 'a');
    throttle.failed('u', 'a');
    expect(throttle.check('u', 'a')).toBeUndefined();
  });

  it('exempts a source that signed in from the username ceiling, not from its own limits', () => {
    const throttle = new SignInThrottle(limits, () => 0);
    throttle.succeeded('u', 'home');
    for (let i = 0; i < 8; i++) throttle.failed('u', `s${i}`);
    expect(throttle.check('u', 'elsewhere')).toBe(60);
    expect(throttle.check('u', 'home')).toBeUndefined();
    for (let i = 0; i < 5; i++) throttle.failed(`v${i}`, 'home');
    expect(throttle.check('u', 'home')).toBe(60);
  });
});

describe('HashGate', () => {
  it('runs at most max at once and refuses the rest without queueing', async () => {
    const gate = new HashGate(1);
    let release = () => {};
    const first = gate.run(() => new Promise<void>((resolve) => (release = resolve)));
    await expect(gate.run(async () => 'second')).rejects.toBeInstanceOf(HashingBusy);
    release();
    await first;
    await expect(gate.run(async () => 'third')).resolves.toBe('third');
  });
});
