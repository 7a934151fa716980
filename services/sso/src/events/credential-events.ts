import { credentialEventSchema } from '@app/contracts';
import { isUuid, type Logger, type ServiceContext } from '@app/platform';
import type { Revoker } from '../tokens/revocations.js';

/** Durable consumer group: every sso replica shares it, so each event is handled once. */
export const SSO_EVENT_GROUP = 'sso';

/** The first whole second after `occurredAt`: tokens issued (`iat`) before it predate the change. */
export const secondAfter = (occurredAt: string) => Math.floor(Date.parse(occurredAt) / 1000) + 1;

/**
 * Tokens must not outlive the credential they came from:
 * - a credential deactivated or deleted ends the sign-ins made with it (LOCAL: its sessions;
 *   API_KEY: every token granted to it, by `client_id`);
 * - a new password ends every other session of the identity (the one that changed it, named
 *   by `actorSessionId`, stays); a new API key secret ends the tokens granted with the old one.
 * Revoking is idempotent, so redelivered events are harmless.
 */
export async function subscribeToCredentialEvents(options: { subscribe: ServiceContext['subscribe']; logger: Logger; revoker: Revoker }): Promise<void> {
  const { revoker, logger } = options;
  await options.subscribe(
    'credential.>',
    async (message) => {
      const parsed = credentialEventSchema.safeParse(message.data);
      if (!parsed.success) {
        logger.warn({ subject: message.subject, id: message.id }, 'ignoring a credential event that does not match its schema');
        return;
      }
      const event = parsed.data;
      const gone = message.subject === 'credential.revoked' || (message.subject === 'credential.updated' && !event.activated);
      const secretChanged = message.subject === 'credential.updated' && event.secretChanged === true;
      if (!gone && !secretChanged) return;
      if (event.provider === 'API_KEY') {
        await revoker.cutOffClient(event.credentialId, secondAfter(event.occurredAt));
      } else if (gone) {
        await revoker.endSessions({ credentialId: event.credentialId });
      } else {
        const actor = event.actorSessionId && isUuid(event.actorSessionId) ? event.actorSessionId : undefined;
        await revoker.endSessions({ identityId: event.identityId, exceptFamilyId: actor });
      }
      logger.info({ credentialId: event.credentialId, subject: message.subject }, 'sessions of a credential revoked');
    },
    { group: SSO_EVENT_GROUP },
  );
}
