"""An OpenAI-compatible chat-completions server on 127.0.0.1 for tests, with optional fault injection.

Answers are derived from the prompt (see `derived_answer`). Faults are deterministic: a request's
fault is a function of (seed, request body, attempt header), so the same call can fail and then
succeed on retry. Every request is logged on arrival with what the server did, so a test can compute
the counters the job must report.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import re
import threading
import time

FAULT_KINDS = ("429", "500", "hang", "garbage")
RETRYABLE_FAULTS = ("429", "500", "hang")
# The steps whose failed calls the offline step answers; the others' (on records) dead-letter the record.
FALLBACK_STEPS = ("names", "exemplars", "centre_names")


def prompt_step(prompt: str) -> str:
    """Which of the job's steps a prompt is from."""
    if "<conversation>" in prompt:
        return "facets"
    if "Write up to" in prompt:
        return "keywords"
    if "<topic>" in prompt:
        return "centre_names" if '{"labels"' in prompt else "exemplars"
    if "<keywords>" in prompt:
        return "names"
    return "other"


def derived_answer(prompt: str, misbehave: bool = False) -> str:
    """A plausible answer for each of the job's prompts."""
    if "<conversation>" in prompt:
        user = re.search(r"User: (.*)", prompt)
        words = (user.group(1) if user else "something").split()[:20]
        return json.dumps({"summary": "The user asks: " + " ".join(words)})
    if "Write up to" in prompt:  # the model's own topic keywords: the summary's longer words
        summary = re.search(r"<summary>\n(.*?)\n</summary>", prompt, re.S).group(1).lower()
        words = [w for w in dict.fromkeys(re.findall(r"[a-z]+", summary)) if len(w) >= 4][:5]
        if misbehave:  # invented words, a duplicate, odd case, too many: the pipeline must cope
            words = ["definitely not in k", *[w.upper() for w in words[:1]], *words, "another invented word"]
        return json.dumps({"keywords": words})
    if "<topic>" in prompt and '{"labels"' in prompt:  # the centre decoder's labels, about the focus or the label
        focus = re.search(r"\n(Focus|Label): (.*)$", prompt, re.S).group(2).strip().split(" \u2014 ")[0]
        count = int(re.search(r"Write (\d+)", prompt).group(1))
        return json.dumps({"labels": [{"name": f"Questions about {focus}" if i == 0 else f"{focus} help {i}",
                                       "description": f"Users ask about {focus}."} for i in range(count)]})
    if "<topic>" in prompt:  # exemplars: requests about the focus keyword, or variations of the request
        focus = re.search(r"\n(Focus|Request): (.*)\nKinds: ", prompt, re.S)
        count = int(re.search(r"Write (\d+)", prompt).group(1))
        subject = focus.group(2).strip().rstrip("?.")
        return json.dumps({"requests": [f"Request {i + 1} of {count} about {subject}?" for i in range(count)]})
    if "<keywords>" in prompt:
        keywords = re.search(r"<keywords>\n(.*?)\n</keywords>", prompt, re.S).group(1).split("\n")
        return json.dumps({"name": f"Questions about {' and '.join(keywords[:2])}",
                           "description": f"Users ask about {', '.join(keywords)}. They want practical help."})
    return "['NA']"


class _Server(http.server.ThreadingHTTPServer):
    request_queue_size = 128  # the default backlog (5) drops connections under a concurrent fan-out


class LoopbackServer:
    """A threaded HTTP server on a free loopback port for the length of a `with` block: subclasses give
    `_handler()` (a BaseHTTPRequestHandler class) and `url_path` (what base_url ends with)."""

    url_path = ""

    def _handler(self):
        raise NotImplementedError

    def __enter__(self):
        self._server = _Server(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}{self.url_path}"


class FakeChatServer(LoopbackServer):
    url_path = "/v1"

    def __init__(self, fault_rate: float = 0.0, seed: int = 0, hang_s: float = 2.0, misbehave: bool = False,
                 latency_s: float = 0.0, answer=None):
        self.answer = answer  # prompt -> answer text, instead of derived_answer (canned answers for a test)
        self.latency_s = latency_s  # added to every answer, like a real model's generation time
        self.fault_rate = fault_rate
        self.seed = seed
        self.hang_s = hang_s
        self.misbehave = misbehave
        self.log: list[dict] = []
        self.requests: list[dict] = []  # parsed bodies and headers, for request-shape assertions
        self._lock = threading.Lock()
        self._server = None

    def fault_for(self, body: bytes, attempt: str) -> str | None:
        digest = hashlib.sha256(f"{self.seed}|{attempt}|".encode() + body).digest()
        if int.from_bytes(digest[:4], "big") / 2**32 >= self.fault_rate:
            return None
        return FAULT_KINDS[digest[4] % len(FAULT_KINDS)]

    def _handler(self):
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def _send(self, status: int, payload: bytes, content_type="application/json"):
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:  # the client gave up (timeout)
                    pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                attempt = self.headers.get("X-Urania-Attempt", "0")
                fault = server.fault_for(body, attempt)
                request = json.loads(body)
                prompt = request["messages"][-1]["content"]
                entry = {"attempt": int(attempt), "fault": fault, "tokens": 0, "step": prompt_step(prompt)}
                with server._lock:
                    server.log.append(entry)
                    server.requests.append({"body": request, "headers": dict(self.headers), "path": self.path})
                if fault == "400":  # not injected by fault_for; tests patch it in
                    return self._send(400, b'{"error": "bad request"}')
                if fault == "429":
                    return self._send(429, b'{"error": "rate limited"}')
                if fault == "500":
                    return self._send(500, b'{"error": "internal"}')
                if fault == "hang":
                    time.sleep(server.hang_s)
                    return self._send(500, b"{}")
                if server.latency_s:
                    time.sleep(server.latency_s)
                content = "Sure! Here is some text without the requested format." if fault == "garbage" \
                    else server.answer(prompt) if server.answer is not None \
                    else derived_answer(prompt, server.misbehave)
                usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": len(content.split())}
                entry["tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
                self._send(200, json.dumps({"id": "x", "object": "chat.completion", "model": request["model"],
                                            "choices": [{"index": 0, "finish_reason": "stop",
                                                         "message": {"role": "assistant", "content": content}}],
                                            "usage": usage}).encode())

        return Handler


    def expected_counts(self, max_retries: int) -> dict:
        """What the job's counters must say, from what this server did (no cache). failures_per_step:
        for facets and keywords, the conversations the job must have dead-lettered."""
        log = list(self.log)
        failed = [e for e in log if e["fault"] == "garbage"
                  or (e["fault"] in RETRYABLE_FAULTS and e["attempt"] == max_retries)]
        return {"requests": len(log), "calls": sum(1 for e in log if e["attempt"] == 0),
                "retries": sum(1 for e in log if e["attempt"] > 0), "failures": len(failed),
                "fallbacks": sum(1 for e in failed if e["step"] in FALLBACK_STEPS),
                "failures_per_step": {step: sum(1 for e in failed if e["step"] == step)
                                      for step in ("facets", "keywords", *FALLBACK_STEPS)},
                "tokens": sum(e["tokens"] for e in log),
                "injected": {kind: sum(1 for e in log if e["fault"] == kind) for kind in FAULT_KINDS}}
