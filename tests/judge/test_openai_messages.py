"""``allure judge export --format openai-messages``: the judge sent by a plain OpenAI-compatible client
(httpx, no allure) to the scripted server gives the bundle's labels, calibration included."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import httpx
import pytest

from tests.cli_run import run_cli
from tests.conftest import ScriptedServer, server_fixture, write_spec

pytestmark = pytest.mark.integration


server = server_fixture("server", "--lean", "0.25")


def _plain_label(doc: dict, block: dict, row: dict, base_url: str) -> object:
    """What a team without allure does with the file: fill the user turn, send, parse, calibrate."""
    messages = [dict(m) for m in block["messages"]]
    messages[-1]["content"] = messages[-1]["content"].format(
        task=row["question"], response=row["answer"], gold_answers=" OR ".join(g.strip() for g in row["gold"])
    )
    body = {**{k: v for k, v in doc["request"].items() if v is not None}, "messages": messages}
    reply = httpx.post(
        f"{base_url}/chat/completions", json=body, headers={"Authorization": "Bearer k"}
    ).json()
    choice = reply["choices"][0]
    found = re.findall(doc["label_regex"], choice["message"]["content"])
    labels = doc["label_set"]
    parsed = next(lab for lab in labels if str(lab) == found[-1])
    if doc["calibration"]["mode"] != "contextual" or not choice.get("logprobs"):
        return parsed
    top = [t for t in choice["logprobs"]["content"] if t["top_logprobs"]][-1]["top_logprobs"]
    p = [sum(math.exp(a["logprob"]) for a in top if a["token"].strip() == str(lab)) for lab in labels]
    p = [x / sum(p) for x in p]
    q = [x / c for x, c in zip(p, block["p_cf"], strict=True)]
    return labels[q.index(max(q))]


def test_the_plain_messages_sent_with_httpx_give_the_bundles_labels(
    tmp_path: Path, server: ScriptedServer
) -> None:
    # the bundle reproduces every item of the pass with folds = 0 (cross-fitted, an audit item's
    # prompt lacks its own fold's examples: only the held-out items see the judge's whole memory)
    spec = write_spec(
        tmp_path, server.base_url, calibration="contextual", max_iterations=2, guard=False, folds=0
    )
    res = run_cli(tmp_path, "audit", str(spec), "--auto-approve", timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    res = run_cli(tmp_path, "judge", "export", "--format", "openai-messages", "--out", str(tmp_path / "j"))
    assert res.returncode == 0, res.stdout + res.stderr
    res = run_cli(
        tmp_path,
        "judge",
        "label",
        str(tmp_path / "items.jsonl"),
        "--judge",
        str(tmp_path / "j"),
        "--out",
        str(tmp_path / "v.jsonl"),
    )
    assert res.returncode == 0, res.stdout + res.stderr
    bundle_labels = {
        r["id"]: r["label"] for r in map(json.loads, (tmp_path / "v.jsonl").read_text().splitlines())
    }
    doc = json.loads((tmp_path / "j" / "openai-messages.json").read_text())
    # kind "all": one block of every example for every item, except that an item an example was
    # mined from gets a block without its own example (no example sees itself): compare the others
    block = max((b for b in doc["blocks"] if b["example_ids"]), key=lambda b: len(b["example_ids"]))
    assert block["applies_to"] == "every item" and block["p_cf"] is not None
    mined = {json.loads(x)["item_id"] for x in (tmp_path / "j" / "examples.jsonl").read_text().splitlines()}
    rows = [json.loads(x) for x in (tmp_path / "items.jsonl").read_text().splitlines()]
    rows = [r for r in rows if r["uid"] not in mined]
    assert rows and mined
    plain = {r["uid"]: _plain_label(doc, block, r, server.base_url) for r in rows}
    assert plain == {uid: bundle_labels[uid] for uid in plain}
    assert any(
        r["label"] != r["parsed_label"]
        for r in map(json.loads, (tmp_path / "v.jsonl").read_text().splitlines())
    )
