#!/usr/bin/env python3
"""A scripted model server for headless runs of the real agent CLIs (standard library only).

It speaks just enough of three model APIs for an agent's tool loop:
  * Anthropic Messages (POST .../v1/messages, streaming SSE or plain JSON): Claude Code;
  * OpenAI Responses (POST .../responses, SSE): Codex;
  * Gemini generateContent / streamGenerateContent (POST .../models/M:...): Gemini CLI.

A script (JSON) lists the tool calls to make, one per turn:
  {"steps": [{"bash": "ls"}, {"read": "/abs/file"}, {"write": {"path": "/abs/file", "content": "x"}}]}
(`read` is the agent's file-read tool, which Claude Code wants before it overwrites a file; Codex
has none and gets `cat`.) Codex only: {"bash": "bash", "tty": true} starts an interactive session
and {"stdin": "text"} types into the newest one (`write_stdin`).
The turn is the number of tool results the request already carries, so a retried request gets the
same answer; after the last step the model answers with the text "done". Requests that offer no
tools (titles, classifiers, next-speaker checks) get a short text or a JSON object that fits the
requested schema. Every request is appended to a JSONL log (method, path, body), so a suite can
prove what the agent sent back to the model.

  modelserver.py serve --script S.json --log L.jsonl --port-file P [--port N]
  modelserver.py results --log L.jsonl     # the tool results of the fullest tool-loop request
  modelserver.py requests --log L.jsonl    # one line per request: path and what it was answered
  modelserver.py call-id --log L.jsonl N   # the id of step N's tool call (Gemini's carry none)
It listens on 127.0.0.1 only.
"""
import argparse
import http.server
import json
import os
import re
import shlex
import sys
import threading

# ---------------------------------------------------------------------------------------------
# Which API a request speaks, its offered tools and how many tool results it carries.


def api_of(path):
    """The API a request path belongs to."""
    if path.split("?")[0].endswith("/messages"):
        return "anthropic"
    if path.split("?")[0].endswith("/responses"):
        return "responses"
    if ":generateContent" in path or ":streamGenerateContent" in path:
        return "gemini"
    if path.split("?")[0].endswith(":countTokens"):
        return "gemini-count"
    if path.split("?")[0].endswith("/count_tokens"):
        return "anthropic-count"
    return "other"


def offered_tools(api, body):
    """Names of the tools the request offers the model."""
    if api == "anthropic":
        return [tool.get("name", "") for tool in body.get("tools") or []]
    if api == "responses":
        return [tool.get("name") or tool.get("type", "") for tool in body.get("tools") or []]
    if api == "gemini":
        names = []
        for tool in body.get("tools") or []:
            names += [decl.get("name", "") for decl in tool.get("functionDeclarations") or []]
        return names
    return []


def tool_results(api, body):
    """The tool results the request carries, in order, each as text."""
    results = []
    if api == "anthropic":
        for message in body.get("messages") or []:
            content = message.get("content")
            if not isinstance(content, list):
                continue
            for block in content:
                if block.get("type") == "tool_result":
                    results.append(anthropic_result_text(block))
    elif api == "responses":
        for item in body.get("input") or []:
            if item.get("type") in ("function_call_output", "custom_tool_call_output"):
                results.append(responses_output_text(item.get("output")))
    elif api == "gemini":
        for content in body.get("contents") or []:
            for part in content.get("parts") or []:
                if "functionResponse" in part:
                    results.append(json.dumps(part["functionResponse"].get("response")))
    return results


def anthropic_result_text(block):
    content = block.get("content")
    if isinstance(content, list):
        content = "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    prefix = "[is_error] " if block.get("is_error") else ""
    return prefix + str(content or "")


def responses_output_text(output):
    if isinstance(output, list):
        return "\n".join(part.get("text", "") for part in output if isinstance(part, dict))
    if isinstance(output, dict):
        return json.dumps(output)
    return str(output or "")


# ---------------------------------------------------------------------------------------------
# The step for this turn, as each API's tool call.


def step_for(script, results):
    steps = script.get("steps", [])
    return steps[len(results)] if len(results) < len(steps) else None


def pick(tools, *names):
    """The first of names the request offers (the first name when it offers none of them)."""
    return next((name for name in names if name in tools), names[0])


def patch_adding(path, content):
    lines = "".join("+" + line + "\n" for line in content.split("\n"))
    return f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n"


# Claude Code's and Gemini CLI's tools for a shell command, a file read and a file write.
NAMED_TOOLS = {"anthropic": ("Bash", "Read", "Write"),
               "gemini": ("run_shell_command", "read_file", "write_file")}


