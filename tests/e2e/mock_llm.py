#!/usr/bin/env python3
"""Loopback mock of the model APIs the e2e tests point real agent hosts at.

    python3 mock_llm.py {anthropic|openai|gemini|chat} PORT SCENARIO_JSON LOG_JSONL

anthropic = Messages, openai = Responses, gemini = generateContent, chat = OpenAI
Chat Completions (OpenCode, Copilot CLI, Qwen Code, Kimi Code).

Listens on 127.0.0.1:PORT (0 = a free port) and prints the port as the first
stdout line. When stdin is a pipe it exits as soon as that pipe closes, so it never
outlives the test that started it. Python 3.11 standard library only.

Scenario file: {"steps": [STEP, ...], "subagent": [STEP, ...]}  ("main" is accepted
for "steps", as in shared/captures). A STEP is a list of items, answered as one
assistant turn:
    {"text": "..."}                           assistant text
    {"shell": "echo hi"}                      the host's own shell tool, whatever it is called
    {"tool": "Name", "input": {...}}          any tool call, raw (Gemini: "call"/"args" too)
Step index = the number of assistant turns already in the request, so a run is a
pure function of what the host sends. Past the last step the mock answers with
the text "mock: scenario exhausted". A Claude Code request whose user text
contains SUBAGENT_TASK follows the "subagent" list instead.

Log file: one JSON object per request, written before the reply is sent:
    {"seq", "method", "path", "query", "kind", "step", "headers", "body", "reply"}
kind is "main" for an agent-loop model call (the ones the scenario answers), or
"side" / "count_tokens" / "schema" / "unknown" for anything else the host sends.
"""

import gzip
import json
import os
import stat
import sys
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

EXHAUSTED = "mock: scenario exhausted"

# The name and argument shape of each host's shell tool.
SHELL_TOOL = {
    "anthropic": lambda cmd: ("Bash", {"command": cmd, "description": "run a command"}),
    "openai": lambda cmd: ("exec_command", {"cmd": cmd}),
    "gemini": lambda cmd: ("run_shell_command", {"command": cmd, "description": "run a command"}),
    # Chat Completions hosts name their shell tool differently: the first
    # offered tool of these names is used (see chat_shell_call).
    "chat": lambda cmd: ("$shell", {"command": cmd}),
}

# The shell tool of each Chat Completions host: OpenCode and Copilot `bash`,
# Qwen Code `run_shell_command`, Kimi Code `Bash`.
CHAT_SHELL_NAMES = ["bash", "run_shell_command", "Bash", "execute"]


class Mock:
    def __init__(self, api, scenario_path, log_path):
        self.api = api
        with open(scenario_path, encoding="utf-8") as f:
            scenario = json.load(f)
        if isinstance(scenario, list):
            scenario = {"steps": scenario}
        self.steps = scenario.get("steps", scenario.get("main", []))
        self.subagent = scenario.get("subagent", [])
        self.log = open(log_path, "a", encoding="utf-8")
        self.lock = threading.Lock()
        self.seq = 0

    def next_seq(self):
        with self.lock:
            self.seq += 1
            return self.seq

    def record(self, entry):
        line = json.dumps(entry, ensure_ascii=False)
        with self.lock:
            self.log.write(line + "\n")
            self.log.flush()

    def script_step(self, script, index):
        """The items of step `index`, normalised to ("text", str) / ("tool", name, input)."""
        if index >= len(script):
            return [("text", EXHAUSTED)]
        out = []
        for item in script[index]:
            if "text" in item:
                out.append(("text", item["text"]))
            elif "shell" in item:
                name, args = SHELL_TOOL[self.api](item["shell"])
                out.append(("tool", name, args))
            elif "tool" in item or "call" in item:
                out.append(("tool", item.get("tool", item.get("call")), item.get("input", item.get("args", {}))))
            else:
                raise ValueError(f"scenario item not understood: {item!r}")
        return out


# --------------------------------------------------------------------------- helpers


def sse(events):
    """Server-sent events: [(event_name or None, data_obj)] -> bytes."""
    chunks = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        chunks.append(f"{head}data: {json.dumps(data)}\n\n")
    return "".join(chunks).encode()


