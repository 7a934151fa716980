import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { missingVariables, replicaPort, startSplit } from '@app/split';

const main = fileURLToPath(new URL('../dist/main.js', import.meta.url));

/** Runs the launcher's built entry with `args` and only PATH and `env`; resolves with its exit code and stderr. */
function run(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [main, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('exit', (code) => resolve({ code, stderr }));
  });
}

describe('npm run start:split', () => {
  it('refuses to start without the servers its processes share, naming each missing variable (exit 78)', async () => {
    const { code, stderr } = await run(['--replicas', '2'], { REDIS_URL: 'redis://127.0.0.1:6379' });
    expect(code).toBe(78);
    expect(stderr).toContain('missing: DATABASE_URL, NATS_URL');
    expect(stderr).not.toContain('missing: DATABASE_URL, REDIS_URL');
  });

  it.each([['0'], ['10'], ['two'], ['1.5']])('refuses --replicas %s (exit 64) and says what it takes', async (value) => {
    const { code, stderr } = await run(['--replicas', value]);
    expect(code).toBe(64);
    expect(stderr).toContain('--replicas takes a whole number from 1 to 9');
  });

  it('refuses an unknown option (exit 64) with its usage', async () => {
    const { code, stderr } = await run(['--replica', '2']);
    expect(code).toBe(64);
    expect(stderr).toContain('usage: npm run start:split -- [--replicas N]');
  });

  it('refuses a bad variable of any service before it starts a process, naming it as the all-in-one does (exit 78)', async () => {
    const servers = { DATABASE_URL: 'postgres://127.0.0.1:1/none', REDIS_URL: 'redis://127.0.0.1:1', NATS_URL: 'nats://127.0.0.1:1' };
    const { code, stderr } = await run([], { ...servers, ARGON2_MEMORY_KIB: '1024', SIGNUP_RATE_LIMIT: 'often', GITHUB_CLIENT_SECRET: 'a-github-secret', UPSTREAM_TIMEOUT_MS: '0' });
    expect(code).toBe(78);
    expect(stderr.split('\n').filter((line) => line.startsWith('  ')).map((line) => line.trim().split(':')[0])).toEqual(['SIGNUP_RATE_LIMIT', 'ARGON2_MEMORY_KIB', 'GITHUB_CLIENT_ID', 'UPSTREAM_TIMEOUT_MS']);
    expect(stderr).toContain('ARGON2_MEMORY_KIB: expected argon2id costs at or above OWASP\'s minimum');
    expect(stderr).not.toContain('a-github-secret');
    await expect(startSplit({ replicas: 1, port: 0, env: { ...servers, SIGNUP_RATE_LIMIT: 'often' } })).rejects.toThrow('SIGNUP_RATE_LIMIT: expected <count>/<seconds>');
  });

  it('puts replica r of a service at PORT + 100 r + its registry offset', () => {
    expect(replicaPort(3000, 'crud', 1)).toBe(3104);
    expect(replicaPort(3000, 'crud', 2)).toBe(3204);
    expect(replicaPort(4000, 'identity', 3)).toBe(4301);
  });

  it('says which variables are missing, and the programmatic start refuses too', async () => {
    expect(missingVariables({ DATABASE_URL: 'postgres://x', REDIS_URL: '', NATS_URL: 'nats://y' })).toEqual(['REDIS_URL']);
    await expect(startSplit({ replicas: 1, port: 0, env: {} })).rejects.toThrow('split mode needs DATABASE_URL, REDIS_URL, NATS_URL');
  });
});
