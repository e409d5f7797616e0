// The doctor's checks on their own (test/doctor/checks/): the findings a check adds, and a
// fake of the doctor's bounded fetch that answers from a table and records what was asked.
import type { Add, CheckStatus } from '../../src/doctor/doctor.js';
import type { Get, Post } from '../../src/doctor/fetching.js';

export interface Recorded {
  id: string;
  status: CheckStatus;
  message: string;
  fix: string | undefined;
}

/** An `add` that keeps every finding, in order. */
export function recorder(): { add: Add; findings: Recorded[] } {
  const findings: Recorded[] = [];
  const add: Add = (id, status, message, fix) => void findings.push({ id, status, message, fix });
  return { add, findings };
}

/** A `get` answering each URL from `answers` (a function or a Response; a missing URL throws, as a failed fetch). */
export function fakeGet(answers: Record<string, Response | (() => Response) | Error>): {
  get: Get;
  asked: Array<{ url: string; init: Post | undefined }>;
} {
  const asked: Array<{ url: string; init: Post | undefined }> = [];
  const get = (async (url: string | URL, init?: Post) => {
    asked.push({ url: String(url), init });
    const answer = answers[String(url)];
    if (answer === undefined) throw new Error(`connect ECONNREFUSED ${String(url)}`);
    if (answer instanceof Error) throw answer;
    return typeof answer === 'function' ? answer() : answer;
  }) as Get;
  return { get, asked };
}

/** The doctor's checks of what a first-party front forwards (src/doctor/leaks.ts) and refuses (checks/refusals.ts). */
export const FORWARDING_CHECKS = [
  'leak_cookies',
  'leak_auth',
  'leak_address',
  'leak_host',
  'refuses_post',
  'refuses_hostile_paths',
] as const;
