/**
 * One queue per journal (docs/fleet.md#a-single-instance): two processes, or two handlers of one
 * process, reading the same journal would each check every checkout in it. The first takes
 * `<path>.lock` (created with O_EXCL, holding its pid); another is refused with
 * `invalid_configuration` naming the path. A lock left by a process that died (SIGKILL, a
 * crash) is taken over: its pid no longer runs, or it is this process's own pid and no queue
 * of this process holds it (a container restarted gives the new process the old one's pid).
 * Node only (node:fs).
 */
import { closeSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { resolve } from 'node:path';
import { DeviceRiskError, ERR_INVALID_CONFIGURATION } from '../errors.js';
import { queuedMessages } from '../messages.js';

/** The locks this process holds, by their absolute path. */
const heldHere = new Set<string>();

/** Whether process `pid` runs (EPERM: it does, as another user). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The pid a lock file names; undefined when it is gone (released meanwhile) or unreadable. */
function ownerOf(lock: string): number | undefined {
  try {
    const pid = Number(readFileSync(lock, 'utf8'));
    return Number.isInteger(pid) && pid > 0 ? pid : 0;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** Creates the lock file with this process's pid; false when it exists. */
function create(lock: string): boolean {
  let fd: number;
  try {
    fd = openSync(lock, 'wx');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
  writeSync(fd, String(process.pid));
  closeSync(fd);
  return true;
}

/**
 * Takes the lock of the journal at `path`, or throws `invalid_configuration` (another queue
 * holds it); other failures of the file system are thrown as they are. Returns its release.
 */
export function lockPath(path: string): () => void {
  const lock = resolve(`${path}.lock`);
  const refused = (pid: number) => new DeviceRiskError(ERR_INVALID_CONFIGURATION, queuedMessages.pathInUse(path, pid));
  if (heldHere.has(lock)) throw refused(process.pid);
  for (let tries = 0; !create(lock); tries++) {
    const owner = ownerOf(lock);
    // Stryker disable next-line ConditionalExpression: only a lock taken and released over and over meanwhile comes here
    if (tries > 5) throw refused(owner ?? 0);
    if (owner === undefined) continue;
    // A lock half written (the owner killed between create and write) names no pid: stale too.
    if (owner !== 0 && owner !== process.pid && running(owner)) throw refused(owner);
    // Two takers of one stale lock: the rename is atomic, and the lock it moved must be the stale one.
    const moved = `${lock}.${process.pid}.stale`;
    try {
      renameSync(lock, moved);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw error;
    }
    if (ownerOf(moved) !== owner) {
      renameSync(moved, lock);
      throw refused(ownerOf(lock) ?? owner);
    }
    unlinkSync(moved);
  }
  heldHere.add(lock);
  return () => {
    if (!heldHere.delete(lock)) return;
    if (ownerOf(lock) === process.pid) unlinkSync(lock);
  };
}
