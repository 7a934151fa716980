import { z } from 'zod';
import type { $ZodIssue } from 'zod/v4/core';

/** The locales every message exists in; `en` is the fallback. */
export const LOCALES = ['en', 'pt-BR', 'es', 'fr', 'de'] as const;
export type Locale = (typeof LOCALES)[number];

export type MessageParams = Record<string, string | number>;
export type MessageBundle = Record<Locale, Record<string, string>>;

const zodLocales: Record<Locale, ReturnType<typeof z.locales.en>> = {
  en: z.locales.en(),
  'pt-BR': z.locales.ptBR(),
  es: z.locales.es(),
  fr: z.locales.fr(),
  de: z.locales.de(),
};

const catalog: MessageBundle = { en: {}, 'pt-BR': {}, es: {}, fr: {}, de: {} };

/**
 * Adds a bundle of messages to the catalog. Each lib and service registers its own keys
 * (prefixed by its name) once, at import time; every key must exist in every locale.
 */
export function defineMessages(bundle: MessageBundle): void {
  const keys = new Set(Object.keys(bundle.en));
  for (const locale of LOCALES) {
    for (const key of keys) {
      if (bundle[locale][key] === undefined) throw new Error(`message "${key}" is missing in ${locale}`);
    }
    Object.assign(catalog[locale], bundle[locale]);
  }
}

/** Picks the best supported locale for an Accept-Language header (RFC 9110 §12.5.4). */
export function negotiateLocale(acceptLanguage: string | undefined): Locale {
  if (!acceptLanguage) return 'en';
  const ranges = acceptLanguage
    .slice(0, 512) // a longer header is abuse, not a preference list
    .split(',')
    .map((part, index) => {
      const [tag = '', ...params] = part.trim().split(';');
      const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
      const weight = q === undefined ? 1 : Number(q.slice(2));
      return { tag: tag.trim().toLowerCase(), weight: Number.isFinite(weight) ? weight : 0, index };
    })
    .filter((range) => range.tag !== '' && range.weight > 0)
    .sort((a, b) => b.weight - a.weight || a.index - b.index);
  for (const { tag } of ranges) {
    const exact = LOCALES.find((locale) => locale.toLowerCase() === tag);
    if (exact) return exact;
    const primary = tag.split('-')[0];
    const sameLanguage = LOCALES.find((locale) => locale.toLowerCase().split('-')[0] === primary);
    if (sameLanguage) return sameLanguage;
  }
  return 'en';
}

/** The message for `key` in `locale` (falling back to English, then to the key itself). */
export function translate(locale: Locale, key: string, params: MessageParams = {}): string {
  const template = catalog[locale][key] ?? catalog.en[key] ?? key;
  return template.replace(/\{(\w+)\}/g, (match, name: string) =>
    params[name] === undefined ? match : String(params[name]),
  );
}

/**
 * A zod issue's message in `locale`. Issues from our own refinements carry a message key in
 * `params.key` (see `issueKey`); all others are worded by zod's own locale.
 */
export function localizeIssue(locale: Locale, issue: $ZodIssue): string {
  if (issue.code === 'custom' && typeof issue.params?.key === 'string') {
    return translate(locale, issue.params.key, (issue.params.values ?? {}) as MessageParams);
  }
  const worded = zodLocales[locale].localeError(issue as never);
  const message = typeof worded === 'string' ? worded : worded?.message;
  return message ?? issue.message;
}

/** Params for a zod refinement whose message is one of our catalog keys. */
export function issueKey(key: string, values?: MessageParams): { params: { key: string; values?: MessageParams } } {
  return { params: values ? { key, values } : { key } };
}
