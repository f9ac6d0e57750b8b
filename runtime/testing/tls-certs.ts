// Test support: a certificate authority and a server certificate it signed, made with the openssl command line
// (node:crypto makes keys but cannot sign an X.509 certificate). Everything is written under one directory.
// Without openssl the suites that need certificates fail, naming the package to install: a skipped TLS suite would
// pass CI with nothing of TLS tested.
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';

export interface TestCertificates {
  /** PEM of the authority that signed the server certificate: what peers put in svc.ssl.caFile. */
  readonly caFile: string;
  /** PEM of the server certificate, for localhost, 127.0.0.1 and ::1 (svc.ssl.certFile). */
  readonly certFile: string;
  /** PEM of its key (svc.ssl.keyFile), encrypted with `keyPassword` when one was asked for. */
  readonly keyFile: string;
  readonly keyPassword?: string;
  /** PEM of another authority, which signed nothing here: a peer trusting only it refuses the server. */
  readonly otherCaFile: string;
}

/** Throws, naming the package to install, when `command` (openssl) cannot run here. */
function requireOpenssl(command: string): void {
  const probe = spawnSync(command, ['version'], { encoding: 'utf8' });
  if (probe.error === undefined && probe.status === 0) return;
  throw new Error(
    `${command} is not installed: the TLS tests make their certificates with it and fail without it ` +
      '(on Debian: apt-get install -y openssl; .ci/run installs it)',
  );
}

function run(command: string, cwd: string, args: readonly string[]): void {
  try {
    execFileSync(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString('utf8') ?? '';
    throw new Error(`openssl ${args[0] ?? ''} failed: ${stderr.trim() || String(error)}`, { cause: error });
  }
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1'];

function authority(openssl: string, dir: string, name: string, subject: string): void {
  run(openssl, dir, [
    'req',
    '-x509',
    ...EC,
    '-nodes',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.pem`,
    '-days',
    '2',
    '-subj',
    subject,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
}

/**
 * Writes a CA, a server certificate it signed (with its key) and an unrelated CA into `dir`; throws when openssl
 * (`options.openssl`, a parameter for the test of that) is missing.
 */
export function generateTestCertificates(
  dir: string,
  options: { keyPassword?: string; openssl?: string } = {},
): TestCertificates {
  const openssl = options.openssl ?? 'openssl';
  requireOpenssl(openssl);
  authority(openssl, dir, 'ca', '/CN=svc test CA');
  authority(openssl, dir, 'other-ca', '/CN=svc unrelated test CA');
  const password = options.keyPassword;
  run(openssl, dir, [
    'genpkey',
    '-algorithm',
    'EC',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-out',
    'server.key',
    ...(password === undefined ? [] : ['-aes-256-cbc', '-pass', `pass:${password}`]),
  ]);
  run(openssl, dir, [
    'req',
    '-new',
    '-key',
    'server.key',
    ...(password === undefined ? [] : ['-passin', `pass:${password}`]),
    '-out',
    'server.csr',
    '-subj',
    '/CN=localhost',
  ]);
  writeFileSync(
    path.join(dir, 'server.ext'),
    [
      'basicConstraints=CA:FALSE',
      'keyUsage=critical,digitalSignature,keyEncipherment',
      'extendedKeyUsage=serverAuth,clientAuth',
      'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1',
      '',
    ].join('\n'),
  );
  run(openssl, dir, [
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-set_serial',
    `0x${Date.now().toString(16)}`,
    '-days',
    '2',
    '-extfile',
    'server.ext',
    '-out',
    'server.pem',
  ]);
  return {
    caFile: path.join(dir, 'ca.pem'),
    certFile: path.join(dir, 'server.pem'),
    keyFile: path.join(dir, 'server.key'),
    ...(password === undefined ? {} : { keyPassword: password }),
    otherCaFile: path.join(dir, 'other-ca.pem'),
  };
}
