import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A GitHub account as the test server's user API shows it. */
export interface GitHubAccount {
  id: number;
  login: string;
  name: string | null;
  /** The public profile email; null when the person hides it. */
  email: string | null;
  avatar_url?: string;
  emails: { email: string; primary: boolean; verified: boolean }[];
}

interface IssuedCode {
  account: GitHubAccount;
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
}

export interface GitHubServer {
  /** GITHUB_AUTHORIZE_URL, GITHUB_TOKEN_URL and GITHUB_API_URL pointing here. */
  env: { GITHUB_AUTHORIZE_URL: string; GITHUB_TOKEN_URL: string; GITHUB_API_URL: string; GITHUB_CLIENT_ID: string; GITHUB_CLIENT_SECRET: string };
  /** The account the next authorization signs in as. */
  signInAs(account: GitHubAccount): void;
  /** The next authorization is declined, as when the person presses Cancel on GitHub. */
  declineNext(): void;
  /** From now on, `mode` on every token and API request: answer 500, or never answer. */
  failWith(mode: 'error' | 'hang' | undefined): void;
  /** Every token request's form, as received. */
  tokenRequests: Record<string, string>[];
  close(): Promise<void>;
}

const CLIENT_ID = 'github-test-client';
const CLIENT_SECRET = 'github-test-client-secret';

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(body));
};

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => resolve(body));
  });

/**
 * GitHub's OAuth app endpoints and user API as far as sign-in uses them, over real HTTP on
 * loopback. It is as strict as GitHub where our client could go wrong: the client secret, the
 * code (single use), the redirect_uri the code was issued for, and the PKCE verifier (S256)
 * are all checked, and a failed exchange is GitHub's 200 with an `error` field.
 */
export async function startGitHubServer(): Promise<GitHubServer> {
  let next: GitHubAccount | undefined;
  let decline = false;
  let failure: 'error' | 'hang' | undefined;
  const codes = new Map<string, IssuedCode>();
  const tokens = new Map<string, GitHubAccount>();
  const tokenRequests: Record<string, string>[] = [];
  const hanging = new Set<ServerResponse>();

  const authorize = (url: URL, res: ServerResponse) => {
    const query = url.searchParams;
    const redirectUri = query.get('redirect_uri');
    if (query.get('client_id') !== CLIENT_ID || !redirectUri) return json(res, 400, { error: 'invalid client or redirect_uri' });
    const back = new URL(redirectUri);
    const state = query.get('state');
    if (state) back.searchParams.set('state', state);
    if (decline) {
      decline = false;
      back.searchParams.set('error', 'access_denied');
      back.searchParams.set('error_description', 'The user has denied your application access.');
    } else {
      if (!next) return json(res, 500, { error: 'the test named no account to sign in as' });
      if (query.get('code_challenge_method') !== 'S256' || !query.get('code_challenge')) return json(res, 400, { error: 'PKCE S256 expected' });
      const code = randomUUID();
      codes.set(code, { account: next, clientId: CLIENT_ID, redirectUri, codeChallenge: query.get('code_challenge')! });
      back.searchParams.set('code', code);
    }
    res.writeHead(302, { location: back.toString() });
    res.end();
  };

  const exchange = async (req: IncomingMessage, res: ServerResponse) => {
    const form = Object.fromEntries(new URLSearchParams(await readBody(req)));
    tokenRequests.push(form);
    if (!String(req.headers.accept).includes('application/json')) return json(res, 406, { error: 'this server answers JSON only' });
    if (form.client_id !== CLIENT_ID || form.client_secret !== CLIENT_SECRET) return json(res, 200, { error: 'incorrect_client_credentials' });
    const issued = form.code ? codes.get(form.code) : undefined;
    if (form.code) codes.delete(form.code);
    if (!issued) return json(res, 200, { error: 'bad_verification_code' });
    if (form.redirect_uri !== issued.redirectUri) return json(res, 200, { error: 'redirect_uri_mismatch' });
    const challenge = form.code_verifier ? createHash('sha256').update(form.code_verifier).digest('base64url') : undefined;
    if (challenge !== issued.codeChallenge) return json(res, 200, { error: 'bad_verification_code', error_description: 'PKCE verification failed' });
    const token = `gho_${randomUUID().replaceAll('-', '')}`;
    tokens.set(token, issued.account);
    return json(res, 200, { access_token: token, token_type: 'bearer', scope: 'read:user,user:email' });
  };

  const api = (req: IncomingMessage, path: string, res: ServerResponse) => {
    if (!req.headers['user-agent']) return json(res, 403, { message: 'Request forbidden by administrative rules. Please make sure your request has a User-Agent header' });
    const account = tokens.get(String(req.headers.authorization).replace(/^Bearer /, ''));
    if (!account) return json(res, 401, { message: 'Bad credentials' });
    if (path === '/user') return json(res, 200, { id: account.id, login: account.login, name: account.name, email: account.email, avatar_url: account.avatar_url ?? null });
    if (path === '/user/emails') return json(res, 200, account.emails.map((entry) => ({ ...entry, visibility: entry.primary ? 'public' : null })));
    return json(res, 404, { message: 'Not Found' });
  };

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method === 'GET' && url.pathname === '/login/oauth/authorize') return authorize(url, res);
    if (failure === 'hang') return void hanging.add(res);
    if (failure === 'error') return json(res, 500, { message: 'Server Error' });
    if (req.method === 'POST' && url.pathname === '/login/oauth/access_token') return void exchange(req, res);
    if (req.method === 'GET' && url.pathname.startsWith('/api/')) return api(req, url.pathname.slice('/api'.length), res);
    return json(res, 404, { message: 'Not Found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    env: {
      GITHUB_AUTHORIZE_URL: `${origin}/login/oauth/authorize`,
      GITHUB_TOKEN_URL: `${origin}/login/oauth/access_token`,
      GITHUB_API_URL: `${origin}/api`,
      GITHUB_CLIENT_ID: CLIENT_ID,
      GITHUB_CLIENT_SECRET: CLIENT_SECRET,
    },
    signInAs: (account) => void (next = account),
    declineNext: () => void (decline = true),
    failWith: (mode) => {
      failure = mode;
      for (const res of hanging) res.destroy();
      hanging.clear();
    },
    tokenRequests,
    close: () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
