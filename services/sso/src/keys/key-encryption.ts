import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Encrypts private signing keys at rest with AES-256-GCM. The AES key is derived from the
 * configured secret with HKDF-SHA256, so any long passphrase works; each key gets its own
 * random 96-bit nonce, and its `kid` is bound as associated data, so a ciphertext copied onto
 * another row does not decrypt.
 */
export interface KeyEncryption {
  readonly enabled: boolean;
  encrypt(kid: string, plaintext: string): string;
  decrypt(kid: string, stored: string): string;
}

/** Marks the stored format, so it can change without guessing. */
const FORMAT = 'v1';
const NONCE_BYTES = 12;

export class KeyDecryptionError extends Error {
  constructor(kid: string, reason: string) {
    super(`The private signing key ${kid} cannot be read: ${reason}`);
    this.name = 'KeyDecryptionError';
  }
}

export function createKeyEncryption(secret: string | undefined): KeyEncryption {
  if (!secret) {
    return {
      enabled: false,
      encrypt: (_kid, plaintext) => plaintext,
      decrypt: (kid) => {
        throw new KeyDecryptionError(kid, 'it is encrypted and SSO_KEY_ENCRYPTION_SECRET is not set');
      },
    };
  }
  const key = Buffer.from(hkdfSync('sha256', secret, 'api-platform/sso', 'signing-key-encryption/v1', 32));
  return {
    enabled: true,
    encrypt: (kid, plaintext) => {
      const nonce = randomBytes(NONCE_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, nonce);
      cipher.setAAD(Buffer.from(kid));
      const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return [FORMAT, nonce, cipher.getAuthTag(), ciphertext].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.');
    },
    decrypt: (kid, stored) => {
      const [format, nonce, tag, ciphertext] = stored.split('.');
      if (format !== FORMAT || !nonce || !tag || ciphertext === undefined) throw new KeyDecryptionError(kid, 'unknown storage format');
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(nonce, 'base64url'));
        decipher.setAAD(Buffer.from(kid));
        decipher.setAuthTag(Buffer.from(tag, 'base64url'));
        return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
      } catch {
        throw new KeyDecryptionError(kid, 'SSO_KEY_ENCRYPTION_SECRET does not match the one it was encrypted with');
      }
    },
  };
}
