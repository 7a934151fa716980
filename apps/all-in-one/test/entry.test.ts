import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from '@jest/globals';

const root = fileURLToPath(new URL('../../..', import.meta.url));

/** The gateway's proxy stack: its proxy module, @fastify/http-proxy, reply-from under it, and undici. */
const PROXY_STACK = String.raw`/services/gateway/src/proxy\.ts$|/node_modules/(undici|@fastify/http-proxy|@fastify/reply-from)/`;

/** Module hooks that refuse to resolve any module of the proxy stack imported as ESM, naming who imported it. */
const refuseProxyHooks = `
  const stack = new RegExp(${JSON.stringify(PROXY_STACK)});
  export async function resolve(specifier, context, next) {
    const resolved = await next(specifier, context);
    if (stack.test(resolved.url)) throw new Error('proxy stack loaded: ' + resolved.url + ' imported by ' + context.parentURL);
    return resolved;
  }`;

/**
 * Runs `program` (an ES module's text) in a fresh node on the sources (`source` condition,
 * TypeScript through tsx) with the hooks above, then fails it if a CommonJS module of the
 * proxy stack got required all the same (undici is required, not imported).
 */
async function runRefusingProxy(program: string): Promise<void> {
  const register = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(refuseProxyHooks)}`)});`;
  const check = `
    import { createRequire } from 'node:module';
    ${program}
    const loaded = Object.keys(createRequire(import.meta.url).cache).filter((path) => new RegExp(${JSON.stringify(PROXY_STACK)}).test(path));
    if (loaded.length > 0) throw new Error('proxy stack required: ' + loaded.join(', '));`;
  await promisify(execFile)(
    process.execPath,
    ['--conditions=source', '--import', 'tsx', '--import', `data:text/javascript,${encodeURIComponent(register)}`, '--input-type=module', '-e', check],
    { cwd: root, env: { PATH: process.env.PATH } },
  );
}

describe('the all-in-one entry', () => {
  it('loads every service without the gateway’s proxy, @fastify/http-proxy or undici', async () => {
    await expect(runRefusingProxy(`const platform = await import('@app/all-in-one'); if (!platform.buildPlatform) throw new Error('no buildPlatform');`)).resolves.toBeUndefined();
  });

  it('would be caught loading the proxy: the check above fails on an eager import', async () => {
    await expect(runRefusingProxy(`await import('@fastify/http-proxy');`)).rejects.toThrow(/proxy stack loaded: .*http-proxy/);
    await expect(runRefusingProxy(`createRequire(import.meta.url)('undici');`)).rejects.toThrow(/proxy stack required: .*undici/);
  });
});
