import { describe, expect, it } from 'vitest';
import { RefusedAddress, TargetPolicy, parseNetworks } from './webhook-target.js';

describe('webhook target policy', () => {
  const policy = new TargetPolicy();

  it.each([
    ['loopback', '127.0.0.1'],
    ['loopback, elsewhere in 127/8', '127.5.6.7'],
    ['private 10/8', '10.1.2.3'],
    ['private 172.16/12', '172.16.0.1'],
    ['private 192.168/16', '192.168.1.1'],
    ['cloud metadata', '169.254.169.254'],
    ['CGNAT (and Alibaba metadata)', '100.100.100.200'],
    ['unspecified', '0.0.0.0'],
    ['broadcast', '255.255.255.255'],
    ['multicast', '224.0.0.1'],
    ['IPv6 loopback', '::1'],
    ['IPv6 unspecified', '::'],
    ['IPv6 link-local', 'fe80::1'],
    ['IPv6 unique-local (AWS metadata)', 'fd00:ec2::254'],
    ['IPv4-mapped loopback', '::ffff:127.0.0.1'],
    ['IPv4-mapped metadata', '::ffff:a9fe:a9fe'],
    ['NAT64 of the metadata address', '64:ff9b::a9fe:a9fe'],
    ['6to4 of a private address', '2002:0a00:0001::1'],
  ])('refuses %s (%s)', (_what, address) => {
    expect(policy.allows(address)).toBe(false);
  });

  it.each(['8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808'])(
    'allows the public address %s',
    (address) => expect(policy.allows(address)).toBe(true),
  );

  it('allows exactly the networks the operator lists, in either IPv4 form', () => {
    const allowing = new TargetPolicy(parseNetworks('10.0.0.0/8, 127.0.0.2, fd12::/16'));
    expect(allowing.allows('10.200.0.1')).toBe(true);
    expect(allowing.allows('::ffff:10.200.0.1')).toBe(true);
    expect(allowing.allows('127.0.0.2')).toBe(true);
    expect(allowing.allows('127.0.0.1')).toBe(false);
    expect(allowing.allows('fd12::5')).toBe(true);
    expect(allowing.allows('192.168.0.1')).toBe(false);
    expect(() => parseNetworks('10.0.0.0/33')).toThrow(/not an address or CIDR range/);
    expect(() => parseNetworks('example.com')).toThrow(/not an address or CIDR range/);
  });

  it("checks a URL's literal host, in any spelling the URL parser accepts", () => {
    for (const url of [
      'http://127.0.0.1/',
      'http://2130706433/',
      'http://0x7f.1/',
      'http://[::1]:8080/',
      'http://[::ffff:127.0.0.1]/',
      'http://169.254.169.254/latest/meta-data/',
    ]) {
      expect(policy.refusesLiteralHost(new URL(url)), url).toBe(true);
    }
    expect(policy.refusesLiteralHost(new URL('https://8.8.8.8/'))).toBe(false);
    // A name is checked where it is connected to, not here.
    expect(policy.refusesLiteralHost(new URL('https://localhost/'))).toBe(false);
  });

  it("refuses at lookup a name that resolves to loopback, in either of the lookup's forms", async () => {
    for (const all of [true, false]) {
      const error = await new Promise((resolve) =>
        policy.lookup('localhost', { all }, (err) => resolve(err)),
      );
      expect(error).toBeInstanceOf(RefusedAddress);
    }
  });
});
