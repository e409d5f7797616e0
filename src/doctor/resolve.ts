/**
 * The command's name look-up for the doctor's address rule (doctor.ts): every address a name
 * has, IPv4 and IPv6, as the system resolver gives them (what fetch would connect to). Node
 * only; the page's diagnose() has no resolver and leaves names to the browser.
 */
import { lookup } from 'node:dns/promises';

export async function resolveAll(hostname: string): Promise<string[]> {
  return (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);
}
