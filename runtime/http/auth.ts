/**
 * Authentication and authorization of the management interface (docs/http-api.md, Authentication): HTTP basic
 * (users with passwords) and bearer tokens, per role, from `svc.<role>.http.auth.*`. With no scheme configured
 * every request passes, as in the reference. With one, every request needs valid credentials of an accepted scheme
 * (401 with `WWW-Authenticate` otherwise), and a request that changes the node's state needs an administrator
 * (`svc.<role>.http.auth.administers`; 403 otherwise). Secrets are compared in constant time.
 */
import { createHash, createHmac, randomBytes, scrypt, scryptSync, timingSafeEqual } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import type { ResolvedConfig } from '../../conf/index.ts';
import type { HttpRole } from '../../core/release/legacy-endpoints.ts';
import type { Release } from '../../core/release/version.ts';
import type { Logger } from '../log.ts';
import { mutatingRequest } from './legacy.ts';

export const AUTH_SCHEMES = ['BASIC', 'BEARER'] as const;
export type AuthScheme = (typeof AUTH_SCHEMES)[number];

/** An authentication setting the management interface cannot start with; the message names the key. */
export class ManagementConfigError extends Error {
  override readonly name = 'ManagementConfigError';
}

/** What the interface does with one request. */
export type AuthDecision =
  | { readonly allowed: true; readonly user?: string }
  | {
      /** Too many password checks wait already: try again after `retryAfterSeconds` (`Retry-After`). */
      readonly allowed: false;
      readonly status: 429;
      readonly message: string;
      readonly retryAfterSeconds: number;
      readonly challenges: readonly [];
      readonly user: string;
      readonly scheme: 'Basic';
      readonly presented: true;
    }
  | {
      readonly allowed: false;
      readonly status: 401 | 403;
      readonly message: string;
      /** `WWW-Authenticate` challenges (401 only), one per accepted scheme. */
      readonly challenges: readonly string[];
      /** Who was authenticated (403), or the user a basic request named (401); never a secret. */
      readonly user?: string;
      /** The scheme the request used, when it used one. */
      readonly scheme?: string;
      /** Whether the request carried credentials at all (a 401 without is the normal first step of a client). */
      readonly presented: boolean;
    };

export interface AuthRequest {
  readonly method: string;
  /** The path of the route the request matched (undefined: none matched). */
  readonly route: string | undefined;
  readonly path: string;
  readonly authorization: string | undefined;
}

// ------------------------------------------------------------------ secrets

const SCRYPT = { N: 16384, r: 8, p: 1, maxmem: 64 * 1024 * 1024 } as const;
const SCRYPT_PREFIX = '$scrypt$';
const SHA256_PREFIX = '$sha256$';

/** `$scrypt$<salt>$<hash>` (base64) of a password, for `svc.<role>.http.auth.basic.file`. */
export function hashPassword(password: string, salt: Buffer = randomBytes(16)): string {
  const hash = scryptSync(password, salt, 32, SCRYPT);
  return `${SCRYPT_PREFIX}${salt.toString('base64')}$${hash.toString('base64')}`;
}

/** `$sha256$<hex>` of a token, for `svc.<role>.http.auth.bearer.file`. */
export function hashToken(token: string): string {
  return `${SHA256_PREFIX}${sha256(token).toString('hex')}`;
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

function scryptAsync(password: string, salt: Buffer, length: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password, salt, length, SCRYPT, (error, key) => (error === null ? resolve(key) : reject(error))),
  );
}

/** How one user's password is checked: against its SHA-256 (a password given in clear) or its scrypt hash. */
export type Verifier =
  | { readonly kind: 'plain'; readonly digest: Buffer }
  | { readonly kind: 'scrypt'; readonly salt: Buffer; readonly hash: Buffer };

