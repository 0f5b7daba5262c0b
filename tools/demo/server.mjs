#!/usr/bin/env node
// SPDX-License-Identifier: GPL-2.0-only
//
// ttftrace demo target: a real llama.cpp engine (node-llama-cpp, CPU) behind
// a small OpenAI-compatible HTTP server, serving the random-weight model that
// gen_gguf.py writes. Output is gibberish; the timing is real.
//
//   node server.mjs [--port N] [--host 127.0.0.1] [--model PATH]
//                   [--parallel N] [--threads N] [--ctx-size N]
//
// Endpoints
//   POST /v1/chat/completions   OpenAI chat; stream or not; stream_options.include_usage
//   POST /v1/completions        OpenAI legacy completions
//   POST /completion            llama.cpp native (n_predict, stream); /completions is an alias
//   GET  /health                200 {"status":"ok"} once the model is loaded
//
// Token counts are exact: max_tokens / n_predict tokens are generated every
// time. The end-of-sequence token is never emitted: when the model samples a
// control token (<unk>, <s>, </s>) a space is emitted and evaluated instead,
// so each generated token is one SSE event with non-empty text.
//
// Concurrency: --parallel N context sequences (default 1) decode together in
// one batch; further requests wait in a FIFO queue for a free sequence.
//
// Threads: the default is one fewer than the CPUs (at least 1). On a 2-core
// machine a 2-thread context competes with node's own thread and the ggml
// workers spin-wait for each other: decode measured ~15 ms/token with
// 100+ ms stalls instead of ~3 ms/token steady with one thread.
import http from "node:http";
import os from "node:os";
import path from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const here = path.dirname(fileURLToPath(import.meta.url));

function fail(msg, hint) {
	process.stderr.write(`Error: ${msg}\n`);
	if (hint)
		process.stderr.write(`HINT: ${hint}\n`);
	process.exit(1);
}

let opts;
try {
	opts = parseArgs({
		options: {
			port: { type: "string", default: process.env.PORT ?? "8080" },
			host: { type: "string", default: "127.0.0.1" },
			model: { type: "string", default: path.join(here, "model", "demo.gguf") },
			parallel: { type: "string", default: "1" },
			threads: { type: "string", default: String(Math.max(1, os.cpus().length - 1)) },
			"ctx-size": { type: "string", default: "2048" },
			help: { type: "boolean", short: "h", default: false },
		},
	}).values;
} catch (e) {
	fail(e.message, "node server.mjs --help");
}
if (opts.help) {
	process.stdout.write(`usage: node server.mjs [--port N|0] [--host ADDR] [--model PATH]
                      [--parallel SEQUENCES] [--threads N] [--ctx-size TOKENS]
Serves a GGUF model with node-llama-cpp (CPU). --port 0 picks a free port; the
line "listening on HOST:PORT" on stdout says which, once the model is loaded.
Defaults: port $PORT or 8080, parallel 1, threads cpus-1, ctx-size 2048 per sequence.
`);
	process.exit(0);
}
const port = Number(opts.port);
const parallel = Number(opts.parallel);
const threads = Number(opts.threads);
const ctxSize = Number(opts["ctx-size"]);
for (const [name, v, min] of [["port", port, 0], ["parallel", parallel, 1],
	["threads", threads, 1], ["ctx-size", ctxSize, 64]]) {
	if (!Number.isInteger(v) || v < min)
		fail(`--${name} must be an integer >= ${min}`);
}

let llamaMod;
try {
	llamaMod = await import("node-llama-cpp");
} catch (e) {
	fail(`cannot load node-llama-cpp: ${e.message}`, "run tools/demo/install.sh");
}
const { getLlama } = llamaMod;

const loadStart = performance.now();
const llama = await getLlama({ gpu: false, build: "never", logLevel: "warn" });
let model;
try {
	model = await llama.loadModel({ modelPath: opts.model });
} catch (e) {
	fail(`cannot load model ${opts.model}: ${e.message}`,
		"run tools/demo/install.sh to write the demo model");
}
const context = await model.createContext({
	contextSize: ctxSize, sequences: parallel, threads, batchSize: 512,
});
const loadMs = performance.now() - loadStart;
// Tokens one sequence can hold (llama.cpp may round the request up).
const seqCtx = context.contextSize;

const ctrlTokens = new Set([model.tokens.bos, model.tokens.eos, 0].filter((t) => t != null));
const spaceToken = model.tokenize(" ")[0];

