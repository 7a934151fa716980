// The part of autocannon's API the bench uses (the package ships no types).
declare module 'autocannon' {
  interface Options {
    url: string;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    connections?: number;
    duration?: number;
    overallRate?: number;
    /** Seconds a request may take before it counts as a timeout (10 by default). */
    timeout?: number;
    /** Each request's options, rewritten before it is sent (a new path each time, say). */
    requests?: { setupRequest?(request: RequestOptions): RequestOptions }[];
  }
  interface RequestOptions {
    path?: string;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
  }
  interface Histogram {
    average: number;
    p50: number;
    p99: number;
  }
  interface Result {
    requests: Histogram;
    latency: Histogram;
    non2xx: number;
    errors: number;
    timeouts: number;
    statusCodeStats?: Record<string, { count: number }>;
  }
  function autocannon(options: Options): Promise<Result>;
  namespace autocannon {
    export type { Options, Result };
  }
  export default autocannon;
}