function verifierOf(secret: string, where: string, key: string): Verifier {
  if (!secret.startsWith(SCRYPT_PREFIX)) return { kind: 'plain', digest: sha256(secret) };
  const [salt, hash] = secret.slice(SCRYPT_PREFIX.length).split('$');
  const saltBytes = Buffer.from(salt ?? '', 'base64');
  const hashBytes = Buffer.from(hash ?? '', 'base64');
  if (saltBytes.length === 0 || hashBytes.length < 16) {
    throw new ManagementConfigError(
      `${key}: ${where}: a hashed password is written $scrypt$<salt>$<hash>, both base64 (hash: 32 bytes of ` +
        'scrypt N=16384 r=8 p=1)',
    );
  }
  return { kind: 'scrypt', salt: saltBytes, hash: hashBytes };
}

function tokenDigest(secret: string, where: string, key: string): Buffer {
  if (!secret.startsWith(SHA256_PREFIX)) return sha256(secret);
  const hex = secret.slice(SHA256_PREFIX.length);
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) {
    throw new ManagementConfigError(`${key}: ${where}: a hashed token is written $sha256$<64 hex digits>`);
  }
  return Buffer.from(hex, 'hex');
}

// ------------------------------------------------------------------ credentials from configuration

/** One `name:secret` entry; the message never quotes the entry (it holds a secret). */
function splitEntry(text: string, where: string, key: string, what: string): [string, string] {
  const separator = text.indexOf(':');
  const name = separator < 0 ? '' : text.slice(0, separator).trim();
  const secret = separator < 0 ? '' : text.slice(separator + 1);
  if (name.length === 0 || secret.length === 0 || /\s/.test(name)) {
    throw new ManagementConfigError(
      `${key}: ${where} is not ${what}: a name without ':' or white space, ':', then the secret`,
    );
  }
  return [name, secret];
}

interface Entry {
  readonly text: string;
  readonly where: string;
  readonly key: string;
}

function listEntries(conf: ResolvedConfig, key: string): Entry[] {
  return (conf.optional(key, 'getList') ?? [])
    .map((text, index) => ({ text: text.trim(), where: `entry ${index + 1}`, key }))
    .filter((entry) => entry.text.length > 0);
}

