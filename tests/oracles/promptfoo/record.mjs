#!/usr/bin/env node
// Record promptfoo's own verdicts for every case in cases.json.
//
// Usage:
//   node record.mjs [NODE_MODULES_DIR]
//
// NODE_MODULES_DIR (or env PROMPTFOO_NODE_MODULES) is a node_modules directory
// containing promptfoo; default /work/pf/node_modules. promptfoo is a
// test-time-only oracle: it is never installed into, or committed to, this repo.
//
// The script runs promptfoo's assertion engine (assertions.runAssertions, the
// same function promptfoo's evaluator calls after a provider responds) on each
// case and writes expected.json next to this file.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ORACLE_DIR = path.dirname(fileURLToPath(import.meta.url));
const nodeModules = path.resolve(
  process.argv[2] || process.env.PROMPTFOO_NODE_MODULES || '/work/pf/node_modules',
);
const pfDir = path.join(nodeModules, 'promptfoo');
const pfPkg = JSON.parse(fs.readFileSync(path.join(pfDir, 'package.json'), 'utf8'));
const EXPECTED_VERSION = '0.121.20';
if (pfPkg.version !== EXPECTED_VERSION && !process.env.PROMPTFOO_ORACLE_ANY_VERSION) {
  console.error(
    `promptfoo ${pfPkg.version} found in ${pfDir}; expected ${EXPECTED_VERSION}. ` +
      'Set PROMPTFOO_ORACLE_ANY_VERSION=1 to record anyway.',
  );
  process.exit(2);
}

// Keep promptfoo quiet and offline; python assertions spawn python3.
process.env.PROMPTFOO_DISABLE_TELEMETRY ??= '1';
process.env.PROMPTFOO_DISABLE_UPDATE ??= '1';
process.env.PROMPTFOO_PYTHON ??= 'python3';
process.env.LOG_LEVEL ??= 'error';

// file:// assertion values resolve against promptfoo's cliState.basePath, which
// falls back to the current directory: set both to the oracle directory.
process.chdir(ORACLE_DIR);

const entry = path.join(pfDir, 'dist', 'src', 'index.js');
const promptfoo = await import(pathToFileURL(entry).href);
const { runAssertions } = promptfoo.assertions;

// cliState is not exported publicly; find the bundled chunk that exports it
// (the import line in index.js reads `... X as state ...} from "./logger-*.js"`).
async function setBasePath(dir) {
  const src = fs.readFileSync(entry, 'utf8');
  for (const m of src.matchAll(/^import \{([^}]*)\} from "(\.\/[^"]+)";$/gm)) {
    const alias = m[1].split(',').map((s) => s.trim()).find((s) => / as state$/.test(s));
    if (!alias) continue;
    const exportName = alias.split(' as ')[0].trim();
    const mod = await import(pathToFileURL(path.join(path.dirname(entry), m[2])).href);
    if (mod[exportName] && typeof mod[exportName] === 'object') {
      mod[exportName].basePath = dir;
      return true;
    }
  }
  return false;
}
if (!(await setBasePath(ORACLE_DIR))) {
  console.error('warning: could not locate promptfoo cliState; relying on cwd for file:// paths');
}

// Make machine-specific paths in reasons (python tracebacks) reproducible.
const replacements = [
  [nodeModules, '<NODE_MODULES>'],
  [ORACLE_DIR, '<ORACLE_DIR>'],
  [fs.realpathSync(os.tmpdir()), '<TMP>'],
  [os.tmpdir(), '<TMP>'],
].sort((a, b) => b[0].length - a[0].length);
function sanitize(text) {
  if (typeof text !== 'string') return text;
  let out = text;
  for (const [from, to] of replacements) out = out.split(from).join(to);
  // Random temp directory names created by promptfoo for python runs.
  out = out.replace(/promptfoo-python-(code-)?[A-Za-z0-9]+/g, 'promptfoo-python-$1XXXXXX');
  return out;
}

function component(r) {
  return { pass: r.pass, score: r.score, reason: sanitize(r.reason) };
}

const cases = JSON.parse(fs.readFileSync(path.join(ORACLE_DIR, 'cases.json'), 'utf8'));
const ids = new Set();
const results = {};
for (const c of cases) {
  if (ids.has(c.id)) throw new Error(`duplicate case id ${c.id}`);
  ids.add(c.id);
  const vars = c.vars ?? {};
  const test = { vars, assert: structuredClone(c.assert) };
  if (c.threshold !== undefined) test.threshold = c.threshold;
  const providerResponse = { output: c.output };
  if (c.latency_ms !== undefined) providerResponse.latencyMs = c.latency_ms;
  if (c.cost !== undefined) providerResponse.cost = c.cost;
  try {
    const r = await runAssertions({
      test,
      vars,
      providerResponse,
      latencyMs: c.latency_ms,
    });
    results[c.id] = {
      pass: r.pass,
      score: r.score,
      reason: sanitize(r.reason),
      namedScores: r.namedScores ?? {},
      components: (r.componentResults ?? []).map(component),
    };
  } catch (err) {
    results[c.id] = { error: sanitize(err instanceof Error ? err.message : String(err)) };
  }
}

const out = {
  promptfoo_version: pfPkg.version,
  recorded_with: 'node record.mjs <node_modules containing promptfoo@0.121.20>',
  node_version: process.version,
  cases: results,
};
fs.writeFileSync(path.join(ORACLE_DIR, 'expected.json'), JSON.stringify(out, null, 1) + '\n');
const errors = Object.entries(results).filter(([, v]) => 'error' in v).map(([k]) => k);
console.log(`recorded ${cases.length} cases (${errors.length} threw) -> expected.json`);
if (errors.length) console.log(`threw: ${errors.join(', ')}`);
// promptfoo may leave handles (db, timers) open; exit explicitly.
process.exit(0);
