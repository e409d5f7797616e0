/**
 * The doctor's entry for a program on a server that runs its checks: the kit's status page
 * (src/server/status/index.ts, its `doctor` option). The same checks, with the same resolver,
 * as `npx blackbox-capture doctor <url>` (cli.ts).
 */
import { runDoctor, type DoctorOptions, type DoctorReport } from './doctor.js';
import { resolveAll } from './resolve.js';

export type { DoctorOptions, DoctorReport };

/** The doctor's report on the page at `url`, its host names resolved as the command resolves them. */
export const checkPage = (url: string, options: Omit<DoctorOptions, 'lookup'> = {}): Promise<DoctorReport> =>
  runDoctor(url, { ...options, lookup: resolveAll });
