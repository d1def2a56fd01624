"""A small scripted OpenAI-compatible server for integration tests (a real HTTP server on 127.0.0.1).

It grades like a gullible judge: zero-shot, any response that mentions "room" (or holds the
correct answer) gets ``score: 1`` (the paper's *keywords* failure mode). Once the prompt carries
ICL examples it grades strictly (the correct answer must appear). Every request body is appended
to a JSONL log, so tests in other processes can count and inspect what was sent.

Scripted dependence on the ICL examples in the prompt: ``--strict-if-example WORD`` grades strictly only
when some example's response contains WORD (e.g. ``room``: only the *keywords* examples teach it);
``--strict-min-examples N`` grades strictly only with at least N examples (default 1). ``POST /tokenize``
answers ``{"tokens": [...]}`` with one token per whitespace-separated word (llama.cpp's endpoint);
``--ctx N`` answers HTTP 400 to a prompt of more than N such tokens, as llama.cpp does.

Failure injection: ``--fail-first N`` answers HTTP 500 to the first N requests, ``--no-label-first N``
answers text without a label, ``--delay S`` sleeps before answering, ``--slow-first N`` sleeps
``--slow-s S`` more before answering the first N (past a client's timeout), ``--die-after N`` exits
the process after N requests. ``--worse-when MARKER --worse-on REGEX``: when the system prompt
contains MARKER (an edited prompt), items whose user turn matches REGEX (e.g. one problem type's
task wording) get the opposite of the right grade: the judge answers worse on that type.
The grader reads its fields through the rule-based rephrasings of ``grader`` (headers in capitals,
extra blank lines, "Reference answer:", "Is this response"). ``--reject-auth`` answers every request
HTTP 401 with an error body that echoes the request's ``Authorization`` header (as some servers do).
``--examples-hurt``: with any ICL example in the prompt, the grader answers ``score: 1`` to every item
(the examples shift its label prior, as they did the embedded judge's). ``--examples-right REGEX``: with
any ICL example in the prompt, items whose user turn matches REGEX get the right grade and every other
item the wrong one (a memory that helps on a few chosen items and hurts everywhere else). ``--vary-on REGEX``: a sampled request (temperature above 0) with an odd ``seed`` whose user turn
matches REGEX gets the opposite grade and a longer answer: repeated samples of those items disagree.
``--reverse-when MARKER``: when the system prompt contains MARKER (the reversed question, "is the
response wrong?"), the grade is the opposite. ``--item-bias``: the grader's label log-odds are its
grade's sign (+-1) plus a yes-bias that differs by item, ``len(response) % 5 - 0.5`` (from -0.5 to
3.5), the same for both questions: it writes the likelier label, so it says 1 to most items under
either question, and the log-odds of the two questions read back together cancel the bias.
``--invert-if-file PATH``: while PATH exists every grade is the opposite (a provider that silently
changed the model behind the same name).
A system prompt that asks for a confidence gets ``confidence: 8`` after the grade, or, for those
sampled items, a confidence that changes with the seed (2, 9, 4, 10, 1, 7). An entailment prompt
(``Premise:`` / ``Hypothesis:``) is answered ``entailment: yes`` when the two texts are equal, else ``no``;
the ReQuest prompt ("You were given this grading prompt") with a two-step procedure; a meta-prompt
("Rewrite ... <<<TEXT>>>") with TEXT rephrased by seed: seed % 3 == 0 loses ``{response}``, 1 and 2
write "Decide whether" as "Work out whether" / "Establish whether".

Other judge shapes (prompts that list their labels as ``X one of L1, L2, ...``):

- pairwise (``Response 1:`` / ``Response 2:``): zero-shot it always prefers the response shown first
  (position bias); with ICL examples it prefers the longer response (the first on a tie).
- rubric and reference-free (``Response:`` then the label list): ``labels[len(response) % len(labels)]``
  zero-shot; with ICL examples the label an example gave to a response of the same length, if any.

``--lenient-logprobs``: zero-shot rubric and reference-free answers come with every label's logprobs from
a lenient judge: its grade is ``labels[j]``, ``j = len(response) % len(labels)``, yet it writes the next
label, ``labels[(j + 1) % len(labels)]``, with probability 0.6, its grade 0.3 and the other labels 0.1
shared (the label one token with a leading space). Its written labels are all wrong against a reference
of ``labels[j]``, while its log-probabilities say the grade linearly (a multinomial read-out undoes it).

``--pairwise-logprobs``: zero-shot pairwise answers come with logprobs. The judge leans to the
response shown first by 0.1 and to the longer response by 0.3 when the lengths differ by 10
characters or more, else by 0.05: P(first) = 0.5 + 0.1 +- margin; it writes the likelier label
(``preference: X``, the label one token with a leading space) and sends both labels' logprobs. So a
pair whose lengths differ little is answered "first" in both orders (inconsistent), while the mean
of the two orders' probabilities still names the longer response. ``--no-logprobs``: no reply
carries logprobs. ``--lean L``: the grader's label probabilities lean to ``1``: P(1) is 0.7 (its grade is
1) or 0.3, plus L, and 0.5 + L for a content-free response ("N/A", "", "[MASK]"); it writes the likelier
label. With L = 0.25 it answers ``score: 1`` to every item, and contextual calibration (dividing by the
content-free distribution) gives back its grades.

Run: ``python tests/scripted_server.py --port-file F --log L [...]``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def _response(user: str) -> str:
    resp = re.search(r"Response:\n(.*?)\n\n+Is (?:the|this) response", user, re.S | re.I)
    return (resp.group(1) if resp else "").strip().lower()


def correct(user: str) -> int:
    """1 when the response in the user turn holds the correct answer (the strict grade), else 0."""
    gold = re.search(r"(?:Correct|Reference) answer:\n(.*?)\n\n+Response:", user, re.S | re.I)
    gold_s = (gold.group(1) if gold else "").replace("Answer:", "").strip().lower()
    resp_s = _response(user)
    return int(bool(gold_s) and gold_s.replace(" ", "") in resp_s.replace(" ", ""))


def grade(messages: list[dict], opts: argparse.Namespace) -> int:
    """The grader's 0/1 grade under the server's options ``opts`` (``--worse-*``, ``--strict-*``)."""
    user = messages[-1]["content"]
    resp_s = _response(user)
    has_answer = bool(correct(user))
    n_examples = sum(m["role"] == "assistant" for m in messages)
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    if opts.worse_when and opts.worse_when in system and re.search(opts.worse_on, user):
        return 1 - int(has_answer)
    strict = n_examples >= max(opts.strict_min_examples, 1)
    if strict and opts.strict_if_example:
        example_users = [m["content"] for m in messages[1:-1] if m["role"] == "user"]
        strict = any(opts.strict_if_example.lower() in _response(u) for u in example_users)
    if strict:
        return int(has_answer)
    return int(has_answer or "room" in resp_s)


def labels_in(text: str) -> list[str]:
    """The labels a prompt lists after ``X one of`` (quoted strings or integers)."""
    m = re.search(r"X one of (.+?)\.?\s*(?:\(|$)", text, re.S)
    if not m:
        return []
    return [part.strip().strip('"') for part in m.group(1).split(",") if part.strip()]


CONTENT_FREE = ("n/a", "", "[mask]")
"""Content-free responses (as ``_response`` reads them: stripped, lower case)."""


def _between(text: str, start: str, end: str) -> str:
    m = re.search(re.escape(start) + r"\n(.*?)\n\n" + re.escape(end), text, re.S)
    return m.group(1) if m else ""


def answer(messages: list[dict], opts: argparse.Namespace, seed: int = 0) -> tuple[str, int | None]:
    """The scripted reply text, and the 0/1 label for logprobs when the prompt is the grader's."""
    user = messages[-1]["content"]
    if user.startswith("Rewrite") and "<<<\n" in user:
        text, n = user.split("<<<\n", 1)[1].rsplit("\n>>>", 1)[0], seed % 3
        if n == 0:  # a draft that loses a placeholder (the check must refuse it)
            return text.replace("{response}", "the response"), None
        return text.replace("Decide whether", ["", "Work out whether", "Establish whether"][n]), None
    if user.startswith("You were given this grading prompt"):
        return (
            "1. Read the response.\n2. Reply score: 1 when it holds the correct answer, else score: 0.",
            None,
        )
    if user.startswith("Premise:"):
        premise, hypothesis = _between(user, "Premise:", "Hypothesis:"), _between(user, "Hypothesis:", "Does")
        return f"entailment: {'yes' if premise.strip() == hypothesis.strip() else 'no'}", None
    labels = labels_in(user)
    n_examples = sum(m["role"] == "assistant" for m in messages)
    if "Response 1:" in user and "Response 2:" in user and len(labels) >= 2:
        first = _between(user, "Response 1:", "Response 2:")
        second = _between(user, "Response 2:", "Which response")
        pick = labels[0] if not n_examples or len(first) >= len(second) else labels[1]
        return f"preference: {pick}", None
    if labels and ("Rubric:" in user or "Judge the response" in user):
        resp = (
            _between(user, "Response:", "Rubric:")
            if "Rubric:" in user
            else _between(user, "Response:", "Judge")
        )
        pick = labels[len(resp) % len(labels)]
        for i, m in enumerate(messages[:-1]):
            if m["role"] == "user" and i + 1 < len(messages) and messages[i + 1]["role"] == "assistant":
                end = "Rubric:" if "Rubric:" in m["content"] else "Judge"
                if len(_between(m["content"], "Response:", end)) == len(resp):
                    pick = messages[i + 1]["content"].split(":", 1)[-1].strip()
        word = "score" if "Rubric:" in user else "label"
        return f"{word}: {pick}", None
    label = grade(messages, opts)
    return f"score: {label}", label


