import { invalidClient, invalidRequest } from '../tokens/errors.js';
import type { GrantContext } from '../tokens/service.js';
import type { StoredClient } from './repository.js';
import type { ClientService } from './service.js';

/** How a registered client shows who it is at the token endpoint. */
export type ClientAuthenticator = (parameters: { client_id?: unknown; client_secret?: unknown }, context: GrantContext) => Promise<StoredClient>;

/**
 * RFC 6749 §2.3.1 and §3.2.1: a confidential client proves its secret with HTTP Basic or in
 * the body, never both; a public client sends its id alone (a secret from it is refused).
 * Every failure is `invalid_client`, whatever went wrong.
 */
export function clientAuthenticator(clients: ClientService): ClientAuthenticator {
  return async ({ client_id: bodyId, client_secret: bodySecret }, context) => {
    if ((bodyId !== undefined && typeof bodyId !== 'string') || (bodySecret !== undefined && typeof bodySecret !== 'string')) {
      throw invalidRequest('Missing or invalid parameter: client_id, client_secret.');
    }
    if (context.basic && (bodySecret !== undefined || (bodyId !== undefined && bodyId !== context.basic.clientId))) {
      throw invalidRequest('Authenticate the client with HTTP Basic or with client_id and client_secret in the body, not both.');
    }
    const clientId = context.basic?.clientId ?? bodyId;
    const secret = context.basic?.clientSecret ?? bodySecret;
    if (!clientId) throw invalidClient();
    const client = await clients.find(clientId);
    if (!client) throw invalidClient();
    if (client.type === 'confidential' ? !secret || !clients.secretMatches(client, secret) : secret) throw invalidClient();
    return client;
  };
}
