/**
 * Each account's certificate authority for its agents' local APIs (docs/security.md,
 * "Local TLS"): an EC P-256 key and a self-signed certificate, made on first need and kept
 * in the store as the relay's other secrets are, under a setting claimed once
 * (`claimSetting`: relays making it at once agree on one). A POS that trusts it trusts
 * the agents of that account alone: another account's authority signs nothing of this one.
 * Certificates are built with @peculiar/x509 over node's WebCrypto; node's own crypto
 * reads certificates but cannot issue them.
 */
// @peculiar/x509's dependency injection (tsyringe) needs the Reflect metadata API first.
import 'reflect-metadata';
import { KeyObject, createPrivateKey, randomBytes, webcrypto } from 'node:crypto';

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;
import * as x509 from '@peculiar/x509';
import type { Clock } from '../../common/clock.js';
import type { Store } from '../store/store.js';

const EC_P256 = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGNING = { name: 'ECDSA', hash: 'SHA-256' } as const;
/** An authority outlives every certificate it signs by far; POS installations pin it. */
const AUTHORITY_VALIDITY_YEARS = 20;
/** Certificates start a little in the past: a POS whose clock is behind still accepts them. */
const BACKDATE_MS = 5 * 60_000;

const settingKey = (accountId: string) => `local_tls_authority:${accountId}`;

interface StoredAuthority {
  certificate: string;
  /** PKCS#8 PEM. */
  private_key: string;
}

/** What a certificate for a terminal's local API names. */
export interface LeafRequest {
  terminalId: string;
  /** SubjectPublicKeyInfo, DER, already checked (public-key.ts). */
  publicKey: Buffer;
  keyType: 'ec' | 'rsa';
  ipAddresses: readonly string[];
  dnsNames: readonly string[];
  notAfter: Date;
}

export class LocalAuthority {
  private constructor(
    readonly certificate: string,
    private readonly cert: x509.X509Certificate,
    private readonly signingKey: CryptoKey,
    private readonly clock: Clock,
  ) {}

  /** The account's authority, made and stored on first need. */
  static async of(
    store: Pick<Store, 'getSetting' | 'claimSetting'>,
    accountId: string,
    clock: Clock,
  ): Promise<LocalAuthority> {
    const key = settingKey(accountId);
    const stored =
      (await store.getSetting(key)) ??
      (await store.claimSetting(key, JSON.stringify(await newAuthority(accountId, clock))));
    const { certificate, private_key } = JSON.parse(stored) as StoredAuthority;
    const signingKey = await importSigningKey(createPrivateKey(private_key));
    return new LocalAuthority(
      certificate,
      new x509.X509Certificate(certificate),
      signingKey,
      clock,
    );
  }

  /** A server certificate for one terminal's local API, PEM. */
  async sign(request: LeafRequest): Promise<string> {
    const notBefore = new Date(this.clock.now().getTime() - BACKDATE_MS);
    const names: x509.JsonGeneralName[] = [
      ...request.ipAddresses.map((value) => ({ type: 'ip' as const, value })),
      ...request.dnsNames.map((value) => ({ type: 'dns' as const, value })),
    ];
    const publicKey = new x509.PublicKey(request.publicKey);
    const leaf = await x509.X509CertificateGenerator.create(
      {
        serialNumber: serialNumber(),
        subject: [{ CN: [request.terminalId] }],
        issuer: this.cert.subject,
        notBefore,
        notAfter: request.notAfter,
        publicKey,
        signingKey: this.signingKey,
        signingAlgorithm: SIGNING,
        extensions: [
          new x509.BasicConstraintsExtension(false, undefined, true),
          new x509.KeyUsagesExtension(
            // An RSA key may also carry TLS 1.2's RSA key exchange; an EC key only signs.
            request.keyType === 'rsa'
              ? x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment
              : x509.KeyUsageFlags.digitalSignature,
            true,
          ),
          new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
          new x509.SubjectAlternativeNameExtension(names, true),
          await x509.SubjectKeyIdentifierExtension.create(publicKey, false, webcrypto),
          await x509.AuthorityKeyIdentifierExtension.create(this.cert, false, webcrypto),
        ],
      },
      webcrypto,
    );
    return pem(leaf);
  }
}

async function newAuthority(accountId: string, clock: Clock): Promise<StoredAuthority> {
  const keys = (await webcrypto.subtle.generateKey(EC_P256, true, [
    'sign',
    'verify',
  ])) as CryptoKeyPair;
  const now = clock.now();
  const notAfter = new Date(now);
  notAfter.setUTCFullYear(notAfter.getUTCFullYear() + AUTHORITY_VALIDITY_YEARS);
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: serialNumber(),
      name: [{ CN: [`TPS local authority ${accountId}`] }],
      notBefore: new Date(now.getTime() - BACKDATE_MS),
      notAfter,
      keys,
      signingAlgorithm: SIGNING,
      extensions: [
        // pathLen 0: it signs terminals' certificates, never another authority.
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(
          x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign,
          true,
        ),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, webcrypto),
      ],
    },
    webcrypto,
  );
  const privateKey = KeyObject.from(keys.privateKey).export({ type: 'pkcs8', format: 'pem' });
  return { certificate: pem(cert), private_key: privateKey.toString() };
}

function importSigningKey(key: KeyObject): Promise<CryptoKey> {
  return webcrypto.subtle.importKey(
    'pkcs8',
    key.export({ type: 'pkcs8', format: 'der' }),
    EC_P256,
    false,
    ['sign'],
  );
}

/** 16 random bytes, positive (RFC 5280 4.1.2.2: at most 20 octets, non-negative). */
function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = bytes[0]! & 0x7f;
  return bytes.toString('hex');
}

/** PEM with line breaks as node's TLS and the protocol's schema expect, ending in one newline. */
function pem(cert: x509.X509Certificate): string {
  return `${cert.toString('pem').replace(/\r\n/g, '\n').trim()}\n`;
}