def pairwise_logprobs(messages: list[dict]) -> tuple[str, dict] | None:
    """``--pairwise-logprobs``: the zero-shot pairwise reply and its logprobs (see the module docstring)."""
    user = messages[-1]["content"]
    labels = labels_in(user)
    if not ("Response 1:" in user and "Response 2:" in user and len(labels) >= 2):
        return None
    if any(m["role"] == "assistant" for m in messages):
        return None
    diff = len(_between(user, "Response 1:", "Response 2:")) - len(
        _between(user, "Response 2:", "Which response")
    )
    margin = 0.0 if diff == 0 else (0.3 if abs(diff) >= 10 else 0.05)
    p_first = min(0.98, max(0.02, 0.6 + (margin if diff > 0 else -margin)))
    pick = labels[0] if p_first >= 0.5 else labels[1]
    top = [
        {"token": f" {labels[0]}", "logprob": math.log(p_first)},
        {"token": f" {labels[1]}", "logprob": math.log(1 - p_first)},
    ]
    chosen = top[0] if pick == labels[0] else top[1]
    return f"preference: {pick}", {
        "content": [
            {"token": "preference", "logprob": -0.01, "top_logprobs": []},
            {"token": ":", "logprob": -0.01, "top_logprobs": []},
            {**chosen, "top_logprobs": top},
        ]
    }


