// Every test file's setup (vitest.config.ts): a handler given no queue keeps its checkouts in
// a file queue in BLACKBOX_CAPTURE_DATA_DIR's SQLite file (src/server/queue/default.ts). Each
// file, and each test in it, gets a directory of its own under the system's temporary folder:
// the suites never write .blackbox-capture/ into the repository, and two tests never share a
// queue by accident. A test that means memory gives createMemoryQueue().
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeEach } from 'vitest';

const root = mkdtempSync(join(tmpdir(), 'bbc-data-dir-'));
let tests = 0;
process.env.BLACKBOX_CAPTURE_DATA_DIR = join(root, 'file');
beforeEach(() => {
  process.env.BLACKBOX_CAPTURE_DATA_DIR = join(root, `test-${++tests}`);
});
afterAll(() => rmSync(root, { recursive: true, force: true }));