def text_of(content):
    """All text inside a message content (str, list of blocks, nested tool results)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text_of(c) for c in content)
    if isinstance(content, dict):
        parts = []
        for key in ("text", "content", "input_text", "output"):
            if key in content:
                parts.append(text_of(content[key]))
        return "\n".join(parts)
    return ""


def schema_instance(schema, name=""):
    """A minimal value valid for a JSON schema (Gemini's structured side calls)."""
    if not isinstance(schema, dict):
        return None
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    typ = schema.get("type")
    if isinstance(typ, list):
        typ = next((t for t in typ if t != "null"), typ[0] if typ else None)
    typ = (typ or "").lower()
    if typ == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {k: schema_instance(v, k) for k, v in props.items()}
    if typ == "array":
        return []
    if typ in ("integer", "number"):
        return schema.get("minimum", 1)
    if typ == "boolean":
        return False
    if name == "next_speaker":
        return "user"
    return "mock"


# --------------------------------------------------------------------------- Anthropic


def anthropic_kind(path, body):
    if path.endswith("/count_tokens"):
        return "count_tokens"
    if path.endswith("/v1/messages") and isinstance(body, dict) and body.get("tools"):
        return "main"
    return "side"


def anthropic_reply(mock, seq, path, body):
    kind = anthropic_kind(path, body)
    if kind == "count_tokens":
        return kind, None, 200, "application/json", json.dumps({"input_tokens": 10}).encode()
    if not path.endswith("/v1/messages"):
        return "unknown", None, 200, "application/json", b"{}"
    messages = body.get("messages", [])
    step = sum(1 for m in messages if m.get("role") == "assistant")
    user_text = "\n".join(text_of(m.get("content")) for m in messages if m.get("role") == "user")
    script = mock.subagent if (mock.subagent and "SUBAGENT_TASK" in user_text) else mock.steps
    if kind == "main":
        items = mock.script_step(script, step)
    else:
        items = [("text", "mock side answer")]
    blocks = []
    for i, it in enumerate(items):
        if it[0] == "text":
            blocks.append({"type": "text", "text": it[1]})
        else:
            blocks.append({"type": "tool_use", "id": f"toolu_{seq:04d}_{i}", "name": it[1], "input": it[2]})
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    model = body.get("model", "claude-mock")
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    msg_id = f"msg_mock_{seq:04d}"
    if not body.get("stream"):
        msg = {"id": msg_id, "type": "message", "role": "assistant", "model": model, "content": blocks,
               "stop_reason": stop, "stop_sequence": None, "usage": usage}
        return kind, step, 200, "application/json", json.dumps(msg).encode(), blocks
    events = [("message_start", {"type": "message_start", "message": {
        "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": dict(usage, output_tokens=1)}})]
    for i, b in enumerate(blocks):
        if b["type"] == "text":
            events.append(("content_block_start", {"type": "content_block_start", "index": i,
                                                   "content_block": {"type": "text", "text": ""}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                                   "delta": {"type": "text_delta", "text": b["text"]}}))
        else:
            events.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": {
                "type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(b["input"])}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                     "usage": {"output_tokens": 5}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return kind, step, 200, "text/event-stream", sse(events), blocks


# --------------------------------------------------------------------------- OpenAI Responses


MODEL_OUTPUT_TYPES = {"function_call", "custom_tool_call", "local_shell_call", "reasoning", "web_search_call"}


def is_model_output(item):
    t = item.get("type")
    return t in MODEL_OUTPUT_TYPES or (t == "message" and item.get("role") == "assistant")


def openai_reply(mock, seq, path, body):
    if not path.endswith("/responses"):
        if path.endswith("/models"):
            return "side", None, 200, "application/json", json.dumps({"object": "list", "data": [], "models": []}).encode()
        return "unknown", None, 404, "application/json", json.dumps({"error": {"message": "not mocked"}}).encode()
    items_in = body.get("input", [])
    if isinstance(items_in, str):
        items_in = [{"type": "message", "role": "user", "content": items_in}]
    # One assistant turn = one run of consecutive model-output items.
    step, prev = 0, False
    for it in items_in:
        out = is_model_output(it)
        if out and not prev:
            step += 1
        prev = out
    items = mock.script_step(mock.steps, step)
    output = []
    for i, it in enumerate(items):
        if it[0] == "text":
            output.append({"type": "message", "role": "assistant", "id": f"msg_{seq}_{i}", "status": "completed",
                           "content": [{"type": "output_text", "text": it[1], "annotations": []}]})
        else:
            output.append({"type": "function_call", "id": f"fc_{seq}_{i}", "call_id": f"call_{seq}_{i}",
                           "name": it[1], "arguments": json.dumps(it[2]), "status": "completed"})
    resp_id = f"resp_mock_{seq:04d}"
    base = {"id": resp_id, "object": "response", "created_at": 0, "model": body.get("model", "gpt-mock")}
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
    done = dict(base, status="completed", output=output, usage=usage)
    if not body.get("stream"):
        return "main", step, 200, "application/json", json.dumps(done).encode(), output
    events = [("response.created", {"type": "response.created", "response": dict(base, status="in_progress", output=[])})]
    for i, item in enumerate(output):
        events.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": i,
                                                      "item": item}))
        if item["type"] == "message":
            events.append(("response.output_text.delta", {"type": "response.output_text.delta", "output_index": i,
                                                          "item_id": item["id"], "content_index": 0,
                                                          "delta": item["content"][0]["text"]}))
        events.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": i,
                                                     "item": item}))
    events.append(("response.completed", {"type": "response.completed", "response": done}))
    return "main", step, 200, "text/event-stream", sse(events), output


