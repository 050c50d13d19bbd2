// A TypeScript service run as a child process (`node --import tsx`), restarted whenever it dies
// (a test SIGKILLs it, or it kills itself) until `stop()`; ready once it prints "ready".

import { spawn, type ChildProcess } from 'node:child_process';

/** A service process that comes back after every death. */
export interface ServiceProcess {
  /** How many times it died and was started again. */
  readonly restarts: number;
  /** Stops it for good. */
  stop(): Promise<void>;
}

/** Starts `file` with `env` and resolves once it printed "ready". */
export async function startServiceProcess(
  file: string,
  env: Record<string, string>,
): Promise<ServiceProcess> {
  let child: ChildProcess | undefined;
  let stopping = false;
  let restarts = 0;
  let output = '';
  const launch = () =>
    new Promise<void>((resolve, reject) => {
      const started = spawn(process.execPath, ['--import', 'tsx', file], {
        env: { ...process.env, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child = started;
      const collect = (chunk: Buffer) => {
        output = (output + chunk.toString()).slice(-4_000);
        if (output.includes('ready\n')) resolve();
      };
      started.stdout?.on('data', collect);
      started.stderr?.on('data', (chunk: Buffer) => {
        output = (output + chunk.toString()).slice(-4_000);
      });
      started.once('exit', (code, signal) => {
        if (stopping) return;
        reject(new Error(`${file} exited (${code ?? signal}) before it was ready: ${output}`));
        restarts += 1;
        output = '';
        // It died on purpose (a test's kill): bring it back on the same port, as an orchestrator would.
        void launch().catch(() => {});
      });
    });
  await launch();
  return {
    get restarts() {
      return restarts;
    },
    stop: async () => {
      stopping = true;
      const running = child;
      if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.kill('SIGKILL');
      await exited;
    },
  };
}
