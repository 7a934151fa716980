import type { Database, Logger } from '@app/platform';
import {
  calculateJwkThumbprint,
  createLocalJWKSet,
  exportJWK,
  generateKeyPair,
  importJWK,
  type CryptoKey,
  type JWK,
  type JWTVerifyGetKey,
} from 'jose';
import type { KeyEncryption } from './key-encryption.js';
import type { KeyRepository, StoredKey } from './repository.js';

export const SIGNING_ALGORITHM = 'ES256';

/**
 * How long a replica signs with the key it loaded before asking the database again. Another
 * replica's rotation reaches it within this time, so a retired key stays published this much
 * longer than the tokens it signed live.
 */
export const SIGNING_KEY_REFRESH_MS = 30_000;
/** Least time between two database reads caused by verifying a token with an unknown `kid`. */
const UNKNOWN_KID_RELOAD_MS = 5_000;
/** ...but never less than this, whatever the activation delay: forged kids must not become a database read each. */
const MIN_UNKNOWN_KID_RELOAD_MS = 1_000;
/** Lock name that serializes key creation and rotation across every replica. */
const KEY_LOCK = 'sso:signing-keys';

/** The public members of an EC key; nothing else from storage ever reaches the JWKS. */
export interface PublicJwk {
  kty: string;
  crv: string;
  x: string;
  y: string;
  kid: string;
  alg: string;
  use: string;
}

export interface SigningKey {
  kid: string;
  key: CryptoKey;
}

export interface KeyServiceOptions {
  repository: KeyRepository;
  database: Pick<Database, 'withLock'>;
  encryption: KeyEncryption;
  logger: Logger;
  accessTokenTtlSeconds: number;
  clockToleranceSeconds: number;
  /** How long a new key is published before it signs (verifiers fetch it meanwhile). */
  activationDelaySeconds: number;
  rotationIntervalSeconds: number;
}

export interface KeyService {
  /** Creates the first key pair unless one exists; safe when several replicas start at once. */
  ensureKey(): Promise<void>;
  /**
   * Adds a new key that signs after the activation delay, and retires the current one then;
   * the retired key stays published until every token it may have signed has expired.
   */
  rotate(): Promise<{ kid: string; activatesAt: Date }>;
  /** Rotates when the newest key is older than the rotation interval; true when it did. */
  rotateIfDue(): Promise<boolean>;
  /** The key to sign with now (cached for SIGNING_KEY_REFRESH_MS). */
  signingKey(): Promise<SigningKey>;
  /** The public keys verifiers must know: the signing key, a pending one, and retired ones still in use. */
  publicKeys(): Promise<PublicJwk[]>;
  /** A jose key resolver over the published keys, for sso's own token checks. */
  verificationKeys: JWTVerifyGetKey;
}

const toPublicJwk = (stored: StoredKey): PublicJwk => {
  const jwk = stored.publicJwk;
  return { kty: String(jwk.kty), crv: String(jwk.crv), x: String(jwk.x), y: String(jwk.y), kid: stored.kid, alg: SIGNING_ALGORITHM, use: 'sig' };
};

/** The key that signs at `now`: the most recently activated one that is not yet retired. */
function signingKeyAt(keys: StoredKey[], now: Date): StoredKey | undefined {
  return keys
    .filter((key) => key.activatesAt <= now && (key.retiredAt === null || key.retiredAt > now))
    .sort((a, b) => b.activatesAt.getTime() - a.activatesAt.getTime())[0];
}