# --------------------------------------------------------------------------- Chat Completions


def chat_tools(body):
    """Offered tool name -> its JSON-schema parameters."""
    out = {}
    for t in body.get("tools") or []:
        f = t.get("function", t)
        if isinstance(f, dict) and f.get("name"):
            out[f["name"]] = f.get("parameters") or {}
    return out


def chat_shell_call(tools, args):
    """The `$shell` placeholder as a call of the offered shell tool, its other
    required parameters filled with neutral values."""
    name = next((n for n in CHAT_SHELL_NAMES if n in tools), None)
    if name is None:
        return None
    schema = tools[name] or {}
    props = schema.get("properties") or {}
    filled = dict(args)
    for key in schema.get("required") or []:
        if key in filled:
            continue
        typ = (props.get(key) or {}).get("type")
        if key == "description":
            filled[key] = "run a command"
        elif typ == "boolean":
            filled[key] = False
        elif typ in ("integer", "number"):
            filled[key] = 60
        else:
            filled[key] = ""
    return name, filled


def chat_reply(mock, seq, path, body):
    if not path.endswith("/chat/completions"):
        if path.rstrip("/").endswith("/models"):
            models = [{"id": m, "object": "model", "created": 0, "owned_by": "mock"}
                      for m in ("mock-model", "gpt-4.1", "qwen3-coder-plus")]
            return "side", None, 200, "application/json", json.dumps({"object": "list", "data": models}).encode()
        return "unknown", None, 404, "application/json", json.dumps({"error": {"message": "not mocked"}}).encode()
    messages = body.get("messages") or []
    tools = chat_tools(body)
    if not tools:
        # Titles, summaries and other side calls offer no tools.
        kind, step, items = "side", None, [("text", "mock side answer")]
    else:
        kind = "main"
        step = sum(1 for m in messages if m.get("role") == "assistant")
        first_user = next((text_of(m.get("content")) for m in messages if m.get("role") == "user"), "")
        script = mock.subagent if (mock.subagent and "SUBAGENT_TASK" in first_user) else mock.steps
        items = mock.script_step(script, step)
    text, calls = "", []
    for it in items:
        if it[0] == "text":
            text += it[1]
        elif it[1] == "$shell":
            call = chat_shell_call(tools, it[2])
            if call is None:
                text += "(mock: no shell tool offered)"
            else:
                calls.append(call)
        else:
            calls.append((it[1], it[2]))
    tcs = [{"index": k, "id": f"call_{seq}_{k}", "type": "function",
            "function": {"name": n, "arguments": json.dumps(a)}} for k, (n, a) in enumerate(calls)]
    reply = {"text": text, "tool_calls": [[n, a] for n, a in calls]}
    finish = "tool_calls" if tcs else "stop"
    model = body.get("model", "mock-model")
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    cid = f"chatcmpl-mock-{seq:04d}"
    if not body.get("stream"):
        msg = {"role": "assistant", "content": text or None}
        if tcs:
            msg["tool_calls"] = [{k: v for k, v in t.items() if k != "index"} for t in tcs]
        done = {"id": cid, "object": "chat.completion", "created": 0, "model": model,
                "choices": [{"index": 0, "message": msg, "finish_reason": finish}], "usage": usage}
        return kind, step, 200, "application/json", json.dumps(done).encode(), reply

    def chunk(delta, fin=None):
        return (None, {"id": cid, "object": "chat.completion.chunk", "created": 0, "model": model,
                       "choices": [{"index": 0, "delta": delta, "finish_reason": fin}]})
    events = [chunk({"role": "assistant", "content": ""})]
    if text:
        events.append(chunk({"content": text}))
    for t in tcs:
        events.append(chunk({"tool_calls": [t]}))
    events.append(chunk({}, finish))
    if (body.get("stream_options") or {}).get("include_usage"):
        events.append((None, {"id": cid, "object": "chat.completion.chunk", "created": 0, "model": model,
                              "choices": [], "usage": usage}))
    payload = sse(events) + b"data: [DONE]\n\n"
    return kind, step, 200, "text/event-stream", payload, reply


