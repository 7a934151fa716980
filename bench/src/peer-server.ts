// The peer the token scenarios are compared with (peer.ts starts this file as its own
// process): node-oidc-provider configured as the platform's sso is used, in memory (its
// development adapter, nothing durable), ES256 JWT access tokens (a default resource whose
// tokens are JWTs), rotating refresh tokens, client_credentials, introspection, and a login
// that checks an argon2id hash at the platform's cost. Its settings come from the environment
// peer.ts passes (PEER_*, ARGON2_*).
import { generateKeyPairSync } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import argon2 from 'argon2';
import Provider, { type Configuration } from 'oidc-provider';

const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`peer-server needs ${name}`);
  return value;
};

const port = Number(env('PORT'));
const issuer = `http://127.0.0.1:${port}`;
/** The resource every access token is for: its tokens are ES256 JWTs, as the platform's are. */
const RESOURCE = 'urn:bench:api';
/**
 * A resource whose access tokens are opaque: the peer refuses to introspect its JWTs
 * (unsupported_token_type), so access-token introspection is measured on one of these.
 */
const OPAQUE_RESOURCE = 'urn:bench:opaque';
const user = { id: 'bench-user', email: env('PEER_USER_EMAIL') };
// credentials' defaults (services/credentials/src/config.ts) unless the bench passes ARGON2_*.
const passwordHash = await argon2.hash(env('PEER_USER_PASSWORD'), {
  type: argon2.argon2id,
  memoryCost: Number(process.env.ARGON2_MEMORY_KIB ?? 19_456),
  timeCost: Number(process.env.ARGON2_TIME_COST ?? 2),
  parallelism: Number(process.env.ARGON2_PARALLELISM ?? 1),
});

const signingKey = { ...generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' }), kid: 'peer-es256', alg: 'ES256', use: 'sig' };

const configuration: Configuration = {
  clients: [
    // The service: client_credentials, and introspection (client_secret_basic).
    {
      client_id: 'bench-service',
      client_secret: env('PEER_SERVICE_SECRET'),
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_post',
      introspection_endpoint_auth_method: 'client_secret_basic',
    },
    // The browser app: a public client with PKCE, as the platform's bench app is.
    {
      client_id: 'bench-app',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: [env('PEER_REDIRECT_URI')],
      token_endpoint_auth_method: 'none',
    },
  ],
  jwks: { keys: [signingKey] },
  // The one key is an ES256 one: ID tokens are signed with it too.
  clientDefaults: { id_token_signed_response_alg: 'ES256' },
  cookies: { keys: [env('PEER_COOKIE_KEY')] },
  findAccount: (_ctx, id) => (id === user.id ? { accountId: id, claims: () => ({ sub: id, email: user.email }) } : undefined),
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => RESOURCE,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource) =>
        resource === OPAQUE_RESOURCE
          ? { scope: 'api', audience: OPAQUE_RESOURCE, accessTokenFormat: 'opaque' }
          : { scope: 'api', audience: RESOURCE, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'ES256' } } },
    },
  },
  // Every refresh rotates, as the platform's do; the peer's reuse detection revokes the grant.
  rotateRefreshToken: true,
  pkce: { required: () => true },
};

const provider = new Provider(issuer, configuration);
const providerCallback = provider.callback();

const readForm = async (req: IncomingMessage) => {
  let body = '';
  for await (const chunk of req) body += chunk;
  return new URLSearchParams(body);
};

/** The login page and its form's answer, as the platform's hosted login does them. */
async function interaction(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const details = await provider.interactionDetails(req, res);
  if (req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(
      `<!doctype html><form method="post" action="/interaction/${details.uid}/login">` +
        `<input name="username"><input name="password" type="password"><button>Sign in</button></form>`,
    );
    return;
  }
  const form = await readForm(req);
  const valid = form.get('username') === user.email && (await argon2.verify(passwordHash, form.get('password') ?? ''));
  if (!valid) {
    await provider.interactionFinished(req, res, { error: 'access_denied', error_description: 'wrong username or password' }, { mergeWithLastSubmission: false });
    return;
  }
  // The login grants what the app asked (no consent page): the result carries the grant.
  const grant = new provider.Grant({ accountId: user.id, clientId: String(details.params.client_id) });
  grant.addOIDCScope(String(details.params.scope));
  grant.addResourceScope(RESOURCE, 'api');
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { login: { accountId: user.id }, consent: { grantId } }, { mergeWithLastSubmission: false });
}

const server = createServer((req, res) => {
  if (req.url?.startsWith('/interaction/')) {
    interaction(req, res).catch((error: Error) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(error.message);
    });
    return;
  }
  if (req.url === '/ready') {
    res.end('ok');
    return;
  }
  void providerCallback(req, res);
});
server.keepAliveTimeout = 60_000;
server.listen(port, '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
