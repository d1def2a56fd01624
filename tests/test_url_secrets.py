"""A base_url's ``user:pass@`` and ``?key=`` never reach an output (issue 27, group 11)."""

from __future__ import annotations

from pathlib import Path

from allure.evaluator import redact
from allure.urls import redact_url, url_problem
from tests.audits.reaudit.helpers import allure, write_reaudit_spec


def test_redact_url_and_text() -> None:
    assert redact_url("https://bob:hunter22@api.example/v1") == "https://[redacted]@api.example/v1"
    got = redact_url("https://api.example/v1?key=sekret99&mode=fast")
    assert "sekret99" not in got and "mode=fast" in got
    assert redact_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"  # nothing to hide
    text = redact("ConnectError to http://bob:hunter22@h:1/v1?api_key=sekret99 failed")
    assert "hunter22" not in text and "sekret99" not in text and "h:1/v1" in text
    assert url_problem("http://h/v1") is None and url_problem("gopher://h") is not None


def test_fingerprint_hides_the_secret() -> None:
    from allure.audits.reaudit._fingerprint import evaluator_params
    from allure.config import parse_spec

    spec = parse_spec(
        {
            "dataset": {"path": "x.jsonl"},
            "evaluator": {"kind": "openai", "base_url": "https://bob:hunter22@api.example/v1?key=sekret99"},
        }
    )
    shown = str(evaluator_params(spec))
    assert "hunter22" not in shown and "sekret99" not in shown and "api.example/v1" in shown


def test_an_unreachable_evaluator_error_hides_the_secret(tmp_path: Path) -> None:
    for secret_url in ("http://bob:hunter22@127.0.0.1:9/v1", "http://127.0.0.1:9/v1?key=sekret99"):
        write_reaudit_spec(tmp_path, secret_url)
        res = allure("reaudit", "reaudit.toml", "--project", str(tmp_path), cwd=tmp_path)
        assert res.returncode == 3, res.stderr
        out = res.stderr + res.stdout
        assert "hunter22" not in out and "sekret99" not in out and "[redacted]" in out, out
        written = [p.read_text(errors="replace") for p in (tmp_path / ".allure").rglob("*") if p.is_file()]
        assert not any("hunter22" in t or "sekret99" in t for t in written if "reaudit.toml" not in t)
