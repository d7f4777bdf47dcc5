/**
 * Where a webhook may be delivered: only to public unicast addresses, unless the operator
 * allows networks (TPS_WEBHOOK_ALLOW_NETWORKS). A tenant names the URL, so without this a
 * tenant could make the relay post to its loopback, its private networks or a cloud
 * metadata service, and read in `last_error` what answered there.
 *
 * The address is checked when the connection is made, on the addresses the lookup
 * answered for that very connection: a name that resolves to a public address when the
 * webhook is created and to 127.0.0.1 later (DNS rebinding) is refused then. The ranges
 * are ipaddr.js's classification: anything but `unicast` (loopback, private, link-local
 * with 169.254.169.254, unique-local, CGNAT, multicast, reserved, 6to4, Teredo) is
 * refused; IPv4-mapped IPv6 addresses and NAT64's 64:ff9b::/96 are judged by the IPv4
 * address they carry.
 */
import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;
export type Network = [Address, number];

/** Parses `10.0.0.0/8, ::1/128, 127.0.0.1` (a bare address is its own /32 or /128). */
export function parseNetworks(list: string): Network[] {
  return list
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part.length > 0)
    .map((part) => {
      if (ipaddr.isValidCIDR(part)) return ipaddr.parseCIDR(part);
      if (!ipaddr.isValid(part)) throw new Error(`${part} is not an address or CIDR range`);
      const address = ipaddr.parse(part);
      return [address, address.kind() === 'ipv4' ? 32 : 128];
    });
}

/** The refusal of a forbidden address; delivery reports it as `refused address`. */
export class RefusedAddress extends Error {
  readonly code = 'ERR_WEBHOOK_REFUSED_ADDRESS';
  constructor(readonly address: string) {
    super(`webhook target ${address} is not a public address`);
    this.name = 'RefusedAddress';
  }
}

/** The IPv4 address an IPv6 one carries (mapped, NAT64), or the address itself. */
function effective(address: Address): Address {
  if (address.kind() === 'ipv6') {
    const v6 = address as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) return v6.toIPv4Address();
    if (v6.range() === 'rfc6052') return ipaddr.fromByteArray(v6.toByteArray().slice(12));
  }
  return address;
}

export class TargetPolicy {
  constructor(private readonly allowed: readonly Network[] = []) {}

  /** Whether a connection to this literal address may be made. */
  allows(literal: string): boolean {
    if (!ipaddr.isValid(literal)) return false;
    const address = ipaddr.parse(literal);
    const carried = effective(address);
    for (const candidate of new Set([address, carried])) {
      for (const [network, bits] of this.allowed) {
        if (network.kind() === candidate.kind() && candidate.match(network, bits)) return true;
      }
    }
    return carried.range() === 'unicast';
  }

  /**
   * A URL's host when it is a literal address, refused or not; a name is checked at
   * connect time only (what it resolves to may change).
   */
  refusesLiteralHost(url: URL): boolean {
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    return net.isIP(host) !== 0 && !this.allows(host);
  }

  /**
   * A lookup for net.connect and tls.connect that answers only allowed addresses and
   * fails with RefusedAddress when the name resolves to any other: a name answering a
   * public and a private address is refused whole, not half-used.
   */
  readonly lookup: net.LookupFunction = (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const refused = addresses.find((a) => !this.allows(a.address));
      const first = addresses[0];
      if (refused || !first) {
        return callback(new RefusedAddress(refused?.address ?? hostname), '', 0);
      }
      if (options.all) return callback(null, addresses);
      callback(null, first.address, first.family);
    });
  };
}
