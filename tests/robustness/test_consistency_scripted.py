"""``allure study consistency`` against the scripted server: K self-scores per prompt of paired prompts.

The dataset pairs ``1stepPath-j`` with ``2stepPath-j`` (column ``pair``). With ``--vary-on`` the
server's sampled answers to 2stepPath items change with the seed (grade and a confidence of
2, 9, 4, 10, 1, 7), while 1stepPath items always get the same answer with confidence 8: every pair
differs in the spread of its self-scores (Siegel-Tukey flags it). Text consistency: the evaluator
judges entailment (the server answers yes for two equal texts), or a tiny NLI model the test builds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from allure.errors import StudyError
from allure.robustness import consistency_study, nli_entailment
from allure.studies import load_study
from tests.cli_run import run_cli as _cli
from tests.robustness.specs import VARY, paired_spec, robust_project


def _tiny_nli(folder: Path) -> Path:
    """A 1-layer BERT NLI classifier with a 30-word vocabulary, saved with its tokenizer (no download)."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    folder.mkdir(parents=True)
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "score", ":", "confidence", "on", "second"]
    words += ["thought", "the", "response", "answers", "a", "different", "question", "."] + list("0123456789")
    (folder / "vocab.txt").write_text("\n".join(words) + "\n")
    torch.manual_seed(0)
    labels = {0: "contradiction", 1: "neutral", 2: "entailment"}
    config = BertConfig(
        vocab_size=len(words),
        hidden_size=8,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=16,
        max_position_embeddings=64,
        num_labels=3,
        id2label=labels,
        label2id={v: k for k, v in labels.items()},
    )
    BertForSequenceClassification(config).save_pretrained(folder)
    BertTokenizer(vocab_file=str(folder / "vocab.txt")).save_pretrained(folder)
    return folder


@pytest.mark.integration
def test_consistency_flags_the_pairs_whose_self_scores_spread_differently(tmp_path: Path) -> None:
    with robust_project(tmp_path, *VARY, paired=True) as (srv, spec):
        proj = tmp_path / "proj"
        lines: list[str] = []
        study = consistency_study(proj, spec=spec, samples=6, pair_column="pair", say=lines.append)
        assert (
            study.kind == "consistency" and len(study.arms) == 6 and any("not yet stored" in x for x in lines)
        )
        r = study.consistency
        assert r is not None and r.pairs_from == "column pair" and r.entailment == "evaluator"
        assert sorted((p.a, p.b) for p in r.pairs) == [(f"1stepPath-{j}", f"2stepPath-{j}") for j in range(6)]
        for p in r.pairs:
            assert p.scores_a == [8.0] * 6 and p.scores_b == [2.0, 9.0, 4.0, 10.0, 1.0, 7.0]
            assert p.score_flagged and p.score_test is not None and p.score_test.p_value < 0.05
            # 6 equal answers entail each other; 6 different ones do not: no spread on either side
            assert p.tc_a == [1.0] * 6 and p.tc_b == [0.0] * 6 and not p.tc_flagged
        sent = srv.requests()
        judged = [b for b in sent if b["body"]["messages"][-1]["content"].startswith("Premise:")]
        assert study.calls == 6 * 12 and len(judged) == len(sent) - study.calls > 0
        assert any("6 of 6 pair(s) differ in the spread of their self-scores" in f for f in study.findings)
        out = proj / ".allure" / "studies" / study.id
        assert "## Score consistency" in (out / "study.md").read_text()
        assert (proj / ".allure" / "prompts" / "grader+score" / "system.txt").read_text().count(
            "confidence"
        ) == 2
        df = r.to_pandas()
        assert len(df) == 6 and df["score_flagged"].all() and (df["sd_scores_a"] == 0).all()
        again = consistency_study(proj, spec=spec, samples=6, pair_column="pair")
        assert again.id == study.id and again.calls == 0 and len(srv.requests()) == len(sent)
        assert load_study(proj, study.id).consistency == again.consistency
        # The entailment by a local NLI model: no entailment call is sent; equal answers, equal TC.
        nli = _tiny_nli(tmp_path / "nli")
        by_nli = consistency_study(proj, spec=spec, samples=6, pair_column="pair", nli=nli)
        assert by_nli.calls == 0 and len(srv.requests()) == len(sent)
        rn = by_nli.consistency
        assert rn is not None and rn.entailment == f"nli {nli}"
        p_same = nli_entailment(nli)([("score: 1\nconfidence: 8", "score: 1\nconfidence: 8")])[0]
        assert len(rn.pairs) == 6
        for p in rn.pairs:
            assert p.tc_a == pytest.approx([p_same] * 6) and len(p.tc_b) == 6
            assert all(0.0 <= v <= 1.0 for v in p.tc_b)


@pytest.mark.integration
def test_pairs_from_the_rephrasings(tmp_path: Path) -> None:
    with robust_project(tmp_path, paired=True) as (_, spec):
        study = consistency_study(tmp_path / "proj", spec=spec, samples=3, rephrasings=2)
        r = study.consistency
        assert r is not None and r.pairs_from == "rephrasings" and len(r.pairs) == 12
        assert r.pairs[0].a.endswith("@grader+score") and "@grader~r2" in r.pairs[0].b
        assert not any(p.score_flagged for p in r.pairs)  # confidence 8 everywhere


@pytest.mark.integration
@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--scale", "1-10", "--score-pattern", r"confidence: ([a-z]+)"], "cannot read the score 1"),
        (["--scale", "ten"], "is not LOW-HIGH"),
        (["--samples", "1"], "at least 2 samples per prompt"),
        (["--pair-column", "nothing"], "no item names another item"),
        (["--nli", "no-such-folder"], "no model checkpoint"),
    ],
)
def test_bad_consistency_input_exits_2_and_writes_nothing(
    tmp_path: Path, args: list[str], needle: str
) -> None:
    spec = paired_spec(tmp_path, "http://127.0.0.1:9/v1")
    res = _cli(tmp_path, "study", "consistency", "--spec", str(spec), *args)
    assert res.returncode == 2 and needle in res.stderr and "fix:" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "proj" / ".allure" / "studies").exists()
    assert not (tmp_path / "proj" / ".allure" / "prompts").exists()


def test_an_nli_model_without_an_entailment_label_is_refused(tmp_path: Path) -> None:
    folder = _tiny_nli(tmp_path / "nli")
    cfg = json.loads((folder / "config.json").read_text())
    cfg["id2label"] = {"0": "a", "1": "b", "2": "c"}
    cfg["label2id"] = {"a": 0, "b": 1, "c": 2}
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(StudyError, match="name no entailment class"):
        nli_entailment(folder)