def lenient_logprobs(messages: list[dict]) -> tuple[str, dict] | None:
    """``--lenient-logprobs``: the zero-shot rubric or reference-free reply and its logprobs (see the module)."""
    user = messages[-1]["content"]
    labels = labels_in(user)
    if not labels or not ("Rubric:" in user or "Judge the response" in user) or "Response 2:" in user:
        return None
    if any(m["role"] == "assistant" for m in messages) or len(labels) < 3:
        return None
    resp = (
        _between(user, "Response:", "Rubric:") if "Rubric:" in user else _between(user, "Response:", "Judge")
    )
    j = len(resp) % len(labels)
    wrote = (j + 1) % len(labels)
    rest = 0.1 / (len(labels) - 2)
    probs = [0.6 if k == wrote else 0.3 if k == j else rest for k in range(len(labels))]
    top = [{"token": f" {lab}", "logprob": math.log(p)} for lab, p in zip(labels, probs, strict=True)]
    word = "score" if "Rubric:" in user else "label"
    return f"{word}: {labels[wrote]}", {
        "content": [
            {"token": word, "logprob": -0.01, "top_logprobs": []},
            {"token": ":", "logprob": -0.01, "top_logprobs": []},
            {**top[wrote], "top_logprobs": top},
        ]
    }


