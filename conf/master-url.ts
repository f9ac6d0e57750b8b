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

export type MasterUrls =
  | { readonly ok: true; readonly masters: readonly { readonly host: string; readonly port: number }[] }
  | { readonly ok: false; readonly message: string };

/**
 * The master URL of a high-availability group, `svc://h1:p1,h2:p2,h3:p3`: one scheme, then every master's
 * host:port; a single master is the one-element case of the same form. Each address is checked as parseMasterUrl
 * checks one, and the message names the address at fault.
 */
export function parseMasterUrls(text: string, release: Release = CURRENT_RELEASE): MasterUrls {
  const trimmed = text.trim();
  const separator = trimmed.indexOf('://');
  if (separator < 0) {
    // Not a URL at all: the single form's message says what to write.
    const parsed = parseMasterUrl(trimmed, release);
    return parsed.ok ? { ok: true, masters: [{ host: parsed.host, port: parsed.port }] } : parsed;
  }
  const scheme = trimmed.slice(0, separator);
  const addresses = trimmed
    .slice(separator + 3)
    .replace(/\/$/, '')
    .split(',')
    .map((address) => address.trim());
  const masters: { host: string; port: number }[] = [];
  for (const address of addresses) {
    const parsed = parseMasterUrl(`${scheme}://${address}`, release);
    if (!parsed.ok) {
      const form = `${masterUrlScheme(release)}://<host>:<port>[,<host>:<port>…]`;
      return { ok: false, message: `'${text}': ${parsed.message}; a group of masters is written ${form}` };
    }
    if (masters.some((master) => master.host === parsed.host && master.port === parsed.port)) {
      return { ok: false, message: `'${text}' names ${address} twice` };
    }
    masters.push({ host: parsed.host, port: parsed.port });
  }
  return { ok: true, masters };
}

/** What `masterEndpoints` reads of a resolved configuration. */
export interface MasterEndpointKeys {
  isSet(key: string): boolean;
  getList(key: string): readonly string[];
  getString(key: string): string;
  getInt(key: string): number;
  has(key: string): boolean;
}

/**
 * The masters a worker, a lifecycle manager or `svc admin` talks to: `given` (a master URL, `svc://h1:p1,h2:p2`, or
 * `host:port,…`) when there is one, else every entry of `svc.master.endpoints`, else, when only the contract's
 * `svc.master.host` and `svc.master.port` are set, that one master.
 */
export function masterEndpoints(
  conf: MasterEndpointKeys,
  given: string | undefined,
  release: Release = CURRENT_RELEASE,
): MasterUrls {
  if (given !== undefined && given.trim() !== '') {
    const text = given.includes('://') ? given : `${masterUrlScheme(release)}://${given}`;
    return parseMasterUrls(text, release);
  }
  const scheme = masterUrlScheme(release);
  if (
    !conf.isSet('svc.master.endpoints') &&
    conf.has('svc.master.host') &&
    (conf.isSet('svc.master.host') || conf.isSet('svc.master.port'))
  ) {
    return parseMasterUrls(
      `${scheme}://${conf.getString('svc.master.host')}:${conf.getInt('svc.master.port')}`,
      release,
    );
  }
  return parseMasterUrls(`${scheme}://${conf.getList('svc.master.endpoints').join(',')}`, release);
}
