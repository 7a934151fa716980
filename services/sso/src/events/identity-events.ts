import { identityEventSchema } from '@app/contracts';
import type { Logger, ServiceContext } from '@app/platform';
import type { Revoker } from '../tokens/revocations.js';
import { secondAfter, SSO_EVENT_GROUP } from './credential-events.js';

/**
 * A deactivated or deleted identity keeps no token: every token issued before the change is
 * cut off, and its refresh tokens are revoked (sso issues no new ones while it is
 * deactivated). Idempotent: a redelivered event names the same cut-off.
 */
export async function subscribeToIdentityEvents(options: { subscribe: ServiceContext['subscribe']; logger: Logger; revoker: Revoker }): Promise<void> {
  const { revoker, logger } = options;
  await options.subscribe(
    'identity.>',
    async (message) => {
      if (message.subject !== 'identity.updated' && message.subject !== 'identity.deleted') return;
      const parsed = identityEventSchema.pick({ identityId: true, activated: true, occurredAt: true }).partial({ activated: true }).safeParse(message.data);
      if (!parsed.success) {
        logger.warn({ subject: message.subject, id: message.id }, 'ignoring an identity event that does not match its schema');
        return;
      }
      const event = parsed.data;
      if (message.subject === 'identity.updated' && event.activated !== false) return;
      await revoker.cutOffSubject(event.identityId, secondAfter(event.occurredAt));
      logger.info({ identityId: event.identityId, subject: message.subject }, 'tokens of an identity revoked');
    },
    { group: SSO_EVENT_GROUP },
  );
}
