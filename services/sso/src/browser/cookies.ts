import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { parse, serialize } from 'cookie';
import type { FastifyRequest } from 'fastify';
import { COOKIE_PATH } from './paths.js';

/** The browser session's cookie: its value is 256 random bits, stored only as a SHA-256. */
export const SESSION_COOKIE = 'sso_session';
/** The login form's anti-forgery cookie, one per pending request (several tabs may sign in at once). */
export const formCookieName = (requestId: string) => `sso_form_${requestId}`;

/** 256 random bits, base64url: a cookie value or anti-forgery value nobody can guess. */
export const randomToken = () => randomBytes(32).toString('base64url');
export const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

/** Compares two hex digests without leaking where they differ. */
export function sameDigest(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && left.length > 0 && timingSafeEqual(left, right);
}

/** A cookie's value, or undefined; a malformed Cookie header counts as none. */
export function cookieOf(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  try {
    return parse(header)[name];
  } catch {
    return undefined;
  }
}

/**
 * HttpOnly (no script reads it), SameSite=Lax (sent on the top-level navigation back from a
 * client or an upstream provider, never on a cross-site POST), Secure whenever the issuer is
 * https, scoped to sso's prefix.
 */
export function setCookie(name: string, value: string, options: { maxAgeSeconds: number; secure: boolean }): string {
  return serialize(name, value, { httpOnly: true, sameSite: 'lax', secure: options.secure, path: COOKIE_PATH, maxAge: options.maxAgeSeconds });
}

export const clearCookie = (name: string, secure: boolean) => setCookie(name, '', { maxAgeSeconds: 0, secure });
