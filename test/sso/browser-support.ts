// A relying party's browser, as far as the hosted login page needs one: it follows the
// authorization endpoint, keeps the cookies the pages set, and posts the login form.
import { createHash, randomBytes } from 'node:crypto';
import { expect } from '@jest/globals';

/** The issuer the platform names (JWT_ISSUER's default); requests to it go to the platform under test. */
export const ISSUER = 'http://localhost:3000';
/** Registered redirect URIs: loopback http, which the client rules allow; nothing listens there (the test reads the Location). */
export const REDIRECT_URI = 'http://localhost:8080/callback';
export const POST_LOGOUT_URI = 'http://localhost:8080/signed-out';

/**
 * An authorization request as a relying party starts one (code flow, PKCE S256) at `base`, and
 * its verifier. `params` replace the defaults; an empty value leaves a parameter out.
 */
export function authorizationRequest(base: string | URL, clientId: string, params: Record<string, string> = {}): { url: URL; verifier: string } {
  const verifier = randomBytes(32).toString('base64url');
  const url = new URL('/api/v1/sso/authorize', base);
  const defaults = {
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    scope: 'openid email profile',
    state: 'the-state',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  };
  for (const [name, value] of Object.entries({ ...defaults, ...params })) if (value !== '') url.searchParams.set(name, value);
  return { url, verifier };
}

/** A cookie jar keyed by name: the pages set a few cookies under one path, so names suffice here. */
export class CookieJar {
  private readonly cookies = new Map<string, string>();

  store(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (/max-age=0/i.test(line) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  get(name: string): string | undefined {
    return this.cookies.get(name);
  }

  header(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }
}

/** What the login form carries in its hidden fields. */
export interface LoginForm {
  request: string;
  csrf: string;
  html: string;
}

export const hiddenField = (html: string, name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1];

export class Browser {
  readonly jar = new CookieJar();

  constructor(readonly platform: string) {}

  /** The platform's URL for one of the issuer's. */
  local(url: string | URL): string {
    return String(url).replace(ISSUER, this.platform);
  }

  async get(url: string | URL, headers: Record<string, string> = {}): Promise<Response> {
    const response = await fetch(this.local(url), { redirect: 'manual', headers: { cookie: this.jar.header(), ...headers } });
    this.jar.store(response);
    return response;
  }

  async post(path: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Response> {
    const response = await fetch(this.local(new URL(path, ISSUER)), {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: this.jar.header(), ...headers },
      body: new URLSearchParams(fields).toString(),
    });
    this.jar.store(response);
    return response;
  }

  /** Opens the authorization URL and expects the login form. */
  async openLoginForm(url: string | URL, headers: Record<string, string> = {}): Promise<LoginForm> {
    const response = await this.get(url, headers);
    const html = await response.text();
    expect([response.status, response.headers.get('content-type')]).toEqual([200, 'text/html; charset=utf-8']);
    return { request: hiddenField(html, 'request')!, csrf: hiddenField(html, 'csrf')!, html };
  }

  /** Posts the form; answers the response (a 303 to the client on success). */
  submit(form: LoginForm, username: string, password: string, headers: Record<string, string> = {}): Promise<Response> {
    return this.post('/api/v1/sso/login', { request: form.request, csrf: form.csrf, username, password }, headers);
  }

  /** The whole sign-in: the form, the password, and the redirect back to the client (its URL). */
  async signIn(url: string | URL, username: string, password: string): Promise<URL> {
    const response = await this.submit(await this.openLoginForm(url), username, password);
    expect(response.status).toBe(303);
    return new URL(response.headers.get('location')!);
  }
}
