// The contract between an interop script and its pytest test: one JSON report on the last line of
// stdout, exit status 0 only when every check held. Progress goes to stderr (shown on failure).

import { readFileSync } from 'node:fs';

/** Installed versions of the packages a script exercises (read from node_modules: not through
 * `require`, since packages such as @solana/kit do not export their package.json). */
export function versions(...packages) {
  const found = { node: process.versions.node };
  for (const name of packages) {
    const manifest = new URL(`./node_modules/${name}/package.json`, import.meta.url);
    found[name] = JSON.parse(readFileSync(manifest, 'utf8')).version;
  }
  return found;
}

/** JSON.stringify that writes bigints as decimal strings (viem returns bigints). */
export function toJson(value) {
  return JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? v.toString() : v));
}

/**
 * Collects checks and observations, and prints the report exactly once.
 *
 * `check` records a failure and carries on, so one run shows every mismatch; `fail` records one and
 * stops the script (for a step the rest depends on). A watchdog prints the report and exits when the
 * script hangs, so the test sees what happened before the hang.
 */
export class Report {
  constructor(name, { packages = [], deadlineMs = 30_000 } = {}) {
    this.name = name;
    this.data = { script: name, ok: false, versions: versions(...packages), checks: 0, failures: [], observed: {} };
    this.done = false;
    this.watchdog = setTimeout(() => {
      this.data.failures.push(`watchdog: script still running after ${deadlineMs} ms (last step: ${this.step})`);
      this.finish();
    }, deadlineMs);
    this.step = 'start';
  }

  /** Name the step under way (shown on stderr and in a watchdog failure). */
  progress(step) {
    this.step = step;
    process.stderr.write(`[${this.name}] ${step}\n`);
  }

  observe(key, value) {
    this.data.observed[key] = JSON.parse(toJson(value ?? null));
  }

  check(condition, message, detail) {
    this.data.checks += 1;
    if (!condition) {
      const text = detail === undefined ? message : `${message}: ${toJson(detail)}`;
      this.data.failures.push(text);
      process.stderr.write(`[${this.name}] MISMATCH ${text}\n`);
    }
    return Boolean(condition);
  }

  equal(actual, expected, message) {
    const same = toJson(actual) === toJson(expected);
    return this.check(same, message, { actual, expected });
  }

  fail(message) {
    throw new ScriptFailure(message);
  }

  /** Print the report and exit (0 when nothing failed). */
  finish(error) {
    if (this.done) return;
    this.done = true;
    clearTimeout(this.watchdog);
    if (error !== undefined) {
      const text = error instanceof ScriptFailure ? error.message : `${error?.stack ?? error}`;
      this.data.failures.push(`stopped at step "${this.step}": ${text}`);
      if (error?.cause !== undefined) this.data.failures.push(`cause: ${toJson(error.cause)}`);
    }
    this.data.ok = this.data.failures.length === 0;
    process.stdout.write(`${toJson(this.data)}\n`, () => process.exit(this.data.ok ? 0 : 1));
  }
}

export class ScriptFailure extends Error {}

/** Run `main(report, config)` with the config given as JSON in argv[2]. */
export async function runScript(name, packages, main, { deadlineMs } = {}) {
  const report = new Report(name, { packages, deadlineMs });
  try {
    const config = JSON.parse(process.argv[2] ?? '{}');
    await main(report, config);
    report.finish();
  } catch (error) {
    report.finish(error);
  }
}

/** Resolve when `predicate()` holds, polling every 10 ms; reject after `ms`. */
export async function until(predicate, ms, what) {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new ScriptFailure(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Make a plain JSON-RPC call over HTTP (for dev-only methods such as evm_mine). */
export async function httpCall(url, method, params = [], headers = {}) {
  const reply = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(10_000),
  });
  const body = await reply.json();
  if (body.error !== undefined) {
    throw new ScriptFailure(`${method} over HTTP failed (status ${reply.status}): ${JSON.stringify(body.error)}`);
  }
  return body.result;
}
