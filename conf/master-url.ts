/**
 * The master URL a worker is started with, `svc://<master-host>:<master-port>`. The scheme in use at a release
 * comes from the release history (core/release/other-changes.ts): `rss://` before 0.3.0, `svc://` since.
 */
import { masterUrlScheme, masterUrlSchemeChange } from '../core/release/other-changes.ts';
import { CURRENT_RELEASE, isAtLeast, type Release } from '../core/release/version.ts';

export type MasterUrl =
  | { readonly ok: true; readonly host: string; readonly port: number }
  | { readonly ok: false; readonly message: string };

export function parseMasterUrl(text: string, release: Release = CURRENT_RELEASE): MasterUrl {
  const scheme = masterUrlScheme(release);
  const change = masterUrlSchemeChange();
  const match = /^([a-z][a-z0-9+.-]*):\/\/([^\s:/]+):(\d+)\/?$/i.exec(text.trim());
  const expected = `${scheme}://<master-host>:<master-port>, for example ${scheme}://master-1:9097`;
  if (!match) return { ok: false, message: `'${text}' is not a master URL; expected ${expected}` };
  const [, given = '', host = '', portText = ''] = match;
  if (given.toLowerCase() !== scheme) {
    const why =
      given.toLowerCase() === change.before && isAtLeast(release, change.release)
        ? `the master URL scheme is ${change.after}:// since ${change.release}`
        : `a ${release} node expects ${scheme}://`;
    return { ok: false, message: `'${text}' is refused: ${why}; write ${scheme}://${host}:${portText}` };
  }
  const port = Number(portText);
  if (port < 1 || port > 65535) {
    return { ok: false, message: `'${text}' has port ${portText}, outside 1-65535; expected ${expected}` };
  }
  return { ok: true, host, port };
}
