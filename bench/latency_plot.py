"""The picture of a compare_ort.py series: Ember's and ONNX Runtime's median latency per model and
thread count (log scale, since the models span four orders of magnitude), and Ember / ORT beside
it with the break-even line at 1.0.

  plot_latency(results, "latency.png", title="...")

``results`` is compare_ort.py's list of entries ({"model", "timing": {"1": {"ember_ms", "ort_ms",
"ratio"}, ...}}), the same as its --json file holds under "results". Needs matplotlib (Debian's
python3-matplotlib); no display is used.
"""
import matplotlib

matplotlib.use("Agg")  # files only: no display on build machines
import matplotlib.pyplot as plt  # noqa: E402

EMBER_COLOR = "#d95f02"
ORT_COLOR = "#7570b3"
BAR_WIDTH = 0.38


def _rows(results):
    """(label, ember_ms, ort_ms, ratio) per model and thread count that has both timings."""
    rows = []
    for entry in results:
        for threads, t in sorted(entry.get("timing", {}).items(), key=lambda kv: int(kv[0])):
            if "ember_ms" in t and "ort_ms" in t:
                rows.append(("%s, %s thr" % (entry["model"], threads), t["ember_ms"], t["ort_ms"],
                             t["ember_ms"] / t["ort_ms"]))
    return rows


def plot_latency(results, path, title="Ember against ONNX Runtime"):
    """Writes the picture to ``path`` (the format follows the extension, e.g. .png, .svg)."""
    rows = _rows(results)
    if not rows:
        raise ValueError("plot_latency: no model has both an Ember and an ORT timing")
    labels = [r[0] for r in rows]
    ys = list(range(len(rows)))
    fig, (lat, ratio) = plt.subplots(1, 2, figsize=(11, 0.45 * len(rows) + 1.6), sharey=True,
                                     gridspec_kw={"width_ratios": [3, 2]})
    lat.barh([y - BAR_WIDTH / 2 for y in ys], [r[1] for r in rows], BAR_WIDTH, label="Ember",
             color=EMBER_COLOR)
    lat.barh([y + BAR_WIDTH / 2 for y in ys], [r[2] for r in rows], BAR_WIDTH,
             label="ONNX Runtime", color=ORT_COLOR)
    lat.set_xscale("log")
    lat.set_xlabel("median latency, ms (log scale)")
    lat.set_yticks(ys)
    lat.set_yticklabels(labels)
    lat.invert_yaxis()
    lat.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncol=2, frameon=False)
    ratio.barh(ys, [r[3] for r in rows], 2 * BAR_WIDTH,
               color=[EMBER_COLOR if r[3] < 1.0 else ORT_COLOR for r in rows])
    ratio.axvline(1.0, color="black", linewidth=1)
    for y, r in zip(ys, rows):
        ratio.text(r[3], y, " %.2f" % r[3], va="center")
    ratio.set_xlim(0, max(1.2, max(r[3] for r in rows) * 1.25))
    ratio.set_xlabel("Ember / ORT (below 1: Ember faster)")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
