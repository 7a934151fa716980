/**
 * The platform's first-party client (created by the migration `first_party_client`): the
 * password grant is attributed to it when a request names no client, so its tokens still say
 * which client they were issued to (RFC 9068 §2.2). Deleting it (an admin may) turns the
 * password grant off for every request that names no client.
 */
export const FIRST_PARTY_CLIENT_ID = '00000000-0000-4000-8000-00000000f1a7';
