/**
 * Keys a server reads as the current release has them, whatever release it presents (the issue-33 rule "every
 * default the contract changed applies as of the presented release; only ports, directories and security stay
 * current"): where a deployment puts a process and how it protects it are the deployment's, not the release's. A
 * value set under such a key's current name is used even when the presented release knew the setting by an older
 * name (a 0.3.0 worker given svc.worker.http.port listens there, not on svc.metrics.worker.prometheus.port's 9096).
 */
export function staysCurrent(key: string): boolean {
  return (
    /\.(host|port|dir|dirs|path|recoverPath|secretFile|certFile|keyFile|caFile)$/.test(key) ||
    key.startsWith('svc.ssl.') ||
    key.startsWith('svc.auth.')
  );
}
