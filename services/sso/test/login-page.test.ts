// The hosted login page's markup, as the federation routes will use it: a link per configured
// upstream provider to its start URL for the pending request, and every value escaped.
import { describe, expect, it } from '@jest/globals';
import { loginPage, type PageContext } from '../src/browser/pages.js';
import { federationStartPath } from '../src/browser/paths.js';
import { translate } from '@app/platform';

const english: PageContext = { locale: 'en', t: (key, params) => translate('en', key, params) };
const form = {
  action: '/api/v1/sso/login',
  requestId: '6b1e1d1e-0000-4000-8000-000000000000',
  csrf: 'the-anti-forgery-value',
  clientName: 'My App',
  redirectOrigin: 'https://app.example.com',
  upstreamLink: (provider: 'google' | 'github') => federationStartPath(provider, '6b1e1d1e-0000-4000-8000-000000000000'),
};

describe('the login page', () => {
  it('offers each configured upstream provider, linking to its start for this request', () => {
    const page = loginPage(english, { ...form, upstream: [{ id: 'google', label: 'Google' }, { id: 'github', label: 'GitHub' }] });
    expect(page.body).toContain('<a class="upstream" href="/api/v1/sso/federation/google/start?request=6b1e1d1e-0000-4000-8000-000000000000">Sign in with Google</a>');
    expect(page.body).toContain('<a class="upstream" href="/api/v1/sso/federation/github/start?request=6b1e1d1e-0000-4000-8000-000000000000">Sign in with GitHub</a>');
  });

  it('offers none when none is configured', () => {
    expect(loginPage(english, { ...form, upstream: [] }).body).not.toContain('upstream');
  });

  it('escapes what it did not write itself: the client name, the username, the message', () => {
    const page = loginPage(english, { ...form, upstream: [], clientName: '<script>x</script>', username: '"><img src=x>', message: "it's <b>" });
    expect(page.body).not.toMatch(/<script|<img|<b>/);
    expect(page.body).toContain('&lt;script&gt;x&lt;/script&gt;');
    expect(page.body).toContain('value="&quot;&gt;&lt;img src=x&gt;"');
    expect(page.body).toContain('<p class="alert" role="alert">it&#39;s &lt;b&gt;</p>');
  });

  it('lets its form post only here and to the origin the sign-in ends at', () => {
    expect(loginPage(english, { ...form, upstream: [] }).formTargets).toEqual(['https://app.example.com']);
  });
});
