/**
 * Small pieces every handler of the kit shares: its JSON answers, reading a body within a
 * limit, and a client address in one form.
 */

export const json = (body: unknown, status: number, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
  });

/** An error answer: `{ error: { code, message } }`. */
export const refuse = (status: number, code: string, message: string, headers: Record<string, string> = {}) =>
  json({ error: { code, message } }, status, headers);

/** Reads at most `limit` bytes of a body; undefined when it is larger (by Content-Length or by counting). */
export async function readCapped(request: Request, limit: number): Promise<Uint8Array<ArrayBuffer> | undefined> {
  if (Number(request.headers.get('content-length') ?? 0) > limit) return undefined;
  if (!request.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) out.set(chunk, (offset += chunk.byteLength) - chunk.byteLength);
  return out;
}

/** Reads at most `limit` bytes as UTF-8 text; undefined when the body is larger. */
export async function readLimited(request: Request, limit: number): Promise<string | undefined> {
  const bytes = await readCapped(request, limit);
  // TextDecoder, not Buffer: edge runtimes have none.
  return bytes && new TextDecoder().decode(bytes);
}

/** An IPv4 address as such, not in its IPv6-mapped form (`::ffff:192.0.2.1`, as Node's sockets give it). */
export const plainAddress = (address: string): string => address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '');
