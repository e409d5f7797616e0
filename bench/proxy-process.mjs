// The Node first-party proxy in a process of its own, as nginx runs in its own: the bench
// compares the two with the same upstream (the emulator's collector, in the bench process).
// Argument: the collector URL. Prints "listening <port>".
import { createServer } from 'node:http';
import { createFirstPartyProxy, toNodeHandler } from '../dist/server.js';

// The load comes from one address, the bench's: its requests under way are not capped here
// (a shop's proxy caps each client's at 64, maxRequestsPerClient).
const server = createServer(
  toNodeHandler(
    createFirstPartyProxy({ prefix: '/iojs', collectorUrl: process.argv[2], maxRequestsPerClient: 1_000_000 }),
  ),
);
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening ${server.address().port}\n`));
// A normal exit on a signal, so that --cpu-prof can write its profile.
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));
