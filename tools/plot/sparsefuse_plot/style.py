"""One look for every figure: fixed size, scheme colours, captions, atomic saves.

Every figure is FIG_W_IN x FIG_H_IN inches at DPI, i.e. 1600 x 1000 pixels
as PNG (the layout never uses bbox_inches="tight", which would change it).
"""
import json
import math
import os
import tempfile
import textwrap
import zlib

FIG_W_IN, FIG_H_IN, DPI = 8.0, 5.0, 200
FIG_PX = (int(FIG_W_IN * DPI), int(FIG_H_IN * DPI))

# Families of presets: figures with many series draw one family per figure. A name not
# listed (a new preset) belongs to OTHER_FAMILY.
FAMILIES = {
    "dense": ["wfbp", "horovod", "ddp", "syncea", "mgwfbp"],
    "seed sparse": ["omgs", "fgbuff", "rgmerge", "saf", "safusion-inter", "safusion", "ssfusion", "ssfusion-o",
                    "ssfusion-i", "adtopk", "adtopk-i", "adtopk-p", "adtopk-h", "topk-layerwise", "syncea-topk",
                    "rgmerge-dynamic"],
    "baselines": ["dear", "bytescheduler", "hipress", "espresso", "cupcake", "oktopk", "spardl", "gtopk",
                  "randomk-shared"],
}
OTHER_FAMILY = "other"
# Presets in the design's order (families in turn); each keeps its colour and marker in every figure.
PRESET_ORDER = [p for members in FAMILIES.values() for p in members]
# 30 distinct colours, one per preset in PRESET_ORDER: no two presets share a colour, so a
# figure of all 22 quickstart schemes never draws two series alike.
PALETTE = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
    "#393b79", "#637939", "#b5cf6b", "#8c6d31", "#843c39", "#d6616b", "#7b4173", "#a55194", "#6b6ecf", "#e7969c",
    "#9c9ede", "#000000", "#fdae6b", "#31a354", "#74c476", "#756bb1", "#e6550d", "#c51b7d", "#636363", "#bdbdbd",
]
PRESET_COLORS = dict(zip(PRESET_ORDER, PALETTE))
# Markers by position within a family: at least as many as the largest family, so the
# series of one family's figure never share a marker.
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">", "p", "d", "H", "8", "1"]
# Presets not in the table get a colour from this list, chosen by a stable hash of the name.
EXTRA_COLORS = ["#fdd0a2", "#c6dbef", "#a1d99b", "#dadaeb", "#969696", "#fc9272", "#fee391", "#9ecae1"]
# Variants of one scheme (a swept setting) differ in line style.
LINESTYLES = ["-", "--", ":", "-.", (0, (6, 1.5, 1, 1.5, 1, 1.5)), (0, (1, 3)), (0, (9, 2.5)), (0, (3, 1.5, 3, 4))]

# Components of an iteration, in the breakdown and the timeline.
COMPONENT_COLORS = {
    "forward": "#a6cee3", "backward": "#1f78b4", "compression": "#33a02c",
    "communication_exposed": "#e31a1c", "communication": "#e31a1c", "sync_wait": "#fdbf6f", "wait": "#fdbf6f",
    "optimizer": "#6a3d9a",
}


def preset_rank(preset):
    return PRESET_ORDER.index(preset) if preset in PRESET_ORDER else len(PRESET_ORDER)


def family_of(preset):
    for family, members in FAMILIES.items():
        if preset in members:
            return family
    return OTHER_FAMILY


def preset_color(preset):
    if preset in PRESET_COLORS:
        return PRESET_COLORS[preset]
    return EXTRA_COLORS[zlib.crc32(preset.encode()) % len(EXTRA_COLORS)]


def preset_marker(preset):
    family = family_of(preset)
    if family == OTHER_FAMILY:
        return MARKERS[zlib.crc32(preset.encode()) % len(MARKERS)]
    return MARKERS[FAMILIES[family].index(preset) % len(MARKERS)]


def setup_matplotlib():
    """Imports matplotlib with the Agg backend and the house style; returns pyplot."""
    if "MPLCONFIGDIR" not in os.environ:
        config = os.path.join(os.path.expanduser("~"), ".config", "matplotlib")
        if not (os.path.isdir(config) and os.access(config, os.W_OK)) and not _can_create(config):
            os.environ["MPLCONFIGDIR"] = tempfile.mkdtemp(prefix="sparsefuse-mpl-")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({
        "font.size": 7.5, "axes.titlesize": 8, "axes.labelsize": 7.5, "xtick.labelsize": 7, "ytick.labelsize": 7,
        "legend.fontsize": 7, "legend.title_fontsize": 7, "axes.grid": True, "grid.alpha": 0.3,
        "grid.linewidth": 0.5, "axes.spines.top": False, "axes.spines.right": False, "lines.linewidth": 1.4,
        "lines.markersize": 4.5, "savefig.dpi": DPI, "figure.dpi": DPI, "pdf.fonttype": 42,
        "svg.hashsalt": "sparsefuse",
    })
    return plt


