// One etcd server as a child process on loopback, or on a namespace test host: for the tests of the coordination
// store and for a local high-availability group (`npm start -- --ha`). The client port is read back from etcd's own log line (it binds
// port 0 the first time and the same port on a restart, so that clients holding its endpoint reconnect).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface EtcdProcessOptions {
  /** The etcd binary; Debian's etcd-server installs /usr/bin/etcd (scripts/etcd/install.sh). */
  readonly command?: string;
  readonly name?: string;
  readonly dataDir: string;
  /** The address etcd serves clients on: 127.0.0.1 by default, a test host's address on namespace hosts. */
  readonly host?: string;
  /** Runs etcd inside this network namespace (a test host of runtime/cluster/hosts.ts). */
  readonly namespace?: string;
  /** The client port: 0 (the default) takes a free one, read back once etcd serves. */
  readonly clientPort?: number;
  /** How long starting may take before it fails, naming what it waited for. */
  readonly startTimeoutMs?: number;
  /**
   * Serve clients over TLS with this certificate and key; with `clientCaFile`, ask every client for a certificate
   * signed by it (etcd's --client-cert-auth).
   */
  readonly tls?: { readonly certFile: string; readonly keyFile: string; readonly clientCaFile?: string };
}

/** Why etcd cannot run here (undefined: it can): the line a test that needs it prints when it skips. */
export function etcdUnavailable(command = 'etcd'): string | undefined {
  const probe = spawnSync(command, ['--version'], { encoding: 'utf8' });
  if (probe.error === undefined && probe.status === 0) return undefined;
  return (
    `${command} is not installed (${probe.error?.message ?? `exit ${String(probe.status)}`}); ` +
    'install it with bash scripts/etcd/install.sh (Debian etcd-server; .ci/run runs it)'
  );
}

interface EtcdLogLine {
  readonly msg?: string;
  readonly address?: string;
  readonly [field: string]: unknown;
}

/** A running etcd; `stop` ends it (SIGTERM, then SIGKILL), `start` runs it again on the same port and data. */
export class EtcdProcess {
  private child: ChildProcess | undefined;
  private port: number;
  readonly output: string[] = [];

  private constructor(private readonly options: EtcdProcessOptions) {
    this.port = options.clientPort ?? 0;
  }

  static async start(options: EtcdProcessOptions): Promise<EtcdProcess> {
    const etcd = new EtcdProcess(options);
    await etcd.start();
    return etcd;
  }

  /** `host:port`: what svc.master.ha.etcd.endpoints names. */
  get endpoint(): string {
    return `${this.options.host ?? '127.0.0.1'}:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts etcd (again, on the port it had) and resolves once it serves clients. */
  async start(): Promise<void> {
    if (this.child !== undefined) throw new Error('etcd is already running');
    const name = this.options.name ?? 'svc-etcd';
    const tls = this.options.tls;
    const client = `${tls === undefined ? 'http' : 'https'}://${this.options.host ?? '127.0.0.1'}:${this.port}`;
    // A single member elects itself; the peer port is never dialled, so port 0 is enough there.
    const args = [
      `--name=${name}`,
      `--data-dir=${this.options.dataDir}`,
      `--listen-client-urls=${client}`,
      `--advertise-client-urls=${client}`,
      '--listen-peer-urls=http://127.0.0.1:0',
      '--initial-advertise-peer-urls=http://127.0.0.1:0',
      `--initial-cluster=${name}=http://127.0.0.1:0`,
      '--enable-grpc-gateway=false',
      ...(tls === undefined ? [] : [`--cert-file=${tls.certFile}`, `--key-file=${tls.keyFile}`]),
      ...(tls?.clientCaFile === undefined
        ? []
        : ['--client-cert-auth', `--trusted-ca-file=${tls.clientCaFile}`]),
      '--logger=zap',
      '--log-outputs=stderr',
    ];
    const command = this.options.command ?? 'etcd';
    // `ip netns exec` execs etcd after entering the namespace: the child's pid and signals are etcd's own.
    const argv =
      this.options.namespace === undefined
        ? [command, ...args]
        : ['ip', 'netns', 'exec', this.options.namespace, command, ...args];
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
    this.child = child;
    // etcd cannot notice its parent's death; a parent that exits without stopping it (a test that threw) ends it.
    const orphaned = (): void => void child.kill('SIGKILL');
    process.once('exit', orphaned);
    child.once('exit', () => process.removeListener('exit', orphaned));
    const timeoutMs = this.options.startTimeoutMs ?? 30_000;
    const lines = createInterface({ input: child.stderr });
    let address: string | undefined;
    const served = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(
          new Error(
            `etcd did not serve clients within ${timeoutMs} ms:\n${this.output.slice(-20).join('\n')}`,
          ),
        );
      }, timeoutMs);
      const fail = (error: Error): void => {
        clearTimeout(timer);
        reject(error);
      };
      child.once('error', fail);
      child.once('exit', (code, signal) => {
        if (this.child === child) this.child = undefined;
        fail(
          new Error(
            `etcd exited (${String(code ?? signal)}) before serving:\n${this.output.slice(-20).join('\n')}`,
          ),
        );
      });
      lines.on('line', (text) => {
        this.output.push(text);
        if (this.output.length > 500) this.output.shift();
        let line: EtcdLogLine;
        try {
          line = JSON.parse(text) as EtcdLogLine;
        } catch {
          return;
        }
        // etcd 3.4 writes this (`… securely` with TLS), with the address it bound, once its server is ready.
        if (line.msg?.startsWith('serving client traffic') === true && typeof line.address === 'string') {
          address = line.address;
          clearTimeout(timer);
          resolve();
        }
      });
    });
    try {
      await served;
    } catch (error) {
      child.kill('SIGKILL');
      this.child = undefined;
      throw error;
    }
    this.port = Number(address!.slice(address!.lastIndexOf(':') + 1));
  }

  /** SIGSTOP / SIGCONT / SIGKILL for fault tests. */
  signal(signal: NodeJS.Signals): void {
    this.child?.kill(signal);
  }

  /** Ends etcd and resolves once it has exited; SIGKILL after `graceMs`. */
  async stop(graceMs = 10_000): Promise<void> {
    const child = this.child;
    if (child === undefined) return;
    this.child = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGCONT');
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }
}
