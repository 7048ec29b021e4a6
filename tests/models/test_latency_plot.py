"""bench/latency_plot.py: compare_ort.py's results drawn as a PNG (synthetic results, no ORT).

Run:  /usr/bin/python3 -m pytest tests/models/test_latency_plot.py
"""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
pytest.importorskip("matplotlib", reason="Debian's python3-matplotlib (scripts/bootstrap.sh)")
from latency_plot import plot_latency  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def timing(ember_ms, ort_ms):
    return {"ember_ms": ember_ms, "ort_ms": ort_ms, "ratio": ember_ms / ort_ms}


def test_draws_every_model_and_thread_count(tmp_path):
    results = [{"model": "resnet18", "timing": {"1": timing(30.7, 40.3), "2": timing(15.8, 22.1)}},
               {"model": "mlp", "timing": {"1": timing(0.014, 0.121)}},
               {"model": "broken", "check": "error: emberc failed"}]
    path = plot_latency(results, str(tmp_path / "latency.png"))
    with open(path, "rb") as f:
        assert f.read(8) == PNG_MAGIC
    assert os.path.getsize(path) > 10000


def test_refuses_results_without_timings(tmp_path):
    with pytest.raises(ValueError, match="no model has both"):
        plot_latency([{"model": "mlp", "check": "ok"}], str(tmp_path / "x.png"))
