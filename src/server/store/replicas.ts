/**
 * Redis WAIT after a write (docs/fleet.md#sentinel): the queue's add and the store's writes
 * count only once `replicas` replicas hold them. Fewer within `timeoutMs` is
 * `store_unavailable` (503 to the browser, which posts again), never a 202 or a record that a
 * failover could take back. One check for both: createBullmqQueue's and createRedisStore's
 * `confirmReplicas`.
 */
import { DeviceRiskError, ERR_STORE_UNAVAILABLE } from '../errors.js';
import { redisMessages } from '../messages.js';

/** Sends WAIT on the connection that wrote; its answer is the count of replicas that hold the write. */
export type WaitCommand = (replicas: number, timeoutMs: number) => Promise<unknown>;

export async function awaitReplicas(
  wait: WaitCommand,
  replicas: number,
  timeoutMs: number,
  details: ConstructorParameters<typeof DeviceRiskError>[2] = {},
): Promise<void> {
  if (replicas === 0) return;
  const acknowledged = Number(await wait(replicas, timeoutMs));
  if (acknowledged < replicas)
    throw new DeviceRiskError(
      ERR_STORE_UNAVAILABLE,
      redisMessages.notConfirmed(acknowledged, replicas, timeoutMs),
      details,
    );
}
