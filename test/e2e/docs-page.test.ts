// The docs page (/docs, swagger-ui) in a real browser: it loads without a console error or a
// Content-Security-Policy violation, the bodies it pre-fills satisfy their schemas, and the
// product it offers to create is created. Needs a Chromium (Debian's `chromium` package, or
// CHROMIUM_PATH); without one the suite is skipped and says so.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Page } from 'playwright-core';
import { itIf, readJson } from '@app/testing';
import { bootstrapAdmin, DEPLOYMENTS, type Running } from '../support/deployments.js';
import { watchPage, withChromium } from '../support/chromium.js';
import { operationsOf, schemaValidator, type OpenApi } from '../support/openapi.js';

const admin = bootstrapAdmin();

withChromium('the docs page in a browser', (browser) => {
  describe.each(DEPLOYMENTS.map((deployment, i) => ({ ...deployment, first: i === 0 })))('the docs page ($name)', (deployment) => {
    let running: Running;
    let page: Page;
    let problems: string[];

    beforeAll(async () => {
      running = await deployment.start(admin.env);
      page = await browser().newPage();
      problems = await watchPage(page);
    });
    afterAll(async () => {
      await page?.close();
      await running?.close();
    });

    it('loads with no console error and nothing its Content-Security-Policy blocks', async () => {
      const response = await page.goto(`${running.url}/docs`);
      expect(response?.headers()['content-security-policy']).not.toContain('unsafe-inline');
      await page.locator('.opblock').first().waitFor();
      // The topbar's logo (the one inline style) has been drawn and replaced by then.
      await page.locator('.topbar-wrapper img').waitFor();
      expect(problems).toEqual([]);
    });

    it('creates a product from the example it pre-fills, once authorized', async () => {
      const token = await admin.signIn(running.url);
      await page.locator('.btn.authorize').click();
      await page.locator('.modal-ux input').fill(token);
      await page.locator('.modal-ux .btn.modal-btn.auth.authorize').click();
      await page.locator('.modal-ux .btn-done').click();
      const operation = page.locator('#operations-Product-createProduct');
      await operation.locator('.opblock-summary').click();
      await operation.locator('.try-out__btn').click();
      const body = JSON.parse(await operation.locator('textarea.body-param__text').inputValue()) as { price: number };
      expect(body.price).toBeLessThanOrEqual(99999999.99);
      await operation.locator('.execute').click();
      await expect(operation.locator('.live-responses-table .response .response-col_status').first().innerText()).resolves.toBe('201');
      expect(problems).toEqual([]);
    });

    // The UI is the same and the document equal in every deployment (openapi.test.ts): once is enough.
    itIf(deployment.first, 'runs once, on the first deployment')('pre-fills every JSON request body with a value its schema accepts', async () => {
      const document = (await readJson(await fetch(`${running.url}/docs/json`))) as OpenApi;
      const validate = schemaValidator(document);
      const withBodies = operationsOf(document).filter(({ operation }) => Object.keys(operation.requestBody?.content ?? {})[0] === 'application/json');
      expect(withBodies.length).toBeGreaterThan(6);
      // From a fresh page: every operation folded, none in "Try it out".
      await page.goto(`${running.url}/docs`);
      for (const { method, path, operation } of withBodies) {
        const block = page.locator(`#operations-${operation.tags[0]}-${operation.operationId}`);
        await block.locator('.opblock-summary').click();
        await block.locator('.opblock-body').waitFor();
        await block.locator('.try-out__btn').click();
        const body = JSON.parse(await block.locator('textarea.body-param__text').inputValue()) as unknown;
        const where = `${method.toUpperCase()} ${path}`;
        expect([where, validate(operation.requestBody.content['application/json'].schema, body)]).toEqual([where, undefined]);
        await block.locator('.try-out__btn.cancel').click();
        await block.locator('.opblock-summary').click();
      }
      expect(problems).toEqual([]);
    });
  });
});
