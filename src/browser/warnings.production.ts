/** The production build's stand-in for warnings.ts: no warnings, no bytes. */
import type { NormalizedOptions } from './options.js';

export function warnRiskySetup(_options: NormalizedOptions, _href: string): void {}
