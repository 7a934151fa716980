// The hosted login page in a real browser (headless Chromium): a user signs in through it and
// lands back at the relying party with a code, with no console error and nothing the page's
// Content-Security-Policy blocks (form-action included, which browsers apply to the redirect
// after the submission). A screenshot of the form is kept in test/artifacts/. Needs a
// Chromium (Debian's `chromium` package, or CHROMIUM_PATH); without one the suite is skipped.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Page } from 'playwright-core';
import { watchPage, withChromium } from '../support/chromium.js';
import { CASES, startSsoPlatform, type SsoPlatform } from './harness.js';

const ARTIFACTS = fileURLToPath(new URL('../artifacts/', import.meta.url));
const PASSWORD = 'a password typed in a browser';

/** The relying party's callback: a page that says it got the code (the test reads the URL). */
async function startCallback(): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((_request, response) => {
    response.setHeader('content-type', 'text/html; charset=utf-8');
    response.end('<!doctype html><title>Back at the app</title><p>Signed in</p>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

withChromium('the login page in a browser', (browser) => {
  describe.each(CASES)('the login page in a browser (%s, %s)', (topology, mode) => {
    let env: SsoPlatform;
    let callback: Awaited<ReturnType<typeof startCallback>>;
    let page: Page;
    let problems: string[];
    let clientId: string;
    let email: string;

    beforeAll(async () => {
      [env, callback] = await Promise.all([startSsoPlatform(mode, topology), startCallback()]);
      const admin = await env.adminToken();
      email = `chromium-${randomUUID().slice(0, 8)}@example.com`;
      const identity = await env.call('POST', '/api/v1/identity', undefined, { name: 'Chromium User', email });
      const identityId = (identity.body as { id: string }[])[0]!.id;
      expect((await env.call('POST', '/api/v1/credentials', admin, { identity_id: identityId, provider: 'LOCAL', secret: PASSWORD })).status).toBe(201);
      const registered = await env.call('POST', '/api/v1/sso/clients', admin, { name: 'Browser Test App', type: 'public', redirect_uris: [callback.url] });
      clientId = (registered.body as { id: string }[])[0]!.id;
      page = await browser().newPage({ locale: 'pt-BR' });
      problems = await watchPage(page);
    });
    afterAll(async () => {
      await page?.close();
      await callback?.close();
      await env?.close();
    });

    it('signs in through the form and lands at the client with a code that redeems, with no console or CSP error', async () => {
      const verifier = randomBytes(32).toString('base64url');
      const url = new URL('/api/v1/sso/authorize', env.gateway);
      url.search = new URLSearchParams({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: callback.url,
        scope: 'openid email',
        state: 'browser-state',
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
        code_challenge_method: 'S256',
      }).toString();
      const response = await page.goto(url.toString());
      expect(response?.status()).toBe(200);
      // Accessible: the fields are found by their labels, in the browser's language.
      await page.getByLabel('E-mail').fill(email);
      await page.getByLabel('Senha').fill(PASSWORD);
      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: `${ARTIFACTS}login-page-${topology}-${mode}.png`, fullPage: true });
      await Promise.all([page.waitForURL(`${callback.url}?**`), page.getByRole('button', { name: 'Entrar' }).click()]);

      const back = new URL(page.url());
      expect(back.searchParams.get('state')).toBe('browser-state');
      const tokens = await env.token({ grant_type: 'authorization_code', client_id: clientId, redirect_uri: callback.url, code: back.searchParams.get('code')!, code_verifier: verifier });
      expect(tokens.status).toBe(200);
      expect(tokens.body.id_token).toEqual(expect.any(String));
      expect(problems).toEqual([]);
    });

    it('shows a wrong password as a message on the form itself, announced to assistive technology', async () => {
      await page.context().clearCookies();
      const url = new URL('/api/v1/sso/authorize', env.gateway);
      url.search = new URLSearchParams({
        response_type: 'code', client_id: clientId, redirect_uri: callback.url, scope: 'openid',
        code_challenge: createHash('sha256').update('v'.repeat(43)).digest('base64url'), code_challenge_method: 'S256',
      }).toString();
      await page.goto(url.toString());
      await page.getByLabel('E-mail').fill(email);
      await page.getByLabel('Senha').fill('not the password');
      await page.getByRole('button', { name: 'Entrar' }).click();
      await expect(page.getByRole('alert').innerText()).resolves.toBe('O e-mail ou a senha está incorreto.');
      expect(new URL(page.url()).pathname).toBe('/api/v1/sso/login');
      await page.screenshot({ path: `${ARTIFACTS}login-page-wrong-password-${topology}-${mode}.png`, fullPage: true });
      // The form shown again answers 400 (the sign-in failed), and Chromium logs a document's 4xx: that one entry, nothing else.
      expect(problems).toEqual(['console error: Failed to load resource: the server responded with a status of 400 (Bad Request)']);
    });
  });
});