def _can_create(path):
    try:
        os.makedirs(path, exist_ok=True)
        return os.access(path, os.W_OK)
    except OSError:
        return False


def new_figure(plt, title, caption, nrows=1, ncols=1, *, left=0.09, right=0.97, top=None, bottom=0.12,
               wspace=0.28, hspace=0.45, sharex=False, sharey=False):
    """A figure of the fixed size with TITLE and a wrapped CAPTION above the panels."""
    fig, axes = plt.subplots(nrows, ncols, figsize=(FIG_W_IN, FIG_H_IN), dpi=DPI, squeeze=False,
                             sharex=sharex, sharey=sharey)
    fig.text(0.5, 0.975, title, ha="center", va="top", fontsize=10, fontweight="bold")
    lines = textwrap.wrap(caption, width=150)
    fig.text(0.5, 0.925, "\n".join(lines), ha="center", va="top", fontsize=6.5, color="#444444",
             linespacing=1.3)
    if top is None:
        top = 0.86 - 0.03 * max(0, len(lines) - 1)
    fig.subplots_adjust(left=left, right=right, top=top, bottom=bottom, wspace=wspace, hspace=hspace)
    return fig, axes


def write_atomically(path, data):
    """Writes DATA (bytes or str) to PATH via a temporary file in the same directory."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def save_figure(plt, fig, out_dir, name, sidecar):
    """Writes NAME.png, NAME.pdf and the NAME.json sidecar (the plotted series) into OUT_DIR."""
    import io
    files = {}
    for fmt in ("png", "pdf"):
        buffer = io.BytesIO()
        metadata = {"CreationDate": None} if fmt == "pdf" else {"Software": "sparsefuse plot"}
        fig.savefig(buffer, format=fmt, dpi=DPI, metadata=metadata)
        write_atomically(os.path.join(out_dir, f"{name}.{fmt}"), buffer.getvalue())
        files[fmt] = f"{name}.{fmt}"
    plt.close(fig)
    sidecar = dict(sidecar)
    sidecar.update({"figure": name, "png": files["png"], "pdf": files["pdf"], "size_px": list(FIG_PX), "dpi": DPI})
    write_atomically(os.path.join(out_dir, f"{name}.json"), json.dumps(sidecar, indent=1, sort_keys=True) + "\n")
    files["json"] = f"{name}.json"
    return sidecar


def slug(text):
    out = "".join(c if c.isalnum() or c in "._" else "-" for c in text.lower())
    while "--" in out:
        out = out.replace("--", "-")
    return out.strip("-.") or "x"


# A value axis whose positive values span more than this ratio is drawn log-scale:
# on a linear one, a scheme 100x slower than the rest sits on the zero line.
LOG_AXIS_SPREAD = 20.0


def value_axis(ax, values, unit_suffix="", which="y"):
    """Linear from zero, or log-10 when VALUES spread over more than LOG_AXIS_SPREAD.

    WHICH is the value axis ("y", or "x" for horizontal bars). Returns whether
    it is logarithmic (the caller says so in its label)."""
    from matplotlib.ticker import FuncFormatter
    positive = [v for v in values if v is not None and v == v and v > 0]
    axis = ax.yaxis if which == "y" else ax.xaxis
    if positive and max(positive) / min(positive) > LOG_AXIS_SPREAD:
        (ax.set_yscale if which == "y" else ax.set_xscale)("log")
        axis.set_major_formatter(FuncFormatter(
            lambda v, _: f"{v:,.{max(0, -int(math.floor(math.log10(v))))}f}{unit_suffix}"))
        return True
    (ax.set_ylim if which == "y" else ax.set_xlim)(0, None)
    axis.set_major_formatter(FuncFormatter(
        lambda v, _: f"{v:,.{0 if max(positive, default=0) >= 10 else 1}f}{unit_suffix}"))
    return False


def workers_axis(ax, workers):
    """Log-2 x axis with a tick at each worker count present."""
    from matplotlib.ticker import FixedLocator, FixedFormatter, NullLocator
    ax.set_xscale("log", base=2)
    ticks = sorted(set(workers))
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FixedFormatter([str(w) for w in ticks]))
    ax.xaxis.set_minor_locator(NullLocator())
    if len(ticks) == 1:
        ax.set_xlim(ticks[0] / 1.5, ticks[0] * 1.5)
    else:
        ax.set_xlim(ticks[0] / 1.25, ticks[-1] * 1.25)
    ax.set_xlabel("workers (GPUs, log scale)")
