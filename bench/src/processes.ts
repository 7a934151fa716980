// Everything the bench starts (processes, directories, databases, servers) is tracked here, so
// an error or Ctrl-C still cleans it all up.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './settings.js';

/** Longest wait for a process to answer its readiness probe: PGlite and the migrations take ~10 s on an idle machine. */
export const START_TIMEOUT_MS = 120_000;
/** Longest wait for a process to exit after SIGTERM (a --cpu-prof process writes its profile then) before SIGKILL. */
export const STOP_TIMEOUT_MS = 20_000;

export interface Handle {
  name: string;
  child: ChildProcess;
  /** Resolves with the exit code or signal. */
  exited: Promise<number | string | null>;
  log: string;
}

interface Closable {
  close(): Promise<unknown>;
}

const live = { children: new Set<Handle>(), dirs: new Set<string>(), databases: new Set<() => Promise<void>>(), servers: new Set<Closable>() };

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function tempDir(label: string): string {
  const dir = mkdtempSync(join(tmpdir(), `api-bench-${label}-`));
  live.dirs.add(dir);
  return dir;
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  live.dirs.delete(dir);
}

/** Tracks a database until `drop` ran; `drop` is called on clean-up if it never was. */
export function ownDatabase(drop: () => Promise<void>): () => Promise<void> {
  const once = async () => {
    live.databases.delete(once);
    await drop();
  };
  live.databases.add(once);
  return once;
}

/** Tracks a server of the bench's own until it is closed. */
export function ownServer<S extends Closable>(server: S): S {
  live.servers.add(server);
  return server;
}

export function lastLines(path: string, count = 25): string {
  if (!existsSync(path)) return '(no log)';
  const lines = readFileSync(path, 'utf8').trimEnd().split('\n');
  return lines.slice(-count).map((line) => line.slice(0, 400)).join('\n');
}

/** A readiness probe: whether `url` answers `status`. */
export const answers =
  (url: string, status = 200) =>
  async (): Promise<boolean> =>
    (await fetch(url, { signal: AbortSignal.timeout(2000) })).status === status;

export interface StartOptions {
  env: NodeJS.ProcessEnv;
  log: string;
  ready(): Promise<boolean>;
  pollMs?: number;
  /** Working directory (default: the bench's checkout). */
  cwd?: string;
}

/**
 * Spawns a process in its own process group (so nginx's workers go with their master) with
 * its output in `log`, and resolves once `ready()` is true. Rejects with the log's tail when
 * the process exits or is not ready within START_TIMEOUT_MS.
 */
export async function startProcess(name: string, command: string, args: string[], { env, log, ready, pollMs = 200, cwd = ROOT }: StartOptions): Promise<Handle> {
  const fd = openSync(log, 'a');
  const child = spawn(command, args, { cwd, env, stdio: ['ignore', fd, fd], detached: true });
  closeSync(fd);
  const exited = new Promise<number | string | null>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
  child.once('error', () => undefined);
  const handle: Handle = { name, child, exited, log };
  live.children.add(handle);
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) {
      live.children.delete(handle);
      throw new Error(`${name} exited (${child.exitCode ?? child.signalCode}) before it was ready; its log ends:\n${lastLines(log)}`);
    }
    if (await ready().catch(() => false)) return handle;
    if (Date.now() > deadline) {
      await stopProcess(handle);
      throw new Error(`${name} was not ready within ${START_TIMEOUT_MS / 1000} s; its log ends:\n${lastLines(log)}`);
    }
    await sleep(pollMs);
  }
}

const killGroup = (handle: Handle, signal: NodeJS.Signals) => {
  try {
    process.kill(-handle.child.pid!, signal);
  } catch {
    // already gone
  }
};

/** SIGTERM to the process group, SIGKILL after STOP_TIMEOUT_MS; resolves with the exit code or signal. */
export async function stopProcess(handle: Handle): Promise<number | string | null> {
  const { child, exited } = handle;
  if (child.exitCode === null && child.signalCode === null) {
    killGroup(handle, 'SIGTERM');
    const outcome = await Promise.race([exited, sleep(STOP_TIMEOUT_MS).then(() => 'timeout' as const)]);
    if (outcome === 'timeout') {
      console.error(`  ${handle.name} did not exit within ${STOP_TIMEOUT_MS / 1000} s of SIGTERM; killing it`);
      killGroup(handle, 'SIGKILL');
    }
  }
  const code = await exited;
  live.children.delete(handle);
  return code;
}

/** Ctrl-C: SIGINT to the process group; resolves with the seconds to exit and the exit code. */
export async function interrupt(handle: Handle): Promise<{ seconds: number; code: number | string | null }> {
  const started = performance.now();
  killGroup(handle, 'SIGINT');
  const code = await Promise.race([handle.exited, sleep(STOP_TIMEOUT_MS).then(() => 'timeout')]);
  const seconds = (performance.now() - started) / 1000;
  if (code === 'timeout') await stopProcess(handle);
  live.children.delete(handle);
  return { seconds, code };
}

/** A system's parts, stopped last first: what `withParts` hands its `build`. */
export type Own = (stop: () => Promise<unknown>) => void;

/**
 * Builds a system whose parts (processes, directories, databases) `build` registers with
 * `own(stop)` as it starts them. Returns what `build` returns plus `stop()`, which stops the
 * parts last first; when `build` throws, the parts started so far are stopped before the error
 * goes on, so a system that fails half-way leaves nothing running into the next scenario.
 */
export async function withParts<T extends object>(build: (own: Own) => Promise<T>): Promise<T & { stop(): Promise<void> }> {
  const parts: (() => Promise<unknown>)[] = [];
  const stop = async () => {
    while (parts.length > 0) await parts.pop()!().catch((error: Error) => console.error(`  cleaning up: ${error.message}`));
  };
  try {
    return { ...(await build((part) => parts.push(part))), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Stops every process, drops every database and removes every directory the bench made. */
export async function cleanUp(): Promise<void> {
  await Promise.all([...live.children].map((handle) => stopProcess(handle).catch(() => undefined)));
  for (const server of live.servers) await server.close().catch(() => undefined);
  live.servers.clear();
  for (const drop of live.databases) await drop().catch((error: Error) => console.error(`could not drop a bench database: ${error.message}`));
  for (const dir of live.dirs) removeDir(dir);
}

/** Cleans up on Ctrl-C and SIGTERM, and kills what is left when the process exits some other way. */
export function cleanUpOnExit(): void {
  // Last resort: nothing asynchronous runs here.
  process.on('exit', () => {
    for (const handle of live.children) killGroup(handle, 'SIGKILL');
    for (const dir of live.dirs) rmSync(dir, { recursive: true, force: true });
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.error(`\n${signal}: stopping every process the bench started...`);
      void cleanUp().finally(() => process.exit(130));
    });
  }
}