def named_call(api, step):
    """(tool name, arguments) of a step for an agent whose tools take named paths."""
    shell, read, write = NAMED_TOOLS[api]
    if "bash" in step:
        return shell, {"command": step["bash"], "description": "scripted step"}
    if "read" in step:
        return read, {"file_path": step["read"]}
    return write, {"file_path": step["write"]["path"], "content": step["write"]["content"]}


def last_session_id(results):
    """The newest interactive session a Codex tool result reports (0 when none)."""
    for text in reversed(results):
        found = re.search(r"session ID (\d+)", text)
        if found:
            return int(found.group(1))
    return 0


def responses_call(step, tools, results):
    """(item type, name, arguments) of a Codex tool call."""
    if "stdin" in step:
        args = {"session_id": last_session_id(results), "chars": step["stdin"],
                "yield_time_ms": 2000}
        return "function_call", "write_stdin", json.dumps(args)
    if "read" in step:
        step = {"bash": "cat " + shlex.quote(step["read"])}
    if "bash" in step:
        name = pick(tools, "exec_command", "shell_command", "shell", "local_shell")
        if name == "exec_command":
            args = {"cmd": step["bash"], "yield_time_ms": 2000 if step.get("tty") else 30000}
            if step.get("tty"):
                args["tty"] = True
        elif name == "shell_command":
            args = {"command": step["bash"], "timeout_ms": 120000}
        else:
            args = {"command": ["bash", "-lc", step["bash"]], "timeout_ms": 120000}
        return "function_call", name, json.dumps(args)
    write = step["write"]
    patch = patch_adding(write["path"], write["content"])
    return "custom_tool_call", "apply_patch", patch


# ---------------------------------------------------------------------------------------------
# Answers without tools: a text, or an object that fits the schema asked for.


def fill_schema(schema):
    """A small value that validates against a JSON schema (enums: their first value)."""
    if not isinstance(schema, dict):
        return ""
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        properties = schema.get("properties") or {}
        return {key: fill_schema(value) for key, value in properties.items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    return "done"


def gemini_side_text(body):
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    if schema or config.get("responseMimeType") == "application/json":
        return json.dumps(fill_schema(schema or {"type": "object"}))
    return "done"


# ---------------------------------------------------------------------------------------------
# The HTTP server.


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "sandshim-modelserver"

    def log_message(self, *args):  # the JSONL log is the record
        pass

    def do_GET(self):
        self.record("GET", None, "empty")
        self.send_json({})

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        api = api_of(self.path)
        self.step_call = None  # (step number, tool-call id) when the answer is a tool call
        answer = getattr(self, "answer_" + api.replace("-", "_"))(body)
        self.record("POST", body, answer)

    def record(self, method, body, answer):
        line = {"method": method, "path": self.path, "api": api_of(self.path), "answer": answer,
                "step_call": getattr(self, "step_call", None), "body": body}
        with self.server.log_lock, open(self.server.log_path, "a") as log:
            log.write(json.dumps(line) + "\n")

    def send_json(self, value, status=200):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_sse(self, events):
        """events: (event name or None, payload) pairs."""
        chunks = []
        for name, payload in events:
            head = f"event: {name}\n" if name else ""
            chunks.append(f"{head}data: {json.dumps(payload)}\n\n")
        data = "".join(chunks).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def next_id(self, prefix):
        with self.server.log_lock:
            self.server.counter += 1
            return f"{prefix}{self.server.counter:04d}"

    def turn(self, api, body):
        """The request's tools and tool results, and the step to answer with (None: text)."""
        tools, results = offered_tools(api, body), tool_results(api, body)
        return tools, results, step_for(self.server.script, results) if tools else None

    # -- Anthropic Messages --------------------------------------------------------------------
    def answer_anthropic(self, body):
        tools, results, step = self.turn("anthropic", body)
        if step:
            name, args = named_call("anthropic", step)
            block = {"type": "tool_use", "id": self.next_id("toolu_scripted_"), "name": name,
                     "input": args}
            self.step_call = (len(results) + 1, block["id"])
            stop, label = "tool_use", f"tool {name}"
        else:
            block = {"type": "text", "text": "done"}
            stop, label = "end_turn", "text"
        message = {"id": self.next_id("msg_"), "type": "message", "role": "assistant",
                   "model": body.get("model", "scripted"), "content": [block],
                   "stop_reason": stop, "stop_sequence": None,
                   "usage": {"input_tokens": 1, "output_tokens": 1}}
        if not body.get("stream"):
            self.send_json(message)
            return label
        start = dict(message, content=[], stop_reason=None)
        if block["type"] == "tool_use":
            opening = dict(block, input={})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            opening = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        self.send_sse([
            ("message_start", {"type": "message_start", "message": start}),
            ("content_block_start",
             {"type": "content_block_start", "index": 0, "content_block": opening}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta",
                               "delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": 1}}),
            ("message_stop", {"type": "message_stop"}),
        ])
        return label

    def answer_anthropic_count(self, body):
        self.send_json({"input_tokens": 1})
        return "count"

    # -- OpenAI Responses ----------------------------------------------------------------------
    def answer_responses(self, body):
        tools, results, step = self.turn("responses", body)
        response_id = self.next_id("resp_")
        if step:
            kind, name, args = responses_call(step, tools, results)
            item = {"type": kind, "id": self.next_id("fc_"), "call_id": self.next_id("call_"),
                    "name": name, "status": "completed"}
            item["arguments" if kind == "function_call" else "input"] = args
            self.step_call = (len(results) + 1, item["call_id"])
            label = f"tool {name}"
        else:
            item = {"type": "message", "role": "assistant", "id": self.next_id("msg_"),
                    "status": "completed",
                    "content": [{"type": "output_text", "text": "done", "annotations": []}]}
            label = "text"
        usage = {"input_tokens": 1, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": 1, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": 2}
        self.send_sse([
            ("response.created", {"type": "response.created",
                                  "response": {"id": response_id, "status": "in_progress"}}),
            ("response.output_item.added", {"type": "response.output_item.added",
                                            "output_index": 0, "item": item}),
            ("response.output_item.done", {"type": "response.output_item.done",
                                           "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed",
                                    "response": {"id": response_id, "status": "completed",
                                                 "output": [item], "usage": usage}}),
        ])
        return label

    # -- Gemini --------------------------------------------------------------------------------
    def answer_gemini(self, body):
        tools, results, step = self.turn("gemini", body)
        if step:
            name, args = named_call("gemini", step)
            part, label = {"functionCall": {"name": name, "args": args}}, f"tool {name}"
        else:
            part, label = {"text": gemini_side_text(body) if not tools else "done"}, "text"
        answer = {"candidates": [{"content": {"role": "model", "parts": [part]},
                                  "finishReason": "STOP", "index": 0}],
                  "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1,
                                    "totalTokenCount": 2},
                  "modelVersion": "scripted"}
        if ":streamGenerateContent" in self.path:
            self.send_sse([(None, answer)])
        else:
            self.send_json(answer)
        return label

    def answer_gemini_count(self, body):
        self.send_json({"totalTokens": 1})
        return "count"

    def answer_other(self, body):
        self.send_json({})
        return "empty"


