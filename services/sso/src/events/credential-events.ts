import { credentialEventSchema } from '@app/contracts';
import type { Bus, Logger, Subscription } from '@app/platform';

/** Durable consumer group: every sso replica shares it, so each event is handled once. */
export const SSO_EVENT_GROUP = 'sso';

/**
 * Refresh tokens must not outlive the credential they came from: a new password, a
 * deactivated credential or a revoked one ends every refresh token of the identity.
 * Revoking is idempotent, so redelivered events are harmless.
 */
export async function subscribeToCredentialEvents(options: {
  bus: Bus;
  logger: Logger;
  revokeIdentity: (identityId: string) => Promise<number>;
}): Promise<Subscription> {
  return options.bus.subscribe(
    'credential.>',
    async (message) => {
      const parsed = credentialEventSchema.safeParse(message.data);
      if (!parsed.success) {
        options.logger.warn({ subject: message.subject, id: message.id }, 'ignoring a credential event that does not match its schema');
        return;
      }
      const event = parsed.data;
      const ends =
        message.subject === 'credential.revoked' ||
        (message.subject === 'credential.updated' && (event.secretChanged === true || !event.activated));
      if (!ends) return;
      const revoked = await options.revokeIdentity(event.identityId);
      options.logger.info({ identityId: event.identityId, subject: message.subject, revoked }, 'refresh tokens revoked');
    },
    { group: SSO_EVENT_GROUP },
  );
}
