// Sign-in with Google in a real browser (headless Chromium): the login page's Google button,
// oauth2-mock-server playing Google, the callback, and back at the relying party with a code
// that redeems as the identity created for the account. The browser sees the platform at its
// issuer (JWT_ISSUER, http://localhost:3000, where the providers send it back) through an
// HTTP proxy that takes each request there to the platform under test. A screenshot of the login
// page with its provider buttons is kept in test/artifacts/. Needs a Chromium, like
// login-page-browser.test.ts; without one the suite is skipped.
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Page } from 'playwright-core';
import { watchPage, withChromium } from '../support/chromium.js';
import { startGitHubServer, type GitHubServer } from '../support/github-server.js';
import { startGoogleServer, type GoogleServer } from '../support/google-server.js';
import { authorizationRequest, ISSUER } from './browser-support.js';
import { CASES, claimsOf, startSsoPlatform, type SsoPlatform } from './harness.js';

const ARTIFACTS = fileURLToPath(new URL('../artifacts/', import.meta.url));
/** The relying party's registered callback, under the issuer too: the browser stops there and the test reads the URL. */
const CALLBACK = `${ISSUER}/rp/callback`;

/**
 * The browser's HTTP proxy: a request for the issuer goes to the platform under test, the
 * relying party's callback gets a page of its own, anything else (the provider) where it names.
 */
async function startIssuerProxy(platform: string): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((incoming, outgoing) => {
    const target = new URL(incoming.url!);
    if (target.origin === ISSUER && target.pathname === new URL(CALLBACK).pathname) {
      outgoing.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      // An empty icon: else Chromium asks the issuer for /favicon.ico, which needs a token (401).
      outgoing.end('<!doctype html><link rel="icon" href="data:,"><title>Back at the app</title><p>Signed in</p>');
      return;
    }
    const url = target.origin === ISSUER ? new URL(`${target.pathname}${target.search}`, platform) : target;
    const forwarded = request(url, { method: incoming.method, headers: { ...incoming.headers, host: url.host } }, (answer) => {
      outgoing.writeHead(answer.statusCode!, answer.headers);
      answer.pipe(outgoing);
    });
    forwarded.on('error', () => outgoing.destroy());
    incoming.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

withChromium('sign-in with Google in a browser', (browser) => {
  // One topology: the flow is the same in each, and the route suites cover them all.
  describe.each(CASES.filter(([topology]) => topology === 'all-in-one'))('sign-in with Google in a browser (%s, %s)', (topology, mode) => {
    let env: SsoPlatform;
    let google: GoogleServer;
    let github: GitHubServer;
    let page: Page;
    let problems: string[];
    let clientId: string;
    let proxy: Awaited<ReturnType<typeof startIssuerProxy>>;

    beforeAll(async () => {
      [google, github] = await Promise.all([startGoogleServer(), startGitHubServer()]);
      env = await startSsoPlatform(mode, topology, { ...google.env, ...github.env });
      const admin = await env.adminToken();
      const registered = await env.call('POST', '/api/v1/sso/clients', admin, { name: 'Federation Browser App', type: 'public', redirect_uris: [CALLBACK] });
      clientId = (registered.body as { id: string }[])[0]!.id;
      proxy = await startIssuerProxy(env.gateway);
      // Through the proxy even for loopback addresses, which Chromium otherwise reaches directly.
      page = await browser().newPage({ locale: 'en', proxy: { server: proxy.url, bypass: '<-loopback>' } });
      problems = await watchPage(page);
    });
    afterAll(async () => {
      await page?.close();
      await proxy?.close();
      await env?.close();
      await google?.close();
      await github?.close();
    });

    it('signs in with the Google button and lands at the client with a code that redeems as the new identity', async () => {
      const email = `chromium-google-${randomUUID().slice(0, 8)}@example.com`;
      google.signInAs({ sub: `chromium-${randomUUID()}`, email, email_verified: true, name: 'Chromium Google User' });
      const { url, verifier } = authorizationRequest(ISSUER, clientId, { redirect_uri: CALLBACK, state: 'browser-state' });
      expect((await page.goto(url.toString()))?.status()).toBe(200);
      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: `${ARTIFACTS}login-page-providers-${topology}-${mode}.png`, fullPage: true });
      await Promise.all([page.waitForURL(`${CALLBACK}?**`), page.getByRole('link', { name: /Google/ }).click()]);

      const back = new URL(page.url());
      expect(back.searchParams.get('state')).toBe('browser-state');
      const tokens = await env.token({ grant_type: 'authorization_code', client_id: clientId, redirect_uri: CALLBACK, code: back.searchParams.get('code')!, code_verifier: verifier });
      expect(tokens.status).toBe(200);
      const admin = await env.adminToken();
      const [identity] = (await env.call('GET', `/api/v1/identity?email=${encodeURIComponent(email)}`, admin)).body as { id: string; name: string }[];
      expect(identity).toMatchObject({ name: 'Chromium Google User' });
      expect(claimsOf(String(tokens.body.access_token)).sub).toBe(identity!.id);
      expect(problems).toEqual([]);
    });
  });
});
