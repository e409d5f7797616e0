#!/usr/bin/env node
/**
 * `blackbox-capture-emulator`: starts the emulator and prints its addresses, for
 * integrators' own CI and manual testing. Ports come from the OS unless
 * EMULATOR_PORT_BASE is set (then base, base+1, … in the order printed).
 */
import { startEmulator } from './index.js';

const base = process.env.EMULATOR_PORT_BASE ? Number(process.env.EMULATOR_PORT_BASE) : undefined;
const ports = base === undefined ? undefined : { loader: base, collector: base + 1, thirdParty: base + 2, auth: base + 3, api: base + 4 };

startEmulator({
  ...(ports ? { ports } : {}),
  ...(process.env.EMULATOR_CLIENT_ID ? { clientId: process.env.EMULATOR_CLIENT_ID } : {}),
  ...(process.env.EMULATOR_CLIENT_SECRET ? { clientSecret: process.env.EMULATOR_CLIENT_SECRET } : {}),
}).then(
  (emulator) => {
    console.log(
      JSON.stringify(
        {
          loaderUrl: emulator.loaderUrl,
          collectorUrl: emulator.collectorUrl,
          thirdPartyUrl: emulator.thirdPartyUrl,
          tokenUrl: emulator.tokenUrl,
          baseUrl: emulator.baseUrl,
          clientId: emulator.clientId,
        },
        null,
        2,
      ),
    );
    const stop = () => void emulator.close().then(() => process.exit(0));
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  },
  (error: Error) => {
    console.error(`blackbox-capture-emulator: ${error.message}`);
    process.exit(1);
  },
);
