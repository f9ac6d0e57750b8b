/** A stored value read back as JSON; throws naming `key` when it is not, so the master refuses to start on it. */
export function parseStoredJson(key: string, value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    throw new RangeError(`${key} is not JSON`);
  }
}
