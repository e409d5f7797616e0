export interface Runtime {
  name: 'node22' | 'node24' | 'node26' | 'deno' | 'bun';
  package: string;
  version: string;
  bin: string;
}
export declare const RUNTIMES: Runtime[];
export declare function runtimesCache(env?: Record<string, string | undefined>): string;
export declare function runtimePath(runtime: Runtime, env?: Record<string, string | undefined>): string;
export declare function ensureRuntimes(options?: {
  env?: Record<string, string | undefined>;
  names?: string[];
  installer?: (runtime: Runtime, env: Record<string, string | undefined>) => Promise<string>;
}): Promise<{ available: Array<Runtime & { path: string }>; missing: Array<{ name: string; reason: string }> }>;
