import { z } from 'zod';
import { FederationError, fetchUpstream, pkceChallenge, usablePicture, type FederationProvider, type UpstreamAccount } from './provider.js';

export interface GitHubOptions {
  clientId: string;
  clientSecret: string;
  /** GITHUB_AUTHORIZE_URL, GITHUB_TOKEN_URL, GITHUB_API_URL. */
  authorizeUrl: string;
  tokenUrl: string;
  apiUrl: string;
  timeoutMs: number;
}

/** The profile and every address of the account, with whether GitHub verified each. */
const SCOPE = 'read:user user:email';

/** The API version our calls are written against (GitHub's REST versioning). */
const API_VERSION = '2022-11-28';

/** GitHub answers a failed exchange with 200 and an `error` field, or with the token. */
const tokenResponseSchema = z.union([
  z.object({ access_token: z.string().min(1), token_type: z.string().optional() }),
  z.object({ error: z.string(), error_description: z.string().optional() }),
]);

const userSchema = z.object({
  id: z.number().int(),
  login: z.string(),
  name: z.string().nullish(),
  email: z.string().nullish(),
  avatar_url: z.string().nullish(),
});

const emailsSchema = z.array(z.object({ email: z.string(), primary: z.boolean(), verified: z.boolean() }));

/**
 * GitHub as an upstream: OAuth 2 (authorization code, with PKCE S256, which GitHub supports)
 * and its user API. It issues no ID token, so who signed in is what `/user` says with the
 * token, and the email is one GitHub says it verified.
 */
export function createGitHubProvider(options: GitHubOptions): FederationProvider {
  const api = (path: string) => new URL(path, options.apiUrl.endsWith('/') ? options.apiUrl : `${options.apiUrl}/`);

  /** A JSON answer of GitHub's, parsed by `schema`; anything else fails the sign-in. */
  const readJson = async <T>(response: Response, schema: z.ZodType<T>, what: string): Promise<T> => {
    if (!response.ok) throw new FederationError('upstreamFailed', `${what} answered ${response.status}`);
    const parsed = schema.safeParse(await response.json().catch(() => undefined));
    if (!parsed.success) throw new FederationError('upstreamFailed', `${what} answered an unexpected body`);
    return parsed.data;
  };

  const exchangeCode = async (code: string, codeVerifier: string, redirectUri: string): Promise<string> => {
    const response = await fetchUpstream(
      options.tokenUrl,
      {
        method: 'POST',
        // Without it GitHub answers form-encoded.
        headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          client_id: options.clientId,
          client_secret: options.clientSecret,
          code,
          redirect_uri: redirectUri,
          code_verifier: codeVerifier,
        }),
      },
      options.timeoutMs,
    );
    const answer = await readJson(response, tokenResponseSchema, 'the token endpoint');
    if ('error' in answer) throw new FederationError('upstreamFailed', `the token endpoint refused the code: ${answer.error}`);
    return answer.access_token;
  };

  const getApi = async <T>(path: string, token: string, schema: z.ZodType<T>): Promise<T> => {
    const headers = {
      accept: 'application/vnd.github+json',
      authorization: `Bearer ${token}`,
      'x-github-api-version': API_VERSION,
      // GitHub refuses API requests without one.
      'user-agent': 'api-platform-sso',
    };
    return readJson(await fetchUpstream(api(path), { headers }, options.timeoutMs), schema, `GET ${path}`);
  };

  /**
   * The profile's email when GitHub verified it, else the primary verified address. `/user`
   * shows the public email (or none, when the person hides it) without saying whether it is
   * verified, so `/user/emails` is always asked: an unverified address never names an account.
   */
  const verifiedEmail = async (profileEmail: string | null | undefined, token: string): Promise<string> => {
    const emails = await getApi('user/emails', token, emailsSchema);
    const verified = emails.filter((entry) => entry.verified);
    const chosen = verified.find((entry) => profileEmail && entry.email.toLowerCase() === profileEmail.toLowerCase()) ?? verified.find((entry) => entry.primary);
    if (!chosen) throw new FederationError('emailUnverified', 'the account has no primary verified email', { provider: 'GitHub' });
    return chosen.email;
  };

  return {
    id: 'github',
    label: 'GitHub',
    async authorizationUrl(checks, redirectUri) {
      const url = new URL(options.authorizeUrl);
      url.search = new URLSearchParams({
        client_id: options.clientId,
        redirect_uri: redirectUri,
        scope: SCOPE,
        state: checks.state,
        code_challenge: pkceChallenge(checks.codeVerifier),
        code_challenge_method: 'S256',
      }).toString();
      return url;
    },

    async completeSignIn(callbackParams, checks, redirectUri): Promise<UpstreamAccount> {
      const code = callbackParams.get('code');
      if (!code) throw new FederationError('upstreamFailed', 'the callback has no code');
      const token = await exchangeCode(code, checks.codeVerifier, redirectUri);
      const user = await getApi('user', token, userSchema);
      const email = await verifiedEmail(user.email, token);
      const name = user.name?.trim() ? user.name : user.login;
      const picture = usablePicture(user.avatar_url);
      return { provider: 'github', subject: String(user.id), email, name, ...(picture ? { picture } : {}) };
    },
  };
}
