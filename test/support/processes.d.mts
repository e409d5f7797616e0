export declare function freePort(): Promise<number>;
export declare function spawnListening(
  script: string,
  args: string[],
): Promise<{ child: import('node:child_process').ChildProcess; port: number }>;
