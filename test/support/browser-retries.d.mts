export declare function withBrowserRetries(
  send: (attempt: number) => Promise<Response>,
  options?: {
    final?: (response: Response) => boolean | Promise<boolean>;
    maxAttempts?: number;
    sleep?: (ms: number) => Promise<unknown>;
  },
): Promise<{ response: Response; attempts: number }>;
