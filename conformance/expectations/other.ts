// Contract section 9.3 as far as the suite needs it: the master URL scheme a worker of a release is given.
import { atLeast } from './releases.ts';

/** "0.3.0: Master URL scheme changed from rss:// to svc://". */
export function masterUrlSchemeAt(release: string): 'rss' | 'svc' {
  return atLeast(release, '0.3.0') ? 'svc' : 'rss';
}