// Free sequences and FIFO waiters for one.
const freeSeqs = [];
for (let i = 0; i < parallel; i++)
	freeSeqs.push(context.getSequence());
const waiters = [];

function acquireSeq() {
	if (freeSeqs.length)
		return Promise.resolve(freeSeqs.shift());
	return new Promise((resolve) => waiters.push(resolve));
}

async function releaseSeq(seq) {
	await seq.clearHistory();
	const w = waiters.shift();
	if (w)
		w(seq);
	else
		freeSeqs.push(seq);
}

let nextId = 1;

// Generate exactly maxTokens tokens after the prompt; onToken(text, token) per token.
// Returns false if aborted() turned true first.
async function generate(seq, promptTokens, maxTokens, sampling, onToken, aborted) {
	const gen = seq.evaluate(promptTokens, { ...sampling, yieldEogToken: true });
	let r = await gen.next();
	let n = 0;
	try {
		while (!r.done && n < maxTokens) {
			let tok = r.value;
			if (ctrlTokens.has(tok))
				tok = spaceToken;
			n++;
			onToken(model.detokenize([tok]), tok);
			if (n >= maxTokens || aborted())
				break;
			r = await gen.next(tok);
		}
	} finally {
		await gen.return();
	}
	return n === maxTokens;
}

function readBody(req) {
	return new Promise((resolve, reject) => {
		const parts = [];
		req.on("data", (c) => parts.push(c));
		req.on("end", () => resolve(Buffer.concat(parts).toString("utf8")));
		req.on("error", reject);
	});
}

function sendJson(res, status, obj) {
	const body = JSON.stringify(obj);
	res.writeHead(status, {
		"Content-Type": "application/json",
		"Content-Length": Buffer.byteLength(body),
	});
	res.end(body);
}

function sendError(res, status, message) {
	sendJson(res, status, { error: { message, type: "invalid_request_error", code: status } });
}

function chatPrompt(messages) {
	let text = "";
	for (const m of messages) {
		let c = m.content ?? "";
		if (Array.isArray(c))
			c = c.filter((p) => p && p.type === "text").map((p) => p.text).join("");
		text += `${m.role}: ${c}\n`;
	}
	return text + "assistant:";
}

// Parse and validate a request body for one of the three APIs.
function parseRequest(api, raw) {
	let b;
	try {
		b = JSON.parse(raw);
	} catch {
		return { error: "request body is not valid JSON" };
	}
	if (b === null || typeof b !== "object")
		return { error: "request body must be a JSON object" };
	let prompt;
	if (api === "chat") {
		if (!Array.isArray(b.messages) || !b.messages.length)
			return { error: "messages must be a non-empty array" };
		prompt = chatPrompt(b.messages);
	} else {
		prompt = Array.isArray(b.prompt) ? b.prompt.join("") : b.prompt;
		if (typeof prompt !== "string")
			return { error: "prompt must be a string" };
	}
	const maxTokens = api === "llamacpp" ? (b.n_predict ?? 128)
		: (b.max_completion_tokens ?? b.max_tokens ?? 128);
	if (!Number.isInteger(maxTokens) || maxTokens < 1)
		return { error: "max_tokens / n_predict must be a positive integer" };
	const temperature = b.temperature ?? 0.8;
	if (typeof temperature !== "number" || temperature < 0)
		return { error: "temperature must be a number >= 0" };
	const tokens = [model.tokens.bos, ...model.tokenize(prompt)];
	if (tokens.length + maxTokens > seqCtx)
		return { error: `prompt (${tokens.length}) + max_tokens (${maxTokens}) exceeds the context (${seqCtx})` };
	return {
		stream: b.stream === true,
		includeUsage: b.stream_options?.include_usage === true,
		maxTokens,
		tokens,
		sampling: {
			temperature,
			topK: b.top_k ?? 40,
			topP: b.top_p ?? 0.95,
			seed: Number.isInteger(b.seed) ? b.seed : 1234 + nextId,
		},
		model: typeof b.model === "string" ? b.model : "demo",
	};
}

