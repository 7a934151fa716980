import type { CallAuthority, ClientOf, InternalApi, InternalMethod } from '@app/contracts';
import type { z } from 'zod';
import { systemPrincipal, type Principal } from '../auth/auth.js';
import { principalOf } from '../auth/route-auth.js';
import type { App } from '../http/app.js';
import { AppError } from '../http/errors.js';

/** Who makes a call to a service's internal API, as its implementation sees it. */
export interface InternalCall {
  /** The calling service (its system token) over HTTP; this service itself in process (trusted as `system`). */
  principal: Principal;
  /** The authority to ask further peers with on the caller's behalf: its bearer over HTTP, none in process. */
  authority: CallAuthority;
  /** Adds a header to the HTTP answer (where to read what was created); in process there is no answer, and it does nothing. */
  header(name: string, value: string): void;
}

/**
 * A service's implementation of its internal API, typed from the table: one function per
 * method, taking the validated input. It answers the method's output, or throws an error
 * (an AppError with the method's `absent` status when there is nothing to answer).
 */
export type InternalImplementation<Api extends InternalApi> = {
  readonly [Name in keyof Api['methods']]: (input: z.output<Api['methods'][Name]['input']>, call: InternalCall) => Promise<z.output<Api['methods'][Name]['output']>>;
};

type AnyImplementation = Record<string, (input: unknown, call: InternalCall) => Promise<unknown>>;

const security = [{ bearerAuth: [] }];

/**
 * Serves `api` over HTTP (split mode): one POST route per method, open only to the platform's
 * own services (`platform` route auth: their system token), its body validated against the
 * method's input and its answer serialized by its output.
 */
export async function registerInternalRoutes<Api extends InternalApi>(app: App, api: Api, implementation: InternalImplementation<Api>): Promise<void> {
  const implementations = implementation as unknown as AnyImplementation;
  for (const [name, method] of Object.entries(api.methods) as [string, InternalMethod][]) {
    const implement = implementations[name]!;
    const status = method.status ?? 200;
    app.post(
      method.path,
      {
        config: { auth: 'platform' },
        schema: {
          // Not routed by the edge, so not part of the public document either.
          hide: true,
          tags: ['Internal'],
          summary: method.summary,
          security,
          body: method.input,
          // Only the success: every error is a problem document the error handler sends itself.
          response: { [status]: method.output },
        },
      },
      async (request, reply) => {
        const call: InternalCall = {
          principal: principalOf(request),
          authority: { authorization: request.headers.authorization },
          header: (header, value) => void reply.header(header, value),
        };
        return reply.code(status).send(await implement(request.body, call));
      },
    );
  }
}

/**
 * `api`'s in-process client (the all-in-one, and a peer of the same process): each call is a
 * function call into the implementation, unvalidated as it comes from trusted code, with the
 * same answers as over HTTP: the method's `absent` status resolves to undefined, any other
 * error reaches the caller as thrown.
 */
export function inProcessClient<Api extends InternalApi>(api: Api, implementation: InternalImplementation<Api>): ClientOf<Api> {
  const implementations = implementation as unknown as AnyImplementation;
  const call: InternalCall = { principal: systemPrincipal(api.service), authority: {}, header: () => undefined };
  const callOf = (name: string, method: InternalMethod) => {
    const implement = implementations[name]!;
    if (method.absent === undefined) return (input: unknown) => implement(input, call);
    return async (input: unknown) => {
      try {
        return await implement(input, call);
      } catch (error) {
        if (error instanceof AppError && error.statusCode === method.absent) return undefined;
        throw error;
      }
    };
  };
  return Object.fromEntries(Object.entries(api.methods).map(([name, method]) => [name, callOf(name, method)])) as ClientOf<Api>;
}
