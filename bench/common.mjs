// What the queue benches share: the blackbox, the shop, the user agent, a quantile.
export const BLACKBOX = '0400' + 'nVQ+/abcXYZ0123'.repeat(80) + '==';
/** A checkout's own blackbox: the endpoint refuses one already used for another key (src/server/endpoint/reuse.ts). */
export const blackboxOf = (tag) => BLACKBOX.slice(0, 4) + Buffer.from(tag).toString('hex') + BLACKBOX.slice(4);
export const SHOP = 'https://shop.example';
export const USER_AGENT = 'blackbox-capture-bench/1';

/** The q-quantile of `xs` (NaN for none). */
export const quantile = (xs, q) => {
  if (!xs.length) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};
