import type { z } from 'zod';
import type { ServiceName } from './registry.js';

/**
 * A service's internal (service-to-service) API, declared once as a route table: each method
 * is one POST route under /internal (never routed by the gateway, open only to the platform's
 * own services) taking and answering JSON. The kit derives everything else from the table:
 * the typed client its peers hold, the routes the service serves in split mode, and the
 * in-process adapter of the all-in-one. Adding a method is one entry here and one function in
 * the service's implementation.
 */
export interface InternalMethod<Input extends z.ZodType = z.ZodType, Output extends z.ZodType = z.ZodType> {
  path: `/internal/${string}`;
  /** One line for the route's entry in the service's OpenAPI document (hidden from the public one). */
  summary: string;
  /** The request body, validated by the route before the implementation sees it. */
  input: Input;
  /** The answer's body: the route serializes it, the HTTP client checks it. */
  output: Output;
  /** The status of a success: 201 for a method that creates. 200 when absent. */
  status?: 200 | 201;
  /**
   * The status that means "nothing to answer" (404: none found; 422: it exists already): the
   * call resolves to undefined instead of failing. The implementation throws its own error
   * with this status, so the route answers that error's problem document.
   */
  absent?: 404 | 422;
  /**
   * On a caller's behalf: a call given the caller's authority is sent to this public route
   * (a GET, answering the same) instead, so the caller learns no more than it may read itself.
   */
  onBehalf?: { path(input: z.output<Input>): string; output: z.ZodType<z.output<Output>> };
}

export interface InternalApi<Service extends ServiceName = ServiceName, Methods extends Record<string, InternalMethod> = Record<string, InternalMethod>> {
  /** The service that serves it. */
  service: Service;
  methods: Methods;
}

/** Declares `service`'s internal API. */
export function defineInternalApi<const Service extends ServiceName, const Methods extends Record<string, InternalMethod>>(
  service: Service,
  methods: Methods,
): InternalApi<Service, Methods> {
  return { service, methods };
}

/**
 * Whose authority a call carries over HTTP: the bearer of the request being served,
 * forwarded; or, when absent, the calling process's own short-lived system token. In-process
 * calls are trusted and ignore it.
 */
export interface CallAuthority {
  authorization?: string;
}

/** What a method's call resolves to: its output, or undefined for its `absent` status. */
export type AnswerOf<Method extends InternalMethod> = z.output<Method['output']> | (Method extends { absent: number } ? undefined : never);

/** One method as its callers see it. */
export type InternalCallOf<Method extends InternalMethod> = (input: z.output<Method['input']>, authority?: CallAuthority) => Promise<AnswerOf<Method>>;

/**
 * A service's API as the others see it, derived from its table. It has two implementations
 * with one behaviour: in process (a function call into the service) and over HTTP (split
 * mode); callers never know which one they hold.
 */
export type ClientOf<Api extends InternalApi> = { readonly [Name in keyof Api['methods']]: InternalCallOf<Api['methods'][Name]> };

/** A cross-service call failed for reasons that say nothing about its input (down, timed out, 5xx). */
export class UpstreamError extends Error {
  constructor(
    readonly service: string,
    reason: string,
  ) {
    super(`${service}: ${reason}`);
    this.name = 'UpstreamError';
  }
}
