// SPDX-License-Identifier: GPL-2.0-only
// Parse a trace-event JSON file (.json or .json.gz) with DevTools' trace
// engine, the parser of Chrome's Performance panel, with all its handlers,
// and print what it made of it as one JSON object on stdout:
//   events: how many trace events it read,
//   flows: each flow it bound, as its events [{ph, cat, name, ts, pid, tid}]
//          in order (ts in us, as in the file),
//   threads: {"pid:tid": number of complete events the renderer placed},
//   warnings: {warning name: count}.
// Exit 1 (and the error on stderr) when the engine throws.
// Usage: node check_trace.mjs FILE
import fs from 'node:fs';
import zlib from 'node:zlib';
import * as Trace from '@paulirish/trace_engine';

// The engine's helpers use DOMRect, which node lacks.
globalThis.DOMRect ??= class DOMRect {
  constructor(x = 0, y = 0, width = 0, height = 0) {
    Object.assign(this, {x, y, width, height, left: x, top: y, right: x + width, bottom: y + height});
  }
};

const file = process.argv[2];
let buf = fs.readFileSync(file);
if (buf[0] === 0x1f && buf[1] === 0x8b)
  buf = zlib.gunzipSync(buf);
const json = JSON.parse(buf.toString('utf8'));
const events = json.traceEvents ?? json;

try {
  const model = Trace.TraceModel.Model.createWithAllHandlers();
  await model.parse(events);
  const parsed = model.parsedTrace().data;
  const flows = parsed.Flows.flows.map(
      f => f.map(e => ({ph: e.ph, cat: e.cat, name: e.name, ts: e.ts, pid: e.pid, tid: e.tid})));
  const threads = {};
  for (const [pid, proc] of parsed.Renderer.processes) {
    for (const [tid, thr] of proc.threads)
      threads[`${pid}:${tid}`] = thr.entries.length;
  }
  const warnings = {};
  for (const [name, evs] of parsed.Warnings.perWarning)
    warnings[name] = evs.length;
  process.stdout.write(JSON.stringify({events: events.length, flows, threads, warnings}) + '\n');
} catch (err) {
  process.stderr.write(`trace engine: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
}
