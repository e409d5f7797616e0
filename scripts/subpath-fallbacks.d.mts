export interface SubpathFallback {
  /** The folder under the package root: `react`, `server/redis`. */
  folder: string;
  /** Its package.json, with paths relative to the folder. */
  manifest: { main: string; module: string; types: string };
}
/** Each JavaScript subpath of the exports map and its fallback folder's package.json. */
export declare function fallbacks(): SubpathFallback[];
/** The top folders of the fallbacks: what `files` must list. */
export declare function fallbackFolders(): string[];
/** Writes the fallback folders at the package root (`npm run build` does). */
export declare function writeFallbacks(): void;
