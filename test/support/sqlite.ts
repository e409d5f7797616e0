// A data directory's SQLite file read as another process would, through node:sqlite itself
// (not the kit's code under test). @types/node of the toolchain has no node:sqlite: typed here.
import { createRequire } from 'node:module';

interface Reader {
  prepare(sql: string): { all(...params: unknown[]): Record<string, unknown>[]; run(...params: unknown[]): unknown };
  close(): void;
}
const { DatabaseSync } = createRequire(import.meta.url)('node:sqlite') as {
  DatabaseSync: new (path: string, options?: { timeout?: number }) => Reader;
};

/** The rows `sql` selects in the file at `path`, read by a connection of its own. */
export function rowsOf(path: string, sql: string, ...params: unknown[]): Record<string, unknown>[] {
  const reader = new DatabaseSync(path);
  try {
    return reader.prepare(sql).all(...params);
  } finally {
    reader.close();
  }
}

/** Runs `sql` once per set of `params` on the file at `path`, in one transaction, as another process on it would. */
export function writeRows(path: string, sql: string, ...paramSets: unknown[][]): void {
  const writer = new DatabaseSync(path, { timeout: 5000 });
  try {
    writer.prepare('BEGIN IMMEDIATE').run();
    const statement = writer.prepare(sql);
    for (const params of paramSets.length > 0 ? paramSets : [[]]) statement.run(...params);
    writer.prepare('COMMIT').run();
  } finally {
    writer.close();
  }
}
