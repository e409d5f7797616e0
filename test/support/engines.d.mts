export declare const ENGINES: readonly ['chromium', 'firefox', 'webkit'];
export type EngineName = (typeof ENGINES)[number];

/** A function run in the page (its source is sent, so it closes over nothing), with JSON arguments. */
export type PageFunction<Args extends unknown[], Result> = (...args: Args) => Result | Promise<Result>;

export interface EnginePage {
  readonly engine: EngineName;
  /** Navigates and waits for the load event. */
  goto(url: string): Promise<void>;
  /** Runs `fn` in the page and resolves with its (awaited, JSON) result. */
  evaluate<Args extends unknown[], Result>(fn: PageFunction<Args, Result>, ...args: Args): Promise<Result>;
  /** Saves a PNG of the page at `width` (and at least `height`: the whole page where the engine can) to `file`. */
  screenshot(file: string, size: { width: number; height: number }): Promise<void>;
  /** The engine's own version, e.g. "firefox/153.7.0". */
  version(): Promise<string>;
  close(): Promise<void>;
}

export declare function enginePaths(env?: NodeJS.ProcessEnv): Record<EngineName | 'miniBrowser' | 'xvfb', string>;
/** The engines present on this machine. With CI set a missing one is an error, never a skip. */
export declare function availableEngines(env?: NodeJS.ProcessEnv): EngineName[];
export declare function launch(engine: EngineName): Promise<EnginePage>;