async function handleGenerate(api, req, res) {
	const p = parseRequest(api, await readBody(req));
	if (p.error)
		return sendError(res, 400, p.error);
	const id = nextId++;
	const created = Math.floor(Date.now() / 1000);
	const idStr = (api === "chat" ? "chatcmpl-" : "cmpl-") + id;
	const object = api === "chat" ? "chat.completion.chunk" : "text_completion";
	let closed = false;
	res.on("close", () => { closed = true; });

	const seq = await acquireSeq();
	try {
		if (closed)
			return;
		const chunk = (choice) => ({ id: idStr, object, created, model: p.model, choices: [choice] });
		const sse = (obj) => res.write(`data: ${JSON.stringify(obj)}\n\n`);
		let text = "";
		let n = 0;
		let onToken;
		if (p.stream) {
			res.writeHead(200, {
				"Content-Type": "text/event-stream",
				"Cache-Control": "no-cache",
				Connection: "keep-alive",
			});
			if (api === "chat")
				sse(chunk({ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }));
			onToken = (t, tok) => {
				n++;
				if (api === "chat")
					sse(chunk({ index: 0, delta: { content: t }, finish_reason: null }));
				else if (api === "completion")
					sse(chunk({ index: 0, text: t, logprobs: null, finish_reason: null }));
				else
					sse({ index: 0, content: t, tokens: [tok], stop: false, id_slot: 0 });
			};
		} else {
			onToken = (t) => { n++; text += t; };
		}
		await generate(seq, p.tokens, p.maxTokens, p.sampling, onToken, () => closed);
		if (closed)
			return;
		const usage = {
			prompt_tokens: p.tokens.length,
			completion_tokens: n,
			total_tokens: p.tokens.length + n,
		};
		if (api === "llamacpp") {
			const fin = {
				index: 0, content: p.stream ? "" : text, stop: true, id_slot: 0,
				model: p.model, tokens_predicted: n, tokens_evaluated: p.tokens.length,
				stop_type: "limit", truncated: false,
			};
			if (p.stream) {
				sse(fin);
				res.end();
			} else {
				sendJson(res, 200, fin);
			}
			return;
		}
		if (p.stream) {
			if (api === "chat")
				sse(chunk({ index: 0, delta: {}, finish_reason: "length" }));
			else
				sse(chunk({ index: 0, text: "", logprobs: null, finish_reason: "length" }));
			if (p.includeUsage)
				sse({ id: idStr, object, created, model: p.model, choices: [], usage });
			res.end("data: [DONE]\n\n");
			return;
		}
		const choice = api === "chat"
			? { index: 0, message: { role: "assistant", content: text }, finish_reason: "length" }
			: { index: 0, text, logprobs: null, finish_reason: "length" };
		sendJson(res, 200, {
			id: idStr, object: api === "chat" ? "chat.completion" : "text_completion",
			created, model: p.model, choices: [choice], usage,
		});
	} finally {
		await releaseSeq(seq);
	}
}

const routes = {
	"POST /v1/chat/completions": (q, s) => handleGenerate("chat", q, s),
	"POST /v1/completions": (q, s) => handleGenerate("completion", q, s),
	"POST /completion": (q, s) => handleGenerate("llamacpp", q, s),
	"POST /completions": (q, s) => handleGenerate("llamacpp", q, s),
	"GET /health": (q, s) => sendJson(s, 200, { status: "ok" }),
	"GET /v1/models": (q, s) => sendJson(s, 200, {
		object: "list", data: [{ id: "demo", object: "model", owned_by: "ttftrace" }],
	}),
};

const server = http.createServer({ keepAliveTimeout: 30000, noDelay: true }, (req, res) => {
	const route = routes[`${req.method} ${req.url.split("?")[0]}`];
	if (!route)
		return sendError(res, 404, `no route for ${req.method} ${req.url}`);
	Promise.resolve().then(() => route(req, res)).catch((e) => {
		process.stderr.write(`Error: request failed: ${e.stack ?? e}\n`);
		if (!res.headersSent)
			sendError(res, 500, "internal error");
		else
			res.destroy();
	});
});
// Each token is its own write; Nagle would hold a small write while an earlier
// one is unacknowledged and merge token events.
server.on("connection", (sock) => sock.setNoDelay(true));
server.on("error", (e) => fail(`cannot listen on ${opts.host}:${port}: ${e.message}`,
	"pick another --port, or --port 0 for a free one"));
server.listen(port, opts.host, () => {
	const a = server.address();
	process.stderr.write(`model ${path.basename(opts.model)} loaded in ${loadMs.toFixed(0)} ms; ` +
		`${parallel} sequence(s) x ${seqCtx} tokens, ${threads} thread(s)\n`);
	process.stdout.write(`listening on ${a.address}:${a.port}\n`);
});