function fileEntries(conf: ResolvedConfig, key: string, logger: Logger | undefined): Entry[] {
  const file = conf.optional(key, 'getString');
  if (file === undefined) return [];
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ManagementConfigError(
      `${key}: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
    );
  }
  if (process.platform !== 'win32' && (statSync(file).mode & 0o077) !== 0) {
    logger?.warn(
      { event: 'http.authFileReadable', key, file },
      `${key}: ${file} can be read by other users than its owner; it holds secrets (chmod 600 ${file})`,
    );
  }
  return text
    .split(/\r?\n/)
    .map((line, index) => ({ text: line.trim(), where: `${file} line ${index + 1}`, key }))
    .filter((entry) => entry.text.length > 0 && !entry.text.startsWith('#'));
}

export interface HttpAuthSettings {
  readonly role: HttpRole;
  /** The release the node presents: which legacy paths change state. */
  readonly release: Release;
  readonly schemes: readonly AuthScheme[];
  /** Basic users: name → password verifier. */
  readonly users: ReadonlyMap<string, Verifier>;
  /** Bearer tokens: the SHA-256 of each, with the name it authenticates. */
  readonly tokens: readonly { readonly name: string; readonly digest: Buffer }[];
  readonly administers: readonly string[];
  /** Password checks (scrypt) waiting or running at most; one more is answered 429 (default 32). */
  readonly maxPendingPasswordChecks?: number;
  /** scrypt itself (a parameter so that a test can hold checks back). */
  readonly scrypt?: (password: string, salt: Buffer, length: number) => Promise<Buffer>;
}

/**
 * The authentication the configuration asks of `role`'s management interface; undefined when it asks none (no
 * scheme, or a release before 0.6.0, which has no authentication keys). Throws ManagementConfigError for a scheme
 * without credentials, an unreadable file or a malformed entry; warns of what will refuse every mutation.
 */
export function httpAuthFromConf(
  role: HttpRole,
  release: Release,
  conf: ResolvedConfig,
  logger?: Logger,
): HttpAuth | undefined {
  const prefix = `svc.${role}.http.auth`;
  const schemes = (conf.optional(`${prefix}.supportedSchemes`, 'getList') ?? []).map((scheme) =>
    scheme.toUpperCase(),
  );
  if (schemes.length === 0) return undefined;
  const accepted = AUTH_SCHEMES.filter((scheme) => schemes.includes(scheme));

  const users = new Map<string, Verifier>();
  for (const entry of [
    ...fileEntries(conf, `${prefix}.basic.file`, logger),
    ...listEntries(conf, `${prefix}.basic.users`),
  ]) {
    const [name, secret] = splitEntry(entry.text, entry.where, entry.key, 'user:password');
    if (users.has(name)) {
      throw new ManagementConfigError(`${entry.key}: ${entry.where}: user ${name} is defined twice`);
    }
    users.set(name, verifierOf(secret, entry.where, entry.key));
  }
  const tokens: { name: string; digest: Buffer }[] = [];
  for (const entry of [
    ...fileEntries(conf, `${prefix}.bearer.file`, logger),
    ...listEntries(conf, `${prefix}.bearer.tokens`),
  ]) {
    const [name, secret] = splitEntry(entry.text, entry.where, entry.key, 'name:token');
    const digest = tokenDigest(secret, entry.where, entry.key);
    if (tokens.some((token) => timingSafeEqual(token.digest, digest))) {
      throw new ManagementConfigError(
        `${entry.key}: ${entry.where}: this token is already given to another name`,
      );
    }
    tokens.push({ name, digest });
  }
  if (accepted.includes('BASIC') && users.size === 0) {
    throw new ManagementConfigError(
      `${prefix}.supportedSchemes accepts BASIC but no user is defined: set ${prefix}.basic.file ` +
        `(user:password lines) or ${prefix}.basic.users`,
    );
  }
  if (accepted.includes('BEARER') && tokens.length === 0) {
    throw new ManagementConfigError(
      `${prefix}.supportedSchemes accepts BEARER but no token is defined: set ${prefix}.bearer.file ` +
        `(name:token lines) or ${prefix}.bearer.tokens`,
    );
  }
  const administers = conf.optional(`${prefix}.administers`, 'getList') ?? [];
  const known = new Set([
    ...(accepted.includes('BASIC') ? users.keys() : []),
    ...(accepted.includes('BEARER') ? tokens.map((token) => token.name) : []),
  ]);
  if (administers.length === 0) {
    logger?.warn(
      { event: 'http.noAdministrator', key: `${prefix}.administers` },
      `${prefix}.administers is empty: nobody may call the ${role}'s mutating management endpoints`,
    );
  }
  const unknown = administers.filter((name) => !known.has(name));
  if (unknown.length > 0) {
    logger?.warn(
      { event: 'http.unknownAdministrator', key: `${prefix}.administers`, names: unknown },
      `${prefix}.administers names ${unknown.join(', ')}, who cannot authenticate with the accepted schemes`,
    );
  }
  return new HttpAuth({ role, release, schemes: accepted, users, tokens, administers });
}

// ------------------------------------------------------------------ deciding

const SCHEME_NAMES: Readonly<Record<AuthScheme, string>> = {
  BASIC: 'Basic (user and password)',
  BEARER: 'Bearer (a token)',
};

/** Successful scrypt checks remembered, so that an administrator's repeated requests do not pay for scrypt again. */
const VERIFIED_CACHE_SIZE = 1024;

export class HttpAuth {
  private readonly administers: ReadonlySet<string>;
  /** Whether a request changes the node's state (legacy GETs included: ./legacy.ts). */
  private readonly mutatesRequest: (method: string, route: string | undefined) => boolean;
  /** What an unknown user's password is checked against, so that it costs what a known user's does. */
  private readonly decoy: Verifier;
  private readonly cacheKey = randomBytes(32);
  private readonly verified = new Set<string>();
  /** scrypt runs one at a time (it uses libuv's thread pool, which disk I/O needs too), and only so many wait. */
  private readonly passwordChecks: BoundedQueue;

