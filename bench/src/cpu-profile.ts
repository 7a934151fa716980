// Self time per function in a V8 CPU profile (the .cpuprofile JSON `node --cpu-prof` writes).
// Pure: takes the parsed JSON, returns numbers; `npm run bench -- --profile` prints them.
//
// A profile is a call tree (`nodes`, each with a `callFrame`) plus a sample list: `samples[i]`
// is the id of the node on top of the stack at the i-th tick, `timeDeltas[i]` the microseconds
// since the tick before (the first one since `startTime`). A node's self time is the time of
// the samples that landed on it; a function's is the sum over every node (call path) running it.

/** A V8 call frame: the function and where it is. */
export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

/** The parsed JSON of a .cpuprofile. */
export interface CpuProfile {
  nodes: { id: number; callFrame: CallFrame; hitCount?: number }[];
  samples?: number[];
  timeDeltas?: number[];
  startTime: number;
  endTime: number;
}

interface Span {
  nodeId: number;
  at: number | undefined;
  duration: number;
}

/** Frames that are not work: the tree's root, and the time the event loop sat waiting. */
const NOT_WORK = new Set(['(root)', '(idle)']);

/**
 * Each sample's node, timestamp and duration, as Chrome DevTools reckons them: a sample lasts
 * until the next one, the last until the profile's `endTime`. Older profiles without `samples`
 * spread the profile's duration over the nodes' `hitCount`s (no timestamps then).
 */
function sampleSpans(profile: CpuProfile): Span[] {
  const { samples, timeDeltas, startTime, endTime } = profile;
  if (Array.isArray(samples) && Array.isArray(timeDeltas) && samples.length === timeDeltas.length && samples.length > 0) {
    const at: number[] = new Array<number>(samples.length);
    let now = startTime;
    for (let i = 0; i < samples.length; i++) {
      now += timeDeltas[i]!;
      at[i] = now;
    }
    return samples.map((nodeId, i) => ({
      nodeId,
      at: at[i],
      // Deltas can be slightly negative when ticks arrive out of order; a span never is.
      duration: Math.max(0, (i + 1 < at.length ? at[i + 1]! : endTime) - at[i]!),
    }));
  }
  const hits = profile.nodes.reduce((sum, node) => sum + (node.hitCount ?? 0), 0);
  const perHit = hits > 0 ? (endTime - startTime) / hits : 0;
  return profile.nodes.filter((node) => (node.hitCount ?? 0) > 0).map((node) => ({ nodeId: node.id, at: undefined, duration: (node.hitCount ?? 0) * perHit }));
}

/**
 * The functions that spent the most time on top of the stack.
 *
 * @param profile a parsed .cpuprofile
 * @param options.limit how many functions to return (default 10)
 * @param options.window `{ from, to }` in microseconds on the profile's clock: count only the
 *   samples taken in between (ignored, and `windowed: false`, for profiles without timestamps)
 * @returns `busyMs` (every sample but idle), `idleMs`, `windowed`, and `functions`: name, url,
 *   1-based line, self ms and percent of `busyMs`, largest first
 */
export function topSelfTime(profile: CpuProfile, { limit = 10, window }: { limit?: number; window?: { from: number; to: number } | undefined } = {}) {
  const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const spans = sampleSpans(profile);
  const windowed = Boolean(window) && spans.every((span) => span.at !== undefined);
  const byFunction = new Map<string, { frame: CallFrame; self: number }>();
  let busy = 0;
  let idle = 0;
  for (const span of spans) {
    if (windowed && (span.at! < window!.from || span.at! > window!.to)) continue;
    const frame = frames.get(span.nodeId);
    if (!frame) continue;
    if (frame.functionName === '(idle)') idle += span.duration;
    if (NOT_WORK.has(frame.functionName)) continue;
    busy += span.duration;
    const key = `${frame.functionName}\0${frame.url}\0${frame.lineNumber}\0${frame.columnNumber}`;
    const entry = byFunction.get(key);
    if (entry) entry.self += span.duration;
    else byFunction.set(key, { frame, self: span.duration });
  }
  const functions = [...byFunction.values()]
    .sort((a, b) => b.self - a.self)
    .slice(0, limit)
    .map(({ frame, self }) => ({
      name: frame.functionName || '(anonymous)',
      url: frame.url,
      // V8 numbers lines from 0; editors and stack traces from 1.
      line: frame.lineNumber >= 0 ? frame.lineNumber + 1 : undefined,
      selfMs: self / 1000,
      percent: busy > 0 ? (100 * self) / busy : 0,
    }));
  return { busyMs: busy / 1000, idleMs: idle / 1000, windowed, functions };
}