def serve(args):
    with open(args.script) as f:
        script = json.load(f)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.script, server.log_path = script, args.log
    server.log_lock, server.counter = threading.Lock(), 0
    open(args.log, "a").close()
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


# ---------------------------------------------------------------------------------------------
# Reading the log.


def read_log(path):
    if not os.path.exists(path):  # the agent never reached the server
        return []
    with open(path) as log:
        return [json.loads(line) for line in log if line.strip()]


def print_results(args):
    """The tool results of the tool-loop request that carries the most of them, as JSON."""
    best = []
    for entry in read_log(args.log):
        body = entry.get("body") or {}
        if offered_tools(entry["api"], body):
            results = tool_results(entry["api"], body)
            if len(results) >= len(best):
                best = results
    json.dump(best, sys.stdout, indent=1)
    print()


def print_requests(args):
    for entry in read_log(args.log):
        tools = offered_tools(entry["api"], entry.get("body") or {})
        print(f"{entry['method']} {entry['path']} tools={len(tools)} -> {entry['answer']}")


def print_call_id(args):
    """The tool-call id of the newest answer with step N (a retry gets a new id)."""
    found = ""
    for entry in read_log(args.log):
        if entry.get("step_call") and entry["step_call"][0] == args.step:
            found = entry["step_call"][1]
    print(found)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    serve_verb = verbs.add_parser("serve")
    serve_verb.add_argument("--script", required=True)
    serve_verb.add_argument("--log", required=True)
    serve_verb.add_argument("--port-file", required=True)
    serve_verb.add_argument("--port", type=int, default=0, help="default: any free port")
    for name in ("results", "requests"):
        verbs.add_parser(name).add_argument("--log", required=True)
    call_id = verbs.add_parser("call-id")
    call_id.add_argument("--log", required=True)
    call_id.add_argument("step", type=int)
    args = parser.parse_args()
    {"serve": serve, "results": print_results, "requests": print_requests,
     "call-id": print_call_id}[args.verb](args)


if __name__ == "__main__":
    main()