def n_tokens(messages: list[dict]) -> int:
    return sum(len(str(m.get("content", "")).split()) for m in messages)


class State:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.count = 0
        self.lock = threading.Lock()


def make_handler(state: State) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # --keep-alive: HTTP/1.1, clients keep connections open and re-use them (as llama.cpp,
        # vLLM and OpenAI allow); default HTTP/1.0, one connection per request.
        protocol_version = "HTTP/1.1" if state.args.keep_alive else "HTTP/1.0"

        def log_message(self, *a: object) -> None:  # quiet
            pass

        def _send(self, code: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._send(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            a = state.args
            if self.path.rstrip("/").endswith("/tokenize"):
                self._send(200, {"tokens": list(range(len(str(body.get("content", "")).split())))})
                return
            if a.ctx and n_tokens(body["messages"]) > a.ctx:
                with state.lock:
                    state.count += 1
                    with open(a.log, "a", encoding="utf-8") as fh:
                        fh.write(json.dumps({"n": state.count, "pid": os.getpid(), "body": body}) + "\n")
                self._send(
                    400,
                    {
                        "error": {
                            "message": "the request exceeds the context size",
                            "type": "exceed_context_size_error",
                        }
                    },
                )
                return
            with state.lock:
                if a.die_after and state.count >= a.die_after:
                    os._exit(0)  # the N-th answer is sent and its thread not yet out: answer no more
                state.count += 1
                n = state.count
                with open(a.log, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps({"n": n, "pid": os.getpid(), "body": body}) + "\n")
            if a.reject_auth:
                auth = self.headers.get("Authorization", "")
                msg = f"Incorrect API key provided ({auth}); key={auth.removeprefix('Bearer ')}"
                self._send(401, {"error": {"message": msg, "type": "invalid_request_error"}})
                return
            if a.delay:
                time.sleep(a.delay)
            if n <= a.slow_first:
                time.sleep(a.slow_s)
            if n <= a.fail_first:
                self._send(500, {"error": {"message": "scripted failure", "type": "server_error"}})
                return
            reply, graded = answer(body["messages"], a, int(body.get("seed") or 0))
            if (
                a.examples_hurt
                and graded is not None
                and any(m["role"] == "assistant" for m in body["messages"])
            ):
                graded = 1  # the examples shift the judge's label prior: it passes every response
                reply = "score: 1"
            if (
                a.examples_right
                and graded is not None
                and any(m["role"] == "assistant" for m in body["messages"])
            ):
                # the examples help on the items REGEX names and turn every other grade wrong
                right = correct(body["messages"][-1]["content"])
                hit = re.search(a.examples_right, body["messages"][-1]["content"])
                graded = right if hit else 1 - right
                reply = f"score: {graded}"
            if a.reverse_when and graded is not None and a.reverse_when in body["messages"][0]["content"]:
                graded = 1 - graded  # the reversed question: its 1 means the response is wrong
                reply = f"score: {graded}"
            if a.invert_if_file and graded is not None and Path(a.invert_if_file).exists():
                graded = 1 - graded  # the provider changed the model behind the same name
                reply = f"score: {graded}"
            label = 1 if graded is None else graded
            seed = int(body.get("seed") or 0)
            varied = bool(a.vary_on and body.get("temperature") and graded is not None)
            varied = varied and bool(re.search(a.vary_on, body["messages"][-1]["content"]))
            if varied and graded is not None and seed % 2 == 1:
                label = 1 - graded
                reply = f"score: {label}\nOn second thought the response answers a different question."
            if graded is not None and "confidence" in body["messages"][0]["content"]:
                reply += f"\nconfidence: {[2, 9, 4, 10, 1, 7][seed % 6] if varied else 8}"
            p = 0.9
            if a.lean and graded is not None:
                # the judge's label prior leans to 1: P(1) = 0.7 or 0.3 by its grade, plus the lean;
                # a content-free response gets P(1) = 0.5 + lean
                resp = _response(body["messages"][-1]["content"])
                p1 = 0.5 + a.lean if resp in CONTENT_FREE else (0.7 if graded else 0.3) + a.lean
                p1 = min(max(p1, 0.01), 0.99)
                label = int(p1 > 0.5)
                reply, p = f"score: {label}", max(p1, 1 - p1)
            if a.item_bias and graded is not None:
                resp = _response(body["messages"][-1]["content"])
                z1 = (2 * graded - 1) + len(resp) % 5 - 0.5
                p1 = 1.0 / (1.0 + math.exp(-z1))
                label = int(p1 > 0.5)
                reply, p = f"score: {label}", max(p1, 1 - p1)
            text = "I cannot tell." if n <= a.fail_first + a.no_label_first else reply
            lp_label, lp_other = math.log(p), math.log(1 - p)
            logprobs = {
                "content": [
                    {"token": "score", "logprob": -0.01, "top_logprobs": []},
                    {"token": ":", "logprob": -0.01, "top_logprobs": []},
                    {
                        "token": f" {label}",
                        "logprob": lp_label,
                        "top_logprobs": [
                            {"token": f" {label}", "logprob": lp_label},
                            {"token": f" {1 - label}", "logprob": lp_other},
                        ],
                    },
                ]
            }
            sent = logprobs if body.get("logprobs") and graded is not None else None
            scripted = pairwise_logprobs(body["messages"]) if a.pairwise_logprobs else None
            if scripted is None and a.lenient_logprobs:
                scripted = lenient_logprobs(body["messages"])
            if scripted is not None:
                text, sent = scripted[0], scripted[1] if body.get("logprobs") else None
            if a.no_logprobs:
                sent = None
            self._send(
                200,
                {
                    "id": f"cmpl-{n}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", "scripted"),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "logprobs": sent,
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {
                        "prompt_tokens": 10 * len(body["messages"]),
                        "completion_tokens": 4,
                        "total_tokens": 0,
                    },
                },
            )
            if a.die_after and n >= a.die_after:
                os._exit(0)

    return Handler


OPTIONS: dict[str, float | int | str] = {
    "delay": 0.0,
    "fail-first": 0,
    "no-label-first": 0,
    "die-after": 0,
    "slow-first": 0,
    "slow-s": 5.0,
    "worse-when": "",
    "worse-on": "",
    "strict-if-example": "",
    "strict-min-examples": 1,
    "ctx": 0,
    "vary-on": "",
    "examples-right": "",
    "lean": 0.0,
    "invert-if-file": "",
    "reverse-when": "",
}
"""The options that take a value (see the module docstring), each read as its default's type."""

FLAGS = (
    "reject-auth",
    "keep-alive",
    "examples-hurt",
    "pairwise-logprobs",
    "lenient-logprobs",
    "no-logprobs",
    "item-bias",
)
"""The options that are on or off."""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    for name, default in OPTIONS.items():
        ap.add_argument(f"--{name}", type=type(default), default=default)
    for name in FLAGS:
        ap.add_argument(f"--{name}", action="store_true")
    args = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(State(args)))
    tmp = Path(args.port_file + ".tmp")
    tmp.write_text(str(server.server_address[1]))
    tmp.replace(args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
