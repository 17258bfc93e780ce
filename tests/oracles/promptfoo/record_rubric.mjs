#!/usr/bin/env node
// Record promptfoo's own verdicts for the llm-rubric cases in rubric_cases.json.
//
// Usage:
//   node record_rubric.mjs [NODE_MODULES_DIR]
//
// As record.mjs, but each case's grader is a scripted OpenAI-compatible endpoint
// served by this script on 127.0.0.1 (no network): it answers the case's `grader`
// (a reply text, or {"status": N, "error": "..."}) to whatever promptfoo asks, and
// records the messages promptfoo sent. promptfoo grades through its own OpenAI
// provider pointed at it (test.options.provider), with its cache off. Writes
// rubric_expected.json: per case promptfoo's pass, score, reason, named scores, and
// the grading requests' messages (what our llm-rubric must send).

import fs from 'node:fs';
import http from 'node:http';
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
  console.error(`promptfoo ${pfPkg.version} found in ${pfDir}; expected ${EXPECTED_VERSION}.`);
  process.exit(2);
}

process.env.PROMPTFOO_DISABLE_TELEMETRY ??= '1';
process.env.PROMPTFOO_DISABLE_UPDATE ??= '1';
process.env.PROMPTFOO_CACHE_ENABLED = 'false';
process.env.PROMPTFOO_DISABLE_REMOTE_GENERATION = 'true';
process.env.LOG_LEVEL ??= 'error';
// The grader's key: a placeholder, sent only to the local endpoint below.
process.env.OPENAI_API_KEY = 'sk-oracle-local';
process.chdir(ORACLE_DIR);

// The scripted grader: the current case's reply, and the requests it got.
let current = null;
let received = [];
const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (chunk) => (body += chunk));
  req.on('end', () => {
    let parsed = null;
    try {
      parsed = JSON.parse(body);
    } catch {}
    received.push(parsed && parsed.messages ? parsed.messages : null);
    const grader = current.grader;
    if (typeof grader === 'object' && grader !== null) {
      res.writeHead(grader.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: grader.error, type: 'invalid_request_error' } }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id: 'chatcmpl-oracle',
        object: 'chat.completion',
        created: 0,
        model: 'grader',
        choices: [{ index: 0, message: { role: 'assistant', content: grader }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      }),
    );
  });
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const port = server.address().port;

const entry = path.join(pfDir, 'dist', 'src', 'index.js');
const promptfoo = await import(pathToFileURL(entry).href);
const { runAssertions } = promptfoo.assertions;

const cases = JSON.parse(fs.readFileSync(path.join(ORACLE_DIR, 'rubric_cases.json'), 'utf8'));
const results = {};
for (const c of cases) {
  current = c;
  received = [];
  const vars = c.vars ?? {};
  const test = {
    vars,
    assert: structuredClone(c.assert),
    options: {
      provider: {
        id: 'openai:chat:grader',
        config: { apiBaseUrl: `http://127.0.0.1:${port}/v1`, apiKey: 'sk-oracle-local', maxRetries: 0 },
      },
    },
  };
  if (c.threshold !== undefined) test.threshold = c.threshold;
  try {
    const r = await runAssertions({ test, vars, providerResponse: { output: c.output } });
    results[c.id] = {
      pass: r.pass,
      score: r.score,
      reason: r.reason,
      namedScores: r.namedScores ?? {},
      components: (r.componentResults ?? []).map((x) => ({ pass: x.pass, score: x.score, reason: x.reason })),
      requests: received,
    };
  } catch (err) {
    results[c.id] = { error: err instanceof Error ? err.message : String(err), requests: received };
  }
}
server.close();
const out = {
  promptfoo_version: pfPkg.version,
  recorded_with: 'node record_rubric.mjs <node_modules containing promptfoo@0.121.20>',
  node_version: process.version,
  cases: results,
};
fs.writeFileSync(path.join(ORACLE_DIR, 'rubric_expected.json'), JSON.stringify(out, null, 1) + '\n');
console.log(`recorded ${cases.length} llm-rubric cases -> rubric_expected.json`);
process.exit(0);
