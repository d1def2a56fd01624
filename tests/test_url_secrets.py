"""A base_url's ``user:pass@`` and ``?key=`` never reach an output (issue 27, group 11)."""

from __future__ import annotations

from pathlib import Path

import pytest

from allure.evaluator import redact
from allure.urls import redact_url, url_problem
from tests.reaudit.helpers import allure, write_reaudit_spec


def test_redact_url_and_text() -> None:
    assert redact_url("https://bob:hunter22@api.example/v1") == "https://[redacted]@api.example/v1"
    got = redact_url("https://api.example/v1?key=sekret99&mode=fast")
    assert "sekret99" not in got and "mode=fast" in got
    assert redact_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"  # nothing to hide
    text = redact("ConnectError to http://bob:hunter22@h:1/v1?api_key=sekret99 failed")
    assert "hunter22" not in text and "sekret99" not in text and "h:1/v1" in text
    assert url_problem("http://h/v1") is None and url_problem("gopher://h") is not None


@pytest.mark.integration
@pytest.mark.parametrize(
    "secret_url", ["http://bob:hunter22@127.0.0.1:9/v1", "http://127.0.0.1:9/v1?key=sekret99"]
)
def test_a_base_url_with_a_secret_is_refused_without_echoing_it(tmp_path: Path, secret_url: str) -> None:
    """Credentials in base_url would be stored with every run (and a query sent before /chat/completions):
    the spec is refused, exit 2, the secret not shown, nothing written."""
    write_reaudit_spec(tmp_path, secret_url)
    for args in (["reaudit", "reaudit.toml"], ["audit", "reaudit.toml"]):
        res = allure(*args, "--project", str(tmp_path), cwd=tmp_path)
        assert res.returncode == 2, res.stderr
        out = res.stderr + res.stdout
        assert "hunter22" not in out and "sekret99" not in out and "[redacted]" in out, out
        assert "field 'evaluator.base_url'" in out and "api_key_env" in out
    assert not (tmp_path / ".allure").exists()


def test_errors_from_the_server_hide_secrets_in_urls() -> None:
    from allure.errors import EvaluatorUnavailableError
    from allure.evaluator._kinds import server_model_info

    with pytest.raises(EvaluatorUnavailableError) as info:
        server_model_info("http://bob:hunter22@127.0.0.1:9/v1", "m", "NO_SUCH_KEY_VAR")
    assert "hunter22" not in info.value.render() and "[redacted]@127.0.0.1:9" in info.value.render()
