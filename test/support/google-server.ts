import { OAuth2Server } from 'oauth2-mock-server';

export interface GoogleServer {
  /** GOOGLE_ISSUER: discovery, JWKS, authorize and token are all under it. */
  issuer: string;
  env: { GOOGLE_ISSUER: string; GOOGLE_CLIENT_ID: string; GOOGLE_CLIENT_SECRET: string };
  /** Claims every ID token carries from now on (sub, email, email_verified, name, picture; or a wrong nonce). */
  signInAs(claims: Record<string, unknown>): void;
  /** The Authorization header of every token request (the client authenticates with basic). */
  tokenAuthorizations: (string | undefined)[];
  /** The `kid` of the key the ID tokens are signed with. */
  keyId: string;
  /** oauth2-mock-server's service, for a test's own hooks. */
  service: OAuth2Server['service'];
  close(): Promise<void>;
}

/**
 * Letters and digits only: openid-client form-encodes the id in the Basic header (RFC 6749
 * §2.3.1, so `-` becomes `%2D`), and the mock takes the header's id as the ID token's `aud`
 * without decoding it, where Google decodes.
 */
const CLIENT_ID = 'GoogleTestClient1';
const CLIENT_SECRET = 'GoogleTestClientSecret1';

/**
 * oauth2-mock-server playing Google on loopback: a real OpenID Provider (discovery, JWKS,
 * RS256 ID tokens with the nonce of the authorization, PKCE checked at the token endpoint).
 */
export async function startGoogleServer(): Promise<GoogleServer> {
  const server = new OAuth2Server();
  const key = await server.issuer.keys.generate('RS256');
  await server.start(0, '127.0.0.1');
  // The mock names itself `localhost`; a browser may try that on ::1, where nothing listens.
  server.issuer.url = server.issuer.url!.replace('//localhost:', '//127.0.0.1:');
  let claims: Record<string, unknown> = {};
  const tokenAuthorizations: (string | undefined)[] = [];
  server.service.on('beforeTokenSigning', (token) => Object.assign(token.payload, claims));
  server.service.on('beforeResponse', (_response, req) => tokenAuthorizations.push(req.headers.authorization));
  const issuer = server.issuer.url!;
  return {
    issuer,
    env: { GOOGLE_ISSUER: issuer, GOOGLE_CLIENT_ID: CLIENT_ID, GOOGLE_CLIENT_SECRET: CLIENT_SECRET },
    signInAs: (next) => void (claims = next),
    tokenAuthorizations,
    keyId: String(key.kid),
    service: server.service,
    close: () => server.stop(),
  };
}
