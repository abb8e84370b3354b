"""What the job sandbox costs: the same trivial job through the real engine and local backend,
sandboxed (bubblewrap, the default) and unsandboxed ([runner] unsandboxed = true with no
bubblewrap, the baseline), N times each, interleaved; prints medians and the ratio.

    .venv/bin/python benchmarks/sandbox.py [--runs 5]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runners.engine import Engine, EngineConfig  # noqa: E402

SCRIPT = "import sys\nprint('Epoch 1/1')\nprint('1/1 - 0s - loss: 0.5')\n"


def engine(home: Path, runner: dict) -> Engine:
    return Engine(EngineConfig(state_path=home / "state.sqlite", jobs_dir=home / "jobs",
                               runner_python=Path(sys.executable), local_workers=1,
                               follow=False, poll_s=0.02, runner=runner)).start()


def one(eng: Engine, script: Path) -> float:
    t = time.perf_counter()
    job = eng.wait(eng.submit("train", {"script_path": str(script), "convert": "none"}).id, 60)
    assert job.state == "succeeded", job.reason
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tfdesk-bench-sandbox-") as tmp:
        tmp = Path(tmp)
        script = tmp / "train.py"
        script.write_text(SCRIPT)
        boxed = engine(tmp / "boxed", {})
        bare = engine(tmp / "bare", {"unsandboxed": True, "bwrap": str(tmp / "no-bwrap")})
        print(boxed.local.user_note)
        print(bare.local.user_note)
        times: dict[str, list[float]] = {"sandboxed": [], "unsandboxed": []}
        try:
            one(boxed, script), one(bare, script)  # warm-up
            for _ in range(a.runs):
                times["sandboxed"].append(one(boxed, script))
                times["unsandboxed"].append(one(bare, script))
        finally:
            boxed.close()
            bare.close()
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\n{'mode':<12} {'median s':>9} {'min s':>7} {'max s':>7}  (trivial job, submit to end)")
    for k, v in times.items():
        print(f"{k:<12} {med[k]:>9.3f} {min(v):>7.3f} {max(v):>7.3f}")
    print(f"\nsandboxed / unsandboxed: {med['sandboxed'] / med['unsandboxed']:.2f}x "
          f"(+{med['sandboxed'] - med['unsandboxed']:.3f} s per job)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
