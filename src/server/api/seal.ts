/**
 * Sealing with the client secret: what the kit keeps in a store (the access token, a
 * transaction's token) is sealed, so that a shared Redis never holds a usable secret, and
 * keys carry a one-way tag of the secret, so that a wrong secret finds nothing.
 */
import { DeviceRiskError, ERR_INVALID_RESPONSE } from '../errors.js';
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
        if (version !== 'v1' || !iv || !data) throw new Error('not a sealed value');
        return new TextDecoder().decode(
          await crypto.subtle.decrypt({ name: 'AES-GCM', iv: unbase64(iv) }, await key(), unbase64(data)),
        );
      } catch (cause) {
        throw new DeviceRiskError(
          ERR_INVALID_RESPONSE,
          'a sealed value in the store could not be opened (altered, or sealed with another client secret)',
          { operation: 'store', cause },
        );
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
