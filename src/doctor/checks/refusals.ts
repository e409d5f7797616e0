/**
 * What the front must refuse (docs/proxy.md, "What it refuses"): a POST (the scripts are
 * fetched with GET) and paths that leave the collector's path (a scheme, dot segments with
 * encoded slashes). Run with --collector-url: each probe is marked, and the doctor asks the
 * emulator's collector whether the marked request arrived (src/emulator/inspection.ts):
 * arriving is the leak. A collector that cannot say (not the emulator's) leaves the answer to
 * judge: one the front gave as if it had forwarded (a 2xx) is the failure. The
 * probes are only those every front of docs/proxy.md refuses, as sent (fetch's URL parsing
 * would resolve plain dot segments before they leave).
 */
import type { Add } from '../doctor.js';
import { readText, type Get } from '../fetching.js';
import { INSPECTION_PATH, MARKER_PARAMETER, NEXT_FIX, randomMarker } from '../leaks.js';

export type RefusalId = 'refuses_post' | 'refuses_hostile_paths';

interface Probe {
  id: RefusalId;
  what: string;
  path: string;
  post: boolean;
}

const FIXES: Record<RefusalId, string> = {
  refuses_post: `answer anything but GET and HEAD with 405 before forwarding, as createFirstPartyProxy does (nginx: limit_except GET { deny all; }); ${NEXT_FIX}`,
  refuses_hostile_paths: `refuse a path with a scheme, a backslash, dot segments or encoded slashes before forwarding, as createFirstPartyProxy and the recipes of docs/proxy.md do; ${NEXT_FIX}`,
};

const PASSES: Record<RefusalId, string> = {
  refuses_post: 'the front refuses a POST',
  refuses_hostile_paths: 'the front refuses paths with a scheme and dot segments with encoded slashes',
};

/**
 * Whether the collector saw `marker`: only the collector that received the random marker can
 * name it; undefined when it cannot say (not the emulator's).
 */
async function arrived(get: Get, collectorUrl: string, marker: string): Promise<boolean | undefined> {
  const inspection = new URL(INSPECTION_PATH, collectorUrl);
  inspection.searchParams.set('marker', marker);
  const response = await get(inspection);
  const { text } = await readText(response, 64 * 1024);
  if (text.includes(`"marker":"${marker}"`)) return true;
  if (response.status === 404 && text.includes('"not_seen"')) return false;
  return undefined;
}

/** The refuses_post and refuses_hostile_paths findings, each probe's failure naming its fix. */
export async function checkRefusals(
  get: Get,
  add: Add,
  context: { page: URL; prefix: string; version: string; collectorUrl: string },
): Promise<void> {
  const { page, prefix, version, collectorUrl } = context;
  const probes: Probe[] = [
    { id: 'refuses_post', what: 'a POST', path: `${prefix}/${version}/static_wdp.js`, post: true },
    {
      id: 'refuses_hostile_paths',
      what: 'a path with a scheme',
      path: `${prefix}/http://collector.invalid/admin`,
      post: false,
    },
    {
      id: 'refuses_hostile_paths',
      what: 'dot segments with encoded slashes',
      path: `${prefix}/..%2f..%2fadmin`,
      post: false,
    },
  ];
  const failed = new Map<RefusalId, string[]>();
  const unsent = new Map<RefusalId, string[]>();
  const note = (into: Map<RefusalId, string[]>, id: RefusalId, text: string) =>
    into.set(id, [...(into.get(id) ?? []), text]);
  for (const probe of probes) {
    const marker = randomMarker();
    const url = new URL(probe.path, page.origin);
    url.searchParams.set(MARKER_PARAMETER, marker);
    let answeredOk: boolean;
    try {
      const response = await get(url, probe.post ? { body: 'bbc-doctor' } : {});
      await response.body?.cancel();
      answeredOk = response.ok;
    } catch (error) {
      note(unsent, probe.id, `${probe.what} could not be sent (${(error as Error).message})`);
      continue;
    }
    const reached = await arrived(get, collectorUrl, marker).catch(() => undefined);
    if (reached) note(failed, probe.id, `${probe.what} (${url.pathname}) reached the collector`);
    // A collector that cannot say: an answer the front gave as if it had forwarded is the failure.
    else if (reached === undefined && answeredOk)
      note(failed, probe.id, `${probe.what} (${url.pathname}) was answered with a 2xx, as if forwarded`);
  }
  for (const id of ['refuses_post', 'refuses_hostile_paths'] as const) {
    const seen = failed.get(id);
    const notSent = unsent.get(id);
    if (seen) add(id, 'fail', `the front forwards what it must refuse: ${seen.join('; ')}`, FIXES[id]);
    else if (notSent) add(id, 'warn', `not checked: ${notSent.join('; ')}`, 'check that the front answers');
    else add(id, 'pass', PASSES[id]);
  }
}
