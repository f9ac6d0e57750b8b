/**
 * Status codes of the protocol, one list for every role. Byte values are the reference's, so that a status carried
 * on the wire means the same thing to a client of any release. docs/core.md says what each one means to the caller.
 */
export const STATUS_CODES = {
  SUCCESS: 0,
  PARTIAL_SUCCESS: 1,
  REQUEST_FAILED: 2,
  SHUFFLE_ALREADY_REGISTERED: 3,
  SHUFFLE_UNREGISTERED: 4,
  RESERVE_SLOTS_FAILED: 5,
  SLOT_NOT_AVAILABLE: 6,
  WORKER_NOT_FOUND: 7,
  PARTITION_NOT_FOUND: 8,
  REPLICA_PARTITION_NOT_FOUND: 9,
  DELETE_FILES_FAILED: 10,
  PARTITION_EXISTS: 11,
  REVIVE_FAILED: 12,
  REPLICATE_DATA_FAILED: 13,
  NUM_MAPPER_ZERO: 14,
  MAP_ENDED: 15,
  STAGE_ENDED: 16,
  PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_PRIMARY: 17,
  PUSH_DATA_WRITE_FAIL_REPLICA: 18,
  PUSH_DATA_WRITE_FAIL_PRIMARY: 19,
  PUSH_DATA_FAIL_PARTITION_NOT_FOUND: 20,
  HARD_SPLIT: 21,
  SOFT_SPLIT: 22,
  STAGE_END_TIMEOUT: 23,
  SHUFFLE_DATA_LOST: 24,
  WORKER_SHUTDOWN: 25,
  NO_AVAILABLE_WORKING_DIR: 26,
  WORKER_EXCLUDED: 27,
  WORKER_UNKNOWN: 28,
  COMMIT_FILE_EXCEPTION: 29,
  PUSH_DATA_SUCCESS_PRIMARY_CONGESTED: 30,
  PUSH_DATA_SUCCESS_REPLICA_CONGESTED: 31,
  PUSH_DATA_HANDSHAKE_FAIL_REPLICA: 32,
  PUSH_DATA_HANDSHAKE_FAIL_PRIMARY: 33,
  REGION_START_FAIL_REPLICA: 34,
  REGION_START_FAIL_PRIMARY: 35,
  REGION_FINISH_FAIL_REPLICA: 36,
  REGION_FINISH_FAIL_PRIMARY: 37,
  PUSH_DATA_CREATE_CONNECTION_FAIL_PRIMARY: 38,
  PUSH_DATA_CREATE_CONNECTION_FAIL_REPLICA: 39,
  PUSH_DATA_CONNECTION_EXCEPTION_PRIMARY: 40,
  PUSH_DATA_CONNECTION_EXCEPTION_REPLICA: 41,
  PUSH_DATA_TIMEOUT_PRIMARY: 42,
  PUSH_DATA_TIMEOUT_REPLICA: 43,
  PUSH_DATA_PRIMARY_WORKER_EXCLUDED: 44,
  PUSH_DATA_REPLICA_WORKER_EXCLUDED: 45,
  FETCH_DATA_TIMEOUT: 46,
  REVIVE_INITIALIZED: 47,
  DESTROY_SLOTS_MOCK_FAILURE: 48,
  COMMIT_FILES_MOCK_FAILURE: 49,
  PUSH_DATA_FAIL_NON_CRITICAL_CAUSE_REPLICA: 50,
  OPEN_STREAM_FAILED: 51,
  SEGMENT_START_FAIL_REPLICA: 52,
  SEGMENT_START_FAIL_PRIMARY: 53,
  NO_SPLIT: 54,
  WORKER_UNRESPONSIVE: 55,
  READ_REDUCER_PARTITION_END_FAILED: 56,
  // svc additions, above the reference's range so that no existing value changes meaning.
  /** The server refuses a client of this release (admission by release; see core/release). */
  CLIENT_RELEASE_REFUSED: 100,
  /** Some requested partitions could not be placed; the reply lists them with the reason. */
  PARTIALLY_PLACED: 101,
  /**
   * Authentication is on (svc.auth.enabled) and the request's connection did not prove the identity the request
   * needs: its application's secret, or the cluster's internal secret for a server's request.
   */
  AUTHENTICATION_FAILED: 102,
  /**
   * The application's user (or the cluster) is over its quota (svc.quota.*): no new shuffle is registered, and with
   * svc.quota.interruptShuffle.enabled running ones are stopped. The message names the user, the quota, the usage and
   * the limit.
   */
  QUOTA_EXCEEDED: 103,
} as const;

export type StatusCode = keyof typeof STATUS_CODES;

const BY_VALUE = new Map<number, StatusCode>(
  Object.entries(STATUS_CODES).map(([name, value]) => [value, name as StatusCode]),
);

/** The code for a wire value; throws on an unknown value rather than guessing. */
export function statusFromValue(value: number): StatusCode {
  const code = BY_VALUE.get(value);
  if (code === undefined) throw new RangeError(`unknown status code value ${value}`);
  return code;
}
