"""The study rooms: ``allure/audits`` is gone, studies sit in three folders by concern, and no module
there holds two ideas' worth of lines."""

from __future__ import annotations

from pathlib import Path

import allure

ROOT = Path(allure.__file__).parent
ROOMS = ("studies", "robustness", "reaudit")
MAX_LINES = 400


def test_studies_live_in_three_rooms_and_audits_is_gone() -> None:
    assert not (ROOT / "audits").exists()
    assert len(ROOMS) == 3 and all((ROOT / room / "__init__.py").is_file() for room in ROOMS)


def test_no_module_of_the_study_rooms_is_over_400_lines() -> None:
    modules = [p for room in ROOMS for p in sorted((ROOT / room).glob("*.py"))]
    assert len(modules) > 20  # the rooms were read
    sizes = {str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines()) for p in modules}
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}
