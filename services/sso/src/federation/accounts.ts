import type { CredentialsClient, IdentityClient } from '@app/contracts';
import { z } from 'zod';
import { CREDENTIAL_PROVIDER_OF, FederationError, type UpstreamAccount } from './provider.js';

/** Who a completed upstream sign-in is here. */
export interface ResolvedAccount {
  identityId: string;
  credentialId: string;
}

export interface AccountResolverDeps {
  identities: IdentityClient;
  credentials: CredentialsClient;
}

/** identity's own limits on what it stores (its name column, the WHATWG email pattern). */
const NAME_MAX = 200;
const emailSchema = z.email({ pattern: z.regexes.html5Email }).max(320);

/** The name a new identity gets: the provider's, else the address's local part. */
const nameFor = (account: UpstreamAccount) => (account.name?.trim() || account.email.split('@')[0]!).slice(0, NAME_MAX);

/**
 * Finds or creates the identity an upstream account signs in as:
 *
 * - a subject a GOOGLE/GITHUB credential holds signs in as that credential's identity, while
 *   both are activated;
 * - an unknown subject whose (verified) email no identity has creates the identity, activated,
 *   and links the subject to it;
 * - an unknown subject whose email an identity has already is refused, never linked: whoever
 *   controls that address at the provider would otherwise take over a password account.
 *   Linking is an admin's act (a GOOGLE/GITHUB credential with the subject, POST /credentials).
 */
export function createAccountResolver(deps: AccountResolverDeps) {
  const { identities, credentials } = deps;

  /** The credential's identity, if both may still sign in. */
  const signInAs = async (found: { identityId: string; credentialId: string; activated: boolean }): Promise<ResolvedAccount> => {
    if (!found.activated) throw new FederationError('accountDisabled', `credential ${found.credentialId} is deactivated`);
    const identity = await identities.lookup({ id: found.identityId });
    if (!identity?.activated) throw new FederationError('accountDisabled', `identity ${found.identityId} is deactivated or gone`);
    return { identityId: identity.id, credentialId: found.credentialId };
  };

  return {
    async resolve(account: UpstreamAccount): Promise<ResolvedAccount> {
      const provider = CREDENTIAL_PROVIDER_OF[account.provider];
      const known = await credentials.findFederated({ provider, subject: account.subject });
      if (known) return signInAs(known);

      const email = emailSchema.safeParse(account.email.toLowerCase());
      if (!email.success) throw new FederationError('upstreamFailed', 'the provider vouched for an email identity cannot store');
      const taken = () => new FederationError('emailTaken', `an identity has ${email.data} already`, { email: email.data });
      if (await identities.lookup({ email: email.data })) throw taken();
      // Two first sign-ins with one address at once: identity's unique email lets one win.
      const identity = await identities.create({
        name: nameFor(account),
        email: email.data,
        roles: [],
        ...(account.picture ? { avatar: account.picture } : {}),
      });
      if (!identity) throw taken();
      const linked = await credentials.createFederated({ identityId: identity.id, provider, subject: account.subject });
      if (linked) return { identityId: identity.id, credentialId: linked.credentialId };
      // The subject got linked meanwhile (to another identity): sign in as that one.
      const winner = await credentials.findFederated({ provider, subject: account.subject });
      if (!winner) throw new FederationError('unavailable', 'the subject was neither linkable nor linked');
      return signInAs(winner);
    },
  };
}

export type AccountResolver = ReturnType<typeof createAccountResolver>;
