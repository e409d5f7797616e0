/**
 * Sealing with the client secret: what the kit keeps in a store (the access token, a
 * transaction's token) is sealed, so that a shared Redis never holds a usable secret, and
 * keys carry a one-way tag of the secret, so that a wrong secret finds nothing.
 */
import { DeviceRiskError, ERR_INVALID_RESPONSE } from '../errors.js';
import { apiMessages } from '../messages.js';
import { keyPart } from '../store/store.js';

export interface Sealer {
  /** `secret` encrypted (AES-256-GCM, a key derived from the client secret with HKDF). */
  seal: (secret: string) => Promise<string>;
  /** A sealed value opened; `invalid_response` for one altered or sealed with another secret. */
  unseal: (sealed: string) => Promise<string>;
}

export function createSealer(clientId: string, clientSecret: string): Sealer {
  let sealingKey: Promise<CryptoKey> | undefined;
  const key = () =>
    (sealingKey ??= crypto.subtle
      .importKey('raw', new TextEncoder().encode(clientSecret), 'HKDF', false, ['deriveKey'])
      .then((secret) =>
        crypto.subtle.deriveKey(
          {
            name: 'HKDF',
            hash: 'SHA-256',
            salt: new TextEncoder().encode(clientId),
            info: new TextEncoder().encode('blackbox-capture sealed store values v1'),
          },
          secret,
          { name: 'AES-GCM', length: 256 },
          false,
          ['encrypt', 'decrypt'],
        ),
      ));
  return {
    seal: async (secret) => {
      const iv = crypto.getRandomValues(new Uint8Array(12));
      const sealed = new Uint8Array(
        await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, await key(), new TextEncoder().encode(secret)),
      );
      return `v1.${base64(iv)}.${base64(sealed)}`;
    },
    unseal: async (sealed) => {
      const [version, iv, data] = sealed.split('.');
      try {
        if (version !== 'v1' || !iv || !data) throw new Error(apiMessages.notSealed);
        return new TextDecoder().decode(
          await crypto.subtle.decrypt({ name: 'AES-GCM', iv: unbase64(iv) }, await key(), unbase64(data)),
        );
      } catch (cause) {
        throw new DeviceRiskError(ERR_INVALID_RESPONSE, apiMessages.unsealable, { operation: 'store', cause });
      }
    },
  };
}

/**
 * The namespace of a credential's keys in a store: the client id, the token host, and a tag
 * of the secret (HMAC-SHA-256, 128 bits, URL-safe; one-way, so the store never learns the
 * secret).
 */
export async function storeNamespace(clientId: string, clientSecret: string, tokenUrl: string): Promise<string> {
  const encoder = new TextEncoder();
  const host = new URL(tokenUrl).host;
  const key = await crypto.subtle.importKey(
    'raw',
    encoder.encode(clientSecret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const mac = new Uint8Array(
    await crypto.subtle.sign('HMAC', key, encoder.encode(`blackbox-capture store namespace v1\n${clientId}\n${host}`)),
  );
  const tag = base64(mac.subarray(0, 16)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  return `${keyPart(clientId)}@${keyPart(host)}#${tag}`;
}

const base64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const unbase64 = (text: string) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));

/**
 * References the kit puts in an account request's `userReference` when the integrator gives
 * none, and finds again in the service's callback: a random value and its HMAC under a key
 * derived from the client secret. Only the service and the shop ever see one, so a callback
 * carrying a valid one is for an execution this shop's kit made (docs/answer.md#whose-callback).
 */
export interface ReferenceTagger {
  /** A new reference (50 characters, within the service's 100). */
  tag: () => Promise<string>;
  /** Whether `reference` is one `tag` made with this client secret. */
  vouches: (reference: unknown) => Promise<boolean>;
}

const TAG_PREFIX = 'bbc1.';

export function createReferenceTagger(clientId: string, clientSecret: string): ReferenceTagger {
  let macKey: Promise<CryptoKey> | undefined;
  const key = () =>
    (macKey ??= crypto.subtle.importKey(
      'raw',
      new TextEncoder().encode(`blackbox-capture reference v1\n${clientId}\n${clientSecret}`),
      { name: 'HMAC', hash: 'SHA-256' },
      false,
      ['sign'],
    ));
  const macOf = async (nonce: string) =>
    urlSafe(
      new Uint8Array(await crypto.subtle.sign('HMAC', await key(), new TextEncoder().encode(nonce))).subarray(0, 16),
    );
  return {
    async tag() {
      const nonce = urlSafe(crypto.getRandomValues(new Uint8Array(16)));
      return `${TAG_PREFIX}${nonce}.${await macOf(nonce)}`;
    },
    async vouches(reference) {
      if (typeof reference !== 'string' || !reference.startsWith(TAG_PREFIX)) return false;
      const [nonce, mac, ...rest] = reference.slice(TAG_PREFIX.length).split('.');
      if (!nonce || !mac || rest.length) return false;
      return equalText(await macOf(nonce), mac);
    },
  };
}

const urlSafe = (bytes: Uint8Array) => base64(bytes).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

/** Compares in time independent of where two texts first differ. */
function equalText(a: string, b: string): boolean {
  let differ = a.length ^ b.length;
  for (let i = 0; i < a.length; i++) differ |= a.charCodeAt(i) ^ b.charCodeAt(i % (b.length || 1));
  return differ === 0;
}
