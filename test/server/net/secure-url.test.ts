// requireSecureUrl: the URL policy of every address the kit sends a secret to.
import { describe, expect, it } from 'vitest';
import { requireSecureUrl } from '../../../src/server/net/secure-url.js';

describe('requireSecureUrl', () => {
  it.each([
    'https://auth.example/oauth2/token',
    'http://localhost:4000/token',
    'http://127.0.0.1:4000/token',
    'http://127.10.200.30/token',
    'http://[::1]:4000/token',
  ])('accepts %s', (url) => {
    expect(requireSecureUrl(url, 'tokenUrl').href).toBe(new URL(url).href);
  });

  it.each([
    'http://auth.example/token',
    'http://localhost.evil.example/token',
    'http://evil-localhost/token',
    'http://127.0.0.1.evil.example/token',
    'http://localhostx/token',
    'ftp://localhost/token',
    'ws://127.0.0.1/token',
  ])('refuses %s as insecure_url', (url) => {
    expect(() => requireSecureUrl(url, 'tokenUrl')).toThrow(
      expect.objectContaining({ code: 'insecure_url', message: expect.stringContaining('tokenUrl must use https') }),
    );
  });

  it.each(['https://user@auth.example/token', 'https://:secret@auth.example/token', 'https://u:secret@localhost/'])(
    'refuses credentials in %s, without repeating them',
    (url) => {
      let error: unknown;
      try {
        requireSecureUrl(url, 'tokenUrl');
      } catch (caught) {
        error = caught;
      }
      expect(error).toMatchObject({ code: 'invalid_configuration' });
      expect(String((error as Error).message)).not.toMatch(/secret|user@/);
    },
  );

  it('refuses what is not a URL', () => {
    expect(() => requireSecureUrl('auth.example/token', 'tokenUrl')).toThrow(
      expect.objectContaining({
        code: 'invalid_configuration',
        message: expect.stringContaining('tokenUrl is not a URL'),
      }),
    );
  });
});