# --------------------------------------------------------------------------- Gemini


def gemini_reply(mock, seq, path, query, body):
    action = path.rsplit(":", 1)[-1] if ":" in path else ""
    if action == "countTokens":
        return "count_tokens", None, 200, "application/json", json.dumps({"totalTokens": 10}).encode()
    if action not in ("generateContent", "streamGenerateContent"):
        return "unknown", None, 404, "application/json", json.dumps({"error": {"code": 404, "message": "not mocked"}}).encode()
    contents = body.get("contents", [])
    gen = body.get("generationConfig") or {}
    schema = gen.get("responseJsonSchema") or gen.get("responseSchema")
    model = path.split("/models/", 1)[-1].split(":", 1)[0]
    if schema is not None:
        # A structured side call (routing classifier, next-speaker check...), not the agent loop.
        kind, step = "schema", None
        parts = [{"text": json.dumps(schema_instance(schema))}]
        answer = parts
    else:
        kind = "main"
        step = sum(1 for c in contents if c.get("role") == "model")
        items = mock.script_step(mock.steps, step)
        parts = []
        for it in items:
            if it[0] == "text":
                parts.append({"text": it[1]})
            else:
                parts.append({"functionCall": {"name": it[1], "args": it[2]}})
        answer = parts
    chunk = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
             "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
             "modelVersion": model, "responseId": f"mock-{seq}"}
    if action == "streamGenerateContent":
        if query.get("alt", [""])[0] == "sse":
            return kind, step, 200, "text/event-stream", sse([(None, chunk)]), answer
        return kind, step, 200, "application/json", json.dumps([chunk]).encode(), answer
    return kind, step, 200, "application/json", json.dumps(chunk).encode(), answer


# --------------------------------------------------------------------------- server


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    mock: Mock = None  # set in main

    def log_message(self, *args):
        pass  # the JSONL log is the record

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = self.read_chunked()
        enc = self.headers.get("Content-Encoding", "").lower()
        if enc == "gzip":
            raw = gzip.decompress(raw)
        elif enc == "deflate":
            raw = zlib.decompress(raw)
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return {"_raw": raw.decode("utf-8", "replace")[:20000], "_content_encoding": enc}

    def read_chunked(self):
        data = b""
        while True:
            size = int(self.rfile.readline().strip().split(b";")[0] or b"0", 16)
            if size == 0:
                self.rfile.readline()
                return data
            data += self.rfile.read(size)
            self.rfile.readline()

    def handle_any(self):
        mock = self.mock
        seq = mock.next_seq()
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        body = self.read_body() if self.command in ("POST", "PUT", "PATCH") else None
        try:
            if mock.api == "anthropic":
                res = anthropic_reply(mock, seq, url.path, body or {})
            elif mock.api == "openai":
                res = openai_reply(mock, seq, url.path, body or {})
            elif mock.api == "chat":
                res = chat_reply(mock, seq, url.path, body or {})
            else:
                res = gemini_reply(mock, seq, url.path, query, body or {})
        except Exception as e:  # a mock bug must show up in the log, not as a hang
            res = ("error", None, 500, "application/json", json.dumps({"error": {"message": f"mock error: {e!r}"}}).encode())
        kind, step, status, ctype, payload = res[:5]
        reply = res[5] if len(res) > 5 else None
        headers = {k.lower(): v for k, v in self.headers.items()
                   if k.lower() not in ("authorization", "x-api-key", "x-goog-api-key")}
        mock.record({"seq": seq, "method": self.command, "path": url.path, "query": url.query, "kind": kind,
                     "step": step, "headers": headers, "body": body, "reply": reply})
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        if ctype == "text/event-stream":
            self.send_header("Cache-Control", "no-cache")
        if mock.api == "anthropic":
            self.send_header("request-id", f"req_mock_{seq:04d}")
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = handle_any


def main(argv):
    if len(argv) != 5 or argv[1] not in SHELL_TOOL:
        sys.stderr.write(__doc__)
        return 2
    api, port, scenario, log = argv[1], int(argv[2]), argv[3], argv[4]
    Handler.mock = Mock(api, scenario, log)
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    sys.stdout.write(f"{server.server_address[1]}\n")
    sys.stdout.flush()

    def watch_stdin():
        # The test holds our stdin open; when it goes away, so do we.
        try:
            while sys.stdin.buffer.read(4096):
                pass
        finally:
            server.shutdown()

    if stat.S_ISFIFO(os.fstat(0).st_mode):
        threading.Thread(target=watch_stdin, daemon=True).start()
    server.serve_forever(poll_interval=0.1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
