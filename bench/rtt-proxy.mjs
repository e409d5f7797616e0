// A TCP relay that makes a loopback origin behave as if it were one round trip away:
// a new connection becomes usable `setupRtts` RTTs after it opens (1: the TCP
// handshake; 2: TCP plus a TLS 1.3 handshake, as for the vendor's https hosts), and
// every byte takes half an RTT each way. Unlike DevTools latency emulation, this
// charges connection set-up, so it shows what preconnect hints save. (The kernel's
// netem is not available here.)
import net from 'node:net';

/** Relays 127.0.0.1:<returned port> to `target` (an http://127.0.0.1:port origin). */
export async function startRttProxy(target, rttMs, setupRtts = 1) {
  const { hostname, port } = new URL(target);
  const half = rttMs / 2;
  const sockets = new Set();
  const server = net.createServer((client) => {
    const openedAt = Date.now();
    const upstream = net.connect(Number(port), hostname);
    sockets.add(client).add(upstream);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    // Client -> server: not before the handshake has completed, then half an RTT in flight.
    client.on('data', (chunk) => {
      const wait = Math.max(half, openedAt + setupRtts * rttMs + half - Date.now());
      setTimeout(() => upstream.writable && upstream.write(chunk), wait);
    });
    upstream.on('data', (chunk) => setTimeout(() => client.writable && client.write(chunk), half));
    const close = () => {
      setTimeout(() => {
        client.destroy();
        upstream.destroy();
      }, half);
    };
    client.on('close', close).on('error', close);
    upstream.on('close', close).on('error', close);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${server.address().port}`,
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(resolve);
      }),
  };
}
