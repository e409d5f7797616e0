// The emulated service's variables as `blackbox-capture-emulator --env` prints them, with the
// workflow the tests check against (10011): what the kit's snippets, the framework sites and
// the gateway read from their environment. Light on purpose: the built tests import it too.
import type { Emulator } from '../../src/emulator/index.js';

export function emulatorEnvironment(emulator: Emulator): Record<string, string> {
  return {
    CLIENT_ID: emulator.clientId,
    CLIENT_SECRET: emulator.clientSecret,
    TOKEN_URL: emulator.tokenUrl,
    BASE_URL: emulator.baseUrl,
    API_URL: emulator.apiUrl,
    RETRIEVAL_URL: emulator.retrievalUrl,
    COLLECTOR_URL: emulator.collectorUrl,
    WORKFLOW_KEY: '10011',
  };
}