export function createKeyService(options: KeyServiceOptions): KeyService {
  const { repository, encryption, logger } = options;
  let cached: { signing: SigningKey; validUntil: number } | undefined;
  let verification: { keys: JWTVerifyGetKey; loadedAt: number } | undefined;
  const unknownKidReloadMs = Math.max(MIN_UNKNOWN_KID_RELOAD_MS, Math.min(UNKNOWN_KID_RELOAD_MS, options.activationDelaySeconds * 1000));

  const newKey = async (activatesAt: Date) => {
    const { publicKey, privateKey } = await generateKeyPair(SIGNING_ALGORITHM, { extractable: true });
    const publicJwk = await exportJWK(publicKey);
    const kid = await calculateJwkThumbprint(publicJwk);
    const privateJwk = JSON.stringify(await exportJWK(privateKey));
    await repository.insert({
      kid,
      publicJwk: { ...publicJwk, kid, alg: SIGNING_ALGORITHM, use: 'sig' },
      privateKey: encryption.enabled ? encryption.encrypt(kid, privateJwk) : privateJwk,
      privateKeyEncrypted: encryption.enabled,
      activatesAt,
    });
    return kid;
  };

  /** Tokens a replica may still sign with a retired key, and their lifetime, bound its publication. */
  const publicationAfterRetirementMs = () =>
    SIGNING_KEY_REFRESH_MS + (options.accessTokenTtlSeconds + options.clockToleranceSeconds) * 1000;

  const rotateLocked = async () => {
    const activatesAt = new Date(Date.now() + options.activationDelaySeconds * 1000);
    const kid = await newKey(activatesAt);
    await repository.retireAllBut(kid, activatesAt, new Date(activatesAt.getTime() + publicationAfterRetirementMs()));
    cached = undefined;
    verification = undefined;
    logger.info({ kid, activatesAt: activatesAt.toISOString() }, 'signing key rotated');
    return { kid, activatesAt };
  };

  const readPrivateKey = async (stored: StoredKey): Promise<CryptoKey> => {
    const json = stored.privateKeyEncrypted ? encryption.decrypt(stored.kid, stored.privateKey) : stored.privateKey;
    return (await importJWK(JSON.parse(json) as JWK, SIGNING_ALGORITHM)) as CryptoKey;
  };

  const loadVerification = async () => {
    const keys = await options.repository.published(new Date());
    verification = { keys: createLocalJWKSet({ keys: keys.map(toPublicJwk) }), loadedAt: Date.now() };
    return verification;
  };

  return {
    ensureKey: () =>
      options.database.withLock(KEY_LOCK, async () => {
        const now = new Date();
        const unretired = await repository.unretired();
        if (unretired.length === 0) {
          const kid = await newKey(now);
          logger.info({ kid }, 'signing key created');
        }
        if (encryption.enabled) {
          // A key stored before encryption was configured is encrypted now, in place.
          for (const key of await repository.published(now)) {
            if (key.privateKeyEncrypted) continue;
            await repository.updatePrivateKey(key.kid, encryption.encrypt(key.kid, key.privateKey), true);
            logger.info({ kid: key.kid }, 'signing key encrypted at rest');
          }
        }
      }),

    rotate: () => options.database.withLock(KEY_LOCK, rotateLocked),

    rotateIfDue: () =>
      options.database.withLock(KEY_LOCK, async () => {
        const newest = (await repository.unretired())[0];
        if (newest && Date.now() - newest.createdAt.getTime() < options.rotationIntervalSeconds * 1000) return false;
        await rotateLocked();
        return true;
      }),

    signingKey: async () => {
      const nowMs = Date.now();
      if (cached && nowMs < cached.validUntil) return cached.signing;
      const now = new Date(nowMs);
      const keys = await repository.unretired().then(async (unretired) => [
        ...unretired,
        ...(await repository.published(now)).filter((key) => key.retiredAt !== null),
      ]);
      const current = signingKeyAt(keys, now);
      if (!current) throw new Error('sso has no signing key; it creates one on start (ensureKey)');
      // Reload at the next activation or retirement, or after the refresh interval, whichever is first.
      const changes = keys
        .flatMap((key) => [key.activatesAt.getTime(), key.retiredAt?.getTime() ?? Infinity])
        .filter((at) => at > nowMs);
      const validUntil = Math.min(nowMs + SIGNING_KEY_REFRESH_MS, ...changes);
      cached = { signing: { kid: current.kid, key: await readPrivateKey(current) }, validUntil };
      return cached.signing;
    },

    publicKeys: async () => (await repository.published(new Date())).map(toPublicJwk),

    verificationKeys: async (header, token) => {
      let current = verification;
      if (!current || Date.now() - current.loadedAt > SIGNING_KEY_REFRESH_MS) current = await loadVerification();
      try {
        return await current.keys(header, token);
      } catch (error) {
        // An unknown kid may be a key another replica just created: look again, but rarely.
        // Never more rarely than the activation delay: a key is published when it is created
        // and signs only that long after, so a set loaded less than that delay ago holds every
        // key that can sign now, and one loaded earlier may not (the cooldown alone let another
        // replica's new key be refused for up to 5 s when the delay was shorter).
        if (Date.now() - current.loadedAt < unknownKidReloadMs) throw error;
        return (await loadVerification()).keys(header, token);
      }
    },
  };
}
