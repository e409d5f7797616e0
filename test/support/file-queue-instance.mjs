// One endpoint instance on the file queue, as a process of its own: the built server kit
// (dist/) with createFileQueue from blackbox-capture/server/file-queue (npm run build first),
// or without `path` the handler's default queue (in BLACKBOX_CAPTURE_DATA_DIR, as the test sets it).
// Configuration: one JSON argument { path?, token: { clientId, clientSecret, tokenUrl }, serviceUrls, post, from, orders }.
// Posts `post` checkouts (order-<from> …, or the numbers in `orders`) and prints "accepted
// <order>" for each 202 ("refused <order> <status> <code>" else), then "posted"; prints "decided
// <order>" for each decision and "error <code>" for anything told to onError. On SIGUSR2 it
// posts the refused ones again, with the same Idempotency-Keys, then prints "reposted". Runs
// until killed; on SIGTERM: close() the handler, print "closed", exit.
import { createDeviceRiskClient, createDeviceRiskHandler, createTokenSource } from '../../dist/server.js';
import { createFileQueue } from '../../dist/server-file-queue.js';

const config = JSON.parse(process.argv[2]);
const say = (line) => void process.stdout.write(`${line}\n`);
const userAgent = 'AcmeShop Checkout/1.0';
const client = createDeviceRiskClient({
  tokenSource: createTokenSource({ ...config.token, userAgent }),
  ...config.serviceUrls,
  userAgent,
  // An account create cut off by a SIGKILL holds its key for this (and the key's lease) before
  // the next process creates again and reports the orphan: seconds, not the default minute.
  accountTimeoutMs: 10_000,
});
const handler = createDeviceRiskHandler({
  client,
  ...(config.path ? { queue: createFileQueue({ path: config.path, concurrency: 1 }) } : {}),
  allowedOrigins: ['https://shop.example'],
  workflowKey: 10020,
  checkoutsPerAddress: false,
  checkoutsPerCustomer: false,
  resolveCustomer: (request) => ({ customerInternalReference: request.headers.get('x-order') }),
  reportStatus: false,
  onResult: (_details, { customerInternalReference }) => say(`decided ${customerInternalReference}`),
  onError: (error) => say(`error ${error?.code ?? 'uncoded'} ${String(error?.message ?? error)}`),
});
// A blackbox of its own per order: the endpoint refuses one already used (src/server/endpoint/reuse.ts).
const blackbox = (i) => `0400${i}` + 'nVQ+/abc'.repeat(150) + '==';
process.once('SIGTERM', async () => {
  await handler.close();
  say('closed');
  process.exit(0);
});
const from = config.from ?? 0;
/** Posts order `i` under its own Idempotency-Key, and says how it was answered; false when refused. */
async function post(i) {
  const answer = await handler(
    new Request('https://shop.example/device-risk', {
      method: 'POST',
      headers: {
        origin: 'https://shop.example',
        'content-type': 'application/json',
        'idempotency-key': `file-queue-key-${i}`,
        'x-order': `order-${i}`,
      },
      body: JSON.stringify({ blackbox: blackbox(i) }),
    }),
  );
  if (answer.status === 202) say(`accepted order-${i}`);
  else say(`refused order-${i} ${answer.status} ${(await answer.json().catch(() => undefined))?.error?.code}`);
  return answer.status === 202;
}
let refused = [];
for (const i of config.orders ?? Array.from({ length: config.post ?? 0 }, (_, n) => from + n))
  if (!(await post(i))) refused.push(i);
process.on('SIGUSR2', async () => {
  const again = [];
  for (const i of refused) if (!(await post(i))) again.push(i);
  refused = again;
  say('reposted');
});
say('posted');
// Lives until killed, as a server does, even with nothing queued.
setInterval(() => {}, 60_000);
