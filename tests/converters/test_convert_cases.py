"""Whole-output converter cases (before/after pairs, as LibCST's codemod tests do): every file
tests/convert_cases/NAME.py is converted to the target its name starts with (tfd_: tf-distribute,
hvd_: Horovod), and the WHOLE converted script and the EXACT findings report are compared with
NAME.<target>.out.py and NAME.<target>.findings (or, for a refusal, the exact message with
NAME.<target>.refused).

After a deliberate change, regenerate the expectations and read their diff before committing:
    PYTHONPATH=. .venv/bin/python tests/converters/test_convert_cases.py --update
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

CASES = Path(__file__).resolve().parents[1] / "convert_cases"
TARGETS = {"tfd": "tf-distribute", "hvd": "horovod"}


def _cases():
    return sorted(p for p in CASES.glob("*.py") if ".out." not in p.name)


def _target(case: Path) -> str:
    return TARGETS[case.name.split("_")[0]]


def _outcome(case: Path) -> dict[str, str]:
    """What the converter makes of a case: {suffix: expected file content}."""
    from converters.script import ConversionError, convert

    target = _target(case)
    try:
        result = convert(case.read_text(), target, case.name)
    except ConversionError as e:
        return {f".{target}.refused": str(e) + "\n"}
    return {f".{target}.out.py": result.code, f".{target}.findings": result.report + "\n"}


@pytest.mark.parametrize("case", _cases(), ids=lambda p: p.stem)
def test_case_converts_to_exactly_the_expected_script_and_findings(case):
    got = _outcome(case)
    expected = {p.name[len(case.stem):]: p.read_text() for p in CASES.glob(f"{case.stem}.*")
                if p != case}
    assert sorted(got) == sorted(expected), f"outcome kind changed: {sorted(got)} vs {sorted(expected)}"
    for suffix, text in got.items():
        assert text == expected[suffix], f"{case.stem}{suffix} differs"


def test_every_case_has_expectations():
    assert _cases(), "no cases"
    for case in _cases():
        assert list(CASES.glob(f"{case.stem}.*.*")), f"{case.name}: run with --update"


if __name__ == "__main__":  # regenerate: PYTHONPATH=. python tests/converters/test_convert_cases.py --update
    if "--update" not in sys.argv:
        raise SystemExit(__doc__)
    for case in _cases():
        for old in CASES.glob(f"{case.stem}.*.*"):
            old.unlink()
        for suffix, text in _outcome(case).items():
            (CASES / f"{case.stem}{suffix}").write_text(text)
            print("wrote", case.stem + suffix)
