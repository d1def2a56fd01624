"""LocalServerSettings and LocalServer without a model: child config, request extras, errors."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from pydantic import ValidationError

from allure.errors import EvaluatorError, ModelFilesError
from allure.evaluator.local import LocalServer, LocalServerSettings
from allure.evaluator.local import _server as server_module
from allure.evaluator.local._serve_child import ChildConfig, build_params
from tests.cli_run import allure


def test_defaults_use_every_core_and_cache_prompts(tmp_path: Path) -> None:
    cfg = LocalServerSettings().child_config(tmp_path / "m.gguf")
    assert cfg.alias == "qwen2.5-coder-1.5b"
    assert cfg.threads == (os.cpu_count() or 1)
    assert (cfg.ctx_size, cfg.parallel, cfg.cache_prompt, cfg.temperature) == (8192, 1, True, None)
    assert LocalServer().extra_body() == {"cache_prompt": True}


def test_deterministic_turns_off_caching_and_fixes_sampling(tmp_path: Path) -> None:
    settings = LocalServerSettings(model=str(tmp_path / "my-judge.Q4.gguf"), deterministic=True, seed=5)
    cfg = settings.child_config(tmp_path / "my-judge.Q4.gguf")
    assert cfg.alias == "my-judge.Q4"  # a path's model name is its file stem
    assert (cfg.cache_prompt, cfg.seed, cfg.temperature) == (False, 5, 0.0)
    assert LocalServer(settings).extra_body() == {"cache_prompt": False, "seed": 5, "temperature": 0.0}


def test_no_cache_prompt_is_sent_per_request() -> None:
    assert LocalServer(LocalServerSettings(cache_prompt=False)).extra_body() == {"cache_prompt": False}


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValidationError):
        LocalServerSettings(threads=0)
    with pytest.raises(ValidationError):
        LocalServerSettings(parallel=0)


def test_params_bind_loopback_on_a_free_port() -> None:
    cfg = ChildConfig(
        model_path="/m.gguf",
        alias="m",
        ctx_size=1024,
        threads=3,
        parallel=2,
        cache_prompt=False,
        seed=9,
        temperature=0.0,
    )
    params = build_params(cfg)
    assert params.hostnames == ["127.0.0.1"]
    assert params.port == 0
    assert params.model.path == "/m.gguf"
    assert (params.n_ctx, params.n_parallel, params.cache_prompt) == (1024, 2, False)
    assert params.cpuparams.n_threads == params.cpuparams_batch.n_threads == 3
    assert params.sampling.seed == 9 and params.sampling.temp == 0.0
    assert params.ui is False


def test_urls_before_start_raise() -> None:
    srv = LocalServer()
    with pytest.raises(EvaluatorError, match="not running"):
        _ = srv.base_url
    with pytest.raises(EvaluatorError, match="not been started"):
        _ = srv.model_name
    assert not srv.running and srv.pid is None
    srv.stop()  # stopping a server that never started is harmless


def test_missing_model_fails_before_any_process(tmp_path: Path) -> None:
    srv = LocalServer(LocalServerSettings(model=str(tmp_path / "absent.gguf")))
    with pytest.raises(ModelFilesError, match="no such model file"):
        srv.start()
    assert srv.pid is None
    assert set() == server_module._LIVE


def test_sigterm_handler_is_installed_while_running_and_restored() -> None:
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    srv = LocalServer()
    server_module._track(srv, True)
    try:
        assert signal.getsignal(signal.SIGTERM) is server_module._on_sigterm
        with pytest.raises(SystemExit) as info:
            server_module._on_sigterm(signal.SIGTERM, None)
        assert info.value.code == 143  # 128 + SIGTERM, as a shell reports it
    finally:
        server_module._track(srv, False)
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert set() == server_module._LIVE


@pytest.mark.integration
def test_cli_serve_with_a_bad_model_exits_2_with_the_fix(tmp_path: Path) -> None:
    done = allure("serve", "--model", str(tmp_path / "none.gguf"), timeout=60)
    assert done.returncode == 2
    assert "no such model file" in done.stderr
    assert "fix:" in done.stderr