  constructor(readonly settings: HttpAuthSettings) {
    this.administers = new Set(settings.administers);
    this.mutatesRequest = mutatingRequest(settings.role, settings.release);
    this.passwordChecks = new BoundedQueue(
      settings.maxPendingPasswordChecks ?? DEFAULT_PENDING_PASSWORD_CHECKS,
    );
    const scrypted = [...settings.users.values()].some((verifier) => verifier.kind === 'scrypt');
    this.decoy = scrypted
      ? { kind: 'scrypt', salt: randomBytes(16), hash: randomBytes(32) }
      : { kind: 'plain', digest: randomBytes(32) };
  }

  /** Whether the request changes the node's state (and so needs an administrator). */
  mutates(method: string, route: string | undefined): boolean {
    return this.mutatesRequest(method, route);
  }

  async decide(request: AuthRequest): Promise<AuthDecision> {
    const { role, schemes } = this.settings;
    const accepts = schemes.map((scheme) => SCHEME_NAMES[scheme]).join(' or ');
    const header = request.authorization?.trim() ?? '';
    if (header.length === 0) {
      return this.unauthorized(
        `authentication required: this ${role} accepts ${accepts} credentials in the Authorization header ` +
          `(svc.${role}.http.auth.supportedSchemes)`,
        { presented: false },
      );
    }
    const space = header.indexOf(' ');
    const scheme = (space < 0 ? header : header.slice(0, space)).toUpperCase();
    const credentials = space < 0 ? '' : header.slice(space + 1).trim();
    let user: string | undefined;
    if (scheme === 'BASIC' && schemes.includes('BASIC')) {
      const decoded = Buffer.from(credentials, 'base64').toString('utf8');
      const separator = decoded.indexOf(':');
      if (credentials.length === 0 || separator <= 0) {
        return this.unauthorized('the Basic credentials are not the base64 of user:password', {
          presented: true,
          scheme: 'Basic',
        });
      }
      const name = decoded.slice(0, separator);
      const checked = await this.checkPassword(name, decoded.slice(separator + 1));
      if (checked === 'busy') return this.busy(name);
      user = checked === 'match' ? name : undefined;
      if (user === undefined) {
        return this.unauthorized(`the Basic credentials are not valid on this ${role}`, {
          presented: true,
          scheme: 'Basic',
          user: name,
        });
      }
    } else if (scheme === 'BEARER' && schemes.includes('BEARER')) {
      user = this.checkToken(credentials);
      if (user === undefined) {
        return this.unauthorized(`the Bearer token is not valid on this ${role}`, {
          presented: true,
          scheme: 'Bearer',
          invalidToken: true,
        });
      }
    } else {
      const used = space < 0 ? header : header.slice(0, space);
      return this.unauthorized(`the Authorization header uses ${used}; this ${role} accepts ${accepts}`, {
        presented: true,
        scheme: used,
      });
    }
    if (this.mutates(request.method, request.route) && !this.administers.has(user)) {
      return {
        allowed: false,
        status: 403,
        message:
          `${request.method} ${request.path} changes the ${role}'s state and needs an administrator ` +
          `(svc.${role}.http.auth.administers); ` +
          (this.administers.size === 0
            ? `nobody is one: svc.${role}.http.auth.administers is empty`
            : `${user} is not one`),
        challenges: [],
        user,
        scheme: scheme === 'BASIC' ? 'Basic' : 'Bearer',
        presented: true,
      };
    }
    return { allowed: true, user };
  }

  private unauthorized(
    message: string,
    details: { presented: boolean; scheme?: string; user?: string; invalidToken?: boolean },
  ): AuthDecision {
    const realm = `realm="svc ${this.settings.role}"`;
    const challenges = this.settings.schemes.map((scheme) =>
      scheme === 'BASIC'
        ? `Basic ${realm}, charset="UTF-8"`
        : `Bearer ${realm}${details.invalidToken === true ? ', error="invalid_token"' : ''}`,
    );
    return {
      allowed: false,
      status: 401,
      message,
      challenges,
      presented: details.presented,
      ...(details.scheme === undefined ? {} : { scheme: details.scheme }),
      ...(details.user === undefined ? {} : { user: details.user }),
    };
  }

  private busy(user: string): AuthDecision {
    const retryAfterSeconds = this.passwordChecks.retryAfterSeconds();
    return {
      allowed: false,
      status: 429,
      message:
        `too many password checks are waiting (${this.passwordChecks.limit}): retry after ` +
        `${retryAfterSeconds} s`,
      retryAfterSeconds,
      challenges: [],
      user,
      scheme: 'Basic',
      presented: true,
    };
  }

  /**
   * Constant time in the password, and an unknown user costs what a known one does; `busy` when the scrypt queue is
   * full (a password that passed before is still recognised then: it needs no scrypt).
   */
  private async checkPassword(user: string, password: string): Promise<'match' | 'mismatch' | 'busy'> {
    const known = this.settings.users.get(user);
    const verifier = known ?? this.decoy;
    let matches: boolean;
    if (verifier.kind === 'plain') {
      matches = timingSafeEqual(sha256(password), verifier.digest);
    } else {
      const remembered = createHmac('sha256', this.cacheKey).update(`${user}\0${password}`).digest('hex');
      if (known !== undefined && this.verified.has(remembered)) return 'match';
      const scrypt = this.settings.scrypt ?? scryptAsync;
      const hash = this.passwordChecks.run(() => scrypt(password, verifier.salt, verifier.hash.length));
      if (hash === undefined) return 'busy';
      matches = timingSafeEqual(await hash, verifier.hash);
      if (matches && known !== undefined) {
        if (this.verified.size >= VERIFIED_CACHE_SIZE) this.verified.clear();
        this.verified.add(remembered);
      }
    }
    return matches && known !== undefined ? 'match' : 'mismatch';
  }

  /** Compares the token's digest with every token's, without stopping at a match. */
  private checkToken(token: string): string | undefined {
    const digest = sha256(token);
    let found: string | undefined;
    for (const entry of this.settings.tokens) {
      if (timingSafeEqual(entry.digest, digest) && found === undefined) found = entry.name;
    }
    return token.length === 0 ? undefined : found;
  }
}

const DEFAULT_PENDING_PASSWORD_CHECKS = 32;
/** What one scrypt check is assumed to take before one has been measured (N=16384 takes about 50 ms here). */
const ASSUMED_CHECK_MS = 100;

/**
 * Tasks run one at a time, at most `limit` waiting or running: an unauthenticated flood of Basic requests then gets
 * 429s instead of a queue that delays everyone (administrators' remembered passwords need no task).
 */
export class BoundedQueue {
  private tail: Promise<unknown> = Promise.resolve();
  private pending = 0;
  /** A moving average of a task's duration, for Retry-After. */
  private averageMs = ASSUMED_CHECK_MS;

  constructor(readonly limit: number) {}

  /** The task's result, in turn; undefined (and the task not run) when `limit` tasks wait already. */
  run<T>(task: () => Promise<T>): Promise<T> | undefined {
    if (this.pending >= this.limit) return undefined;
    this.pending++;
    const result = this.tail.then(async () => {
      const started = performance.now();
      try {
        return await task();
      } finally {
        this.averageMs = 0.8 * this.averageMs + 0.2 * (performance.now() - started);
        this.pending--;
      }
    });
    this.tail = result.catch(() => undefined);
    return result;
  }

  /** When the tasks waiting now should be done: whole seconds, at least one. */
  retryAfterSeconds(): number {
    return Math.max(1, Math.ceil((this.pending * this.averageMs) / 1000));
  }
}
