"""Matplotlib drawing of :class:`~._tree_view.TreeView` objects without overlaps.

Layout: a tidy tree layout (see :func:`_layout`): leaves in their
left-to-right (in-order) order, every split at the midpoint of its children,
one row per level, subtrees packed so that two nodes of one row are at least
one slot apart; boxes no wider than a slot never overlap.

Sizing, in closed form before anything is drawn: every node's box is
measured once with the figure's text engine (:class:`_Boxes`, no drawing),
and the slots are made just wider and taller than the largest box. A figure
this module creates is sized to the trees, at most
:data:`MAX_FIGURE_INCHES`; into axes the caller passes, the font shrinks
instead. ``max_depth="auto"`` keeps the whole tree where it fits (a new
figure at a font of at least :data:`LEGIBLE_FONTSIZE` points; the caller's
axes without overlapping boxes), else its deepest levels that do; the
subtrees cut are drawn as ``(...)`` boxes, as in scikit-learn's
``plot_tree``. One check of the drawn boxes (measured, not rendered)
follows. Edges are one line collection per axes.
"""

import math
import warnings
from numbers import Integral

import numpy as np

from ._tree_view import node_colours

__all__ = ["LEGIBLE_FONTSIZE", "MAX_FIGURE_INCHES", "draw_views"]

#: Largest figure (width, height in inches) this module creates. A tree that
#: needs more is cut (``max_depth="auto"``) or drawn with a smaller font.
MAX_FIGURE_INCHES = (40.0, 25.0)
#: Smallest font size (points) ``max_depth="auto"`` shrinks to before it cuts levels.
LEGIBLE_FONTSIZE = 6.0
#: Smallest font size (points) anything is drawn at.
_MIN_FONTSIZE = 3.0
#: Padding of a node's box, in font sizes (``boxstyle="round,pad=0.3"``).
_PAD = 0.3
#: Share of its slot (width, height) a box may fill without overlapping.
_FIT = (0.92, 0.8)
#: Share of its slot a box fills in a figure sized here (a margin below _FIT).
_TARGET = (0.88, 0.76)
#: Share of a grid cell an axes takes (the rest: gaps between trees).
_CELL = 0.98
#: Smallest figure this module creates (inches).
_MIN_FIGURE = (3.0, 2.0)


def _layout(root):
    """``{id(view node): (x, row)}`` and the width in slots.

    A tidy layout (Reingold-Tilford without threads): leaves keep their
    left-to-right (in-order) order, each split sits at the midpoint of its
    children, and the right subtree of a split is pushed just far enough
    right that on every row its nodes are at least one slot from the left
    subtree's. Two nodes of one row are then at least one slot apart.
    """
    rel = {}  # id -> x relative to the parent's subtree origin, resolved below

    def place(v):
        """Contour {depth: (min_x, max_x)} of v's subtree with v at x = 0."""
        if v.is_leaf:
            return {0: (0.0, 0.0)}
        offsets = []
        acc = None
        for c in v.children:
            cont = place(c)
            if acc is None:
                shift = 0.0
                acc = dict(cont)
            else:
                shift = max(acc[d][1] - cont[d][0] + 1.0 for d in cont if d in acc)
                for d, (lo, hi) in cont.items():
                    if d in acc:
                        acc[d] = (acc[d][0], hi + shift)
                    else:
                        acc[d] = (lo + shift, hi + shift)
            offsets.append(shift)
        mid = (offsets[0] + offsets[-1]) / 2.0
        for c, off in zip(v.children, offsets):
            rel[id(c)] = off - mid
        out = {0: (0.0, 0.0)}
        for d, (lo, hi) in acc.items():
            out[d + 1] = (lo - mid, hi - mid)
        return out

    contour = place(root)
    pos = {}

    def resolve(v, x, row):
        pos[id(v)] = (x, row)
        for c in v.children:
            resolve(c, x + rel[id(c)], row + 1)

    left = min(lo for lo, _ in contour.values())
    resolve(root, -left, 0)
    width = max(hi for _, hi in contour.values()) - left + 1.0
    return pos, width


def _node_text(v):
    if v.truncated:  # a subtree cut by max_depth, drawn as scikit-learn does
        return "(...)"
    if v.is_leaf:
        lines = [v.label]
    else:
        rows, thr = v.split
        lines = list(rows[:-1]) + [f"{rows[-1]} <= {thr}"]
    return "\n".join(lines + v.info_lines())


#: Texts measured per tree: those of most characters on a line, and of most lines.
_N_WIDE, _N_TALL = 12, 3


def _largest(texts):
    """The texts among which the widest and the tallest box are: the
    :data:`_N_WIDE` of the longest lines and the :data:`_N_TALL` of the most
    lines (measuring a text costs about a millisecond a line; the other
    boxes are narrower by many characters)."""
    texts = list(dict.fromkeys(texts))
    if len(texts) <= _N_WIDE + _N_TALL:
        return texts
    wide = sorted(texts, key=lambda t: -max(map(len, t.split("\n"))))[:_N_WIDE]
    tall = sorted(texts, key=lambda t: -t.count("\n"))[:_N_TALL]
    return list(dict.fromkeys(wide + tall))


class _Boxes:
    """Sizes (inches) of node boxes at font size ``fs``: each text measured
    once with matplotlib's text layout on a 1 x 1 pixel Agg renderer at the
    figure's dpi (nothing is drawn)."""

    def __init__(self, fig, fs):
        from matplotlib.backends.backend_agg import RendererAgg
        from matplotlib.text import Text

        self.fs, self.dpi = fs, fig.dpi
        self.renderer = RendererAgg(1, 1, fig.dpi)
        self._text = Text(0, 0, "", fontsize=fs, ha="center", va="center")
        self._text.set_figure(fig)
        self._cache = {}

    def size(self, text):
        got = self._cache.get(text)
        if got is None:
            self._text.set_text(text)
            ext = self._text.get_window_extent(self.renderer)
            pad = 2.0 * _PAD * self.fs / 72.0
            got = self._cache[text] = (ext.width / self.dpi + pad,
                                       ext.height / self.dpi + pad)
        return got

    def need(self, view):
        """``(width, height)`` (inches) of axes in which ``view`` drawn at
        ``fs`` fills :data:`_TARGET` of its slots, and its ``(n_slots, n_rows)``."""
        sizes = [self.size(t) for t in _largest([_node_text(v) for v in view.root.walk()])]
        _, n_slots = _layout(view.root)
        n_rows = view.root.depth() + 1
        box_w = max(w for w, _ in sizes)
        box_h = max(h for _, h in sizes)
        return (n_slots * box_w / _TARGET[0], n_rows * box_h / _TARGET[1]), (n_slots, n_rows)


def _band(fs, titled):
    """Height (inches) of a tree's title above its axes at font size ``fs``."""
    return (1.6 * fs + 8.0) / 72.0 if titled else 0.0


def _grid_scale(need, rows, cols, fs, titled):
    """Largest font scale (at most 1) at which ``rows x cols`` cells of axes
    ``need`` (inches, at font ``fs``) fit :data:`MAX_FIGURE_INCHES`."""
    cap_w, cap_h = MAX_FIGURE_INCHES
    s_w = _CELL * cap_w / (cols * need[0])
    # rows * (need_h * s + band(fs * s)) <= _CELL * cap_h, band linear in s.
    s_h = ((_CELL * cap_h / rows - _band(0.0, titled))
           / (need[1] + _band(fs, titled) - _band(0.0, titled)))
    return min(1.0, s_w, s_h)


def _own_figure_plan(n, need, fs, titled):
    """``(scale, rows, cols)`` of a new figure for ``n`` trees whose largest
    axes need ``need`` (inches at font ``fs``): the grid as close to square as
    the cells allow when it fits :data:`MAX_FIGURE_INCHES` at ``fs`` (scale 1),
    else the grid that allows the largest font."""
    cell_h = need[1] + _band(fs, titled)
    cols = int(min(n, max(1, round(math.sqrt(n * cell_h / need[0])))))
    rows = -(-n // cols)
    cols = -(-n // rows)
    scale = _grid_scale(need, rows, cols, fs, titled)
    if scale < 1.0:
        for c in range(1, n + 1):
            r = -(-n // c)
            s = _grid_scale(need, r, c, fs, titled)
            if s > scale:
                scale, rows, cols = s, r, c
    return scale, rows, cols


def _axes_scale(axes, needs):
    """Font scale (at most 1) at which every view fits its axes: 1 where the
    boxes fit their slots (:data:`_FIT`), else :data:`_TARGET` of them."""
    fig = axes[0].figure
    w_in, h_in = fig.get_size_inches()
    scale = 1.0
    for ax, (nw, nh) in zip(axes, needs):
        pos = ax.get_position()
        aw, ah = pos.width * w_in, pos.height * h_in
        if nw * _TARGET[0] / _FIT[0] > aw or nh * _TARGET[1] / _FIT[1] > ah:
            scale = min(scale, aw / nw, ah / nh)
    return scale


def _plan(views, boxes, axes, titled):
    """Font scale (at most 1) and, for a new figure, ``(rows, cols)``."""
    needs = [boxes.need(v)[0] for v in views]
    if axes is not None:
        return _axes_scale(axes, needs), None
    need = (max(w for w, _ in needs), max(h for _, h in needs))
    scale, rows, cols = _own_figure_plan(len(views), need, boxes.fs, titled)
    return scale, (rows, cols)


def _cut(views, max_depth, fig, fs, axes, titled):
    """The views to draw: cut at ``max_depth`` (an int), whole (``None``), or,
    for ``"auto"``, whole where they fit, else cut at the deepest depth (at
    least 1) that fits. A new figure fits with a font of at least
    :data:`LEGIBLE_FONTSIZE` points (``fs`` if smaller); the axes given fit
    without overlapping boxes, the font shrinking down to ``_MIN_FONTSIZE``
    (what scikit-learn's ``plot_tree`` does into axes)."""
    if max_depth is None:
        return views
    if isinstance(max_depth, Integral):
        return [v.truncate(max_depth) for v in views]
    deepest = max(v.root.depth() for v in views)
    # Measured at the smallest font allowed: text does not scale with the font.
    boxes = _Boxes(fig, min(fs, LEGIBLE_FONTSIZE if axes is None else _MIN_FONTSIZE))
    best = views
    for d in range(1, deepest + 1):  # deeper cuts need more room: stop at the first misfit
        cut = views if d == deepest else [v.truncate(d - 1) for v in views]  # d levels
        if _plan(cut, boxes, axes, titled)[0] < 1.0:
            return best if d > 1 else cut
        best = cut
    return views


def _draw(view, ax, fs, filled):
    """Draw ``view`` into ``ax``: ``(texts, n_slots, n_rows)``."""
    from matplotlib.collections import LineCollection

    root = view.root
    nodes = list(root.walk())
    pos, n_slots = _layout(root)  # n_slots: width in slots (may be fractional)
    n_rows = root.depth() + 1
    colours = node_colours(view) if filled else {}
    ax.set_axis_off()
    ax.set_xlim(-0.5, n_slots - 0.5)
    ax.set_ylim(n_rows - 0.5, -0.5)
    edges = [(pos[id(v)], pos[id(c)]) for v in nodes for c in v.children]
    if edges:
        ax.add_collection(LineCollection(edges, colors="0.45", linewidths=1.0, zorder=1))
    artists = []
    for v in nodes:
        x, y = pos[id(v)]
        fill = "0.8" if v.truncated else colours.get(v.node, "white")  # grey (...) as sklearn
        box = dict(boxstyle=f"round,pad={_PAD}", fc=fill, ec="0.3")
        artists.append(ax.text(x, y, _node_text(v), ha="center", va="center", fontsize=fs,
                               bbox=box, zorder=2))
    return artists, n_slots, n_rows


def _measure(panels, axes, renderer):
    """Per panel: how much its largest box overfills its slots (> 1: overlap,
    :data:`_FIT`) and the factors by which the figure should grow for the
    boxes to fill :data:`_TARGET` of them (width, height). The boxes of
    :func:`_largest` are measured with the texts' layout; nothing is rendered."""
    needs, grow_w, grow_h = [], [], []
    for ax, (artists, n_slots, n_rows) in zip(axes, panels):
        box_w = box_h = 0.0
        largest = set(_largest([a.get_text() for a in artists]))
        for a in artists:
            if a.get_text() not in largest:
                continue
            a.update_bbox_position_size(renderer)
            ext = a.get_bbox_patch().get_window_extent(renderer)
            box_w, box_h = max(box_w, ext.width), max(box_h, ext.height)
        ax_box = ax.get_window_extent(renderer)
        slot_w = ax_box.width / max(n_slots, 1)
        slot_h = ax_box.height / n_rows
        needs.append(max(box_w / (_FIT[0] * slot_w), box_h / (_FIT[1] * slot_h)))
        grow_w.append(box_w / (_TARGET[0] * slot_w))
        grow_h.append(box_h / (_TARGET[1] * slot_h))
    return needs, max(grow_w), max(grow_h)


def draw_views(views, *, titles=None, axes=None, fontsize=None, filled=False,
               max_depth=None):
    """Draw each of ``views`` into its own axes, titled ``titles``.

    Without ``axes``, one new figure holds a grid of them (one tree: the whole
    figure), sized to the largest tree up to :data:`MAX_FIGURE_INCHES`
    (beyond it the font shrinks); with ``axes`` (one per view), the font
    shrinks instead. ``max_depth``: an int cuts the views there, ``None``
    draws them whole, ``"auto"`` as :func:`_cut`. Returns the
    :class:`matplotlib.text.Text` of every node, view after view.
    """
    import matplotlib.pyplot as plt

    own = axes is None
    titled = titles is not None
    fs0 = 9.0 if fontsize is None else float(fontsize)
    n = len(views)
    fig = plt.figure() if own else axes[0].figure
    views = _cut(views, max_depth, fig, fs0, axes, titled)
    boxes = _Boxes(fig, fs0)
    scale, grid = _plan(views, boxes, axes, titled)
    for _ in range(3):  # text does not scale with the font (hinting): measure at the new one
        if scale >= 0.99 or boxes.fs <= _MIN_FONTSIZE:
            break
        boxes = _Boxes(fig, max(_MIN_FONTSIZE, boxes.fs * scale))
        scale, grid = _plan(views, boxes, axes, titled)
    fs = max(_MIN_FONTSIZE, boxes.fs * scale)
    if own:
        grid_rows, grid_cols = grid
        need = [boxes.need(v)[0] for v in views]
        cell_w = max(w for w, _ in need) * fs / boxes.fs / _CELL
        cell_h = (max(h for _, h in need) * fs / boxes.fs + _band(fs, titled)) / _CELL
        fig.set_size_inches(
            min(MAX_FIGURE_INCHES[0], max(_MIN_FIGURE[0], grid_cols * cell_w)),
            min(MAX_FIGURE_INCHES[1], max(_MIN_FIGURE[1], grid_rows * cell_h)))

        def rect(i):
            r, c = divmod(i, grid_cols)
            h_in = fig.get_size_inches()[1]
            cw, ch = 1.0 / grid_cols, 1.0 / grid_rows
            return [(c + (1 - _CELL) / 2) * cw, 1.0 - (r + 1 - (1 - _CELL) / 2) * ch,
                    _CELL * cw, max(_CELL * ch - _band(fs, titled) / h_in, 0.01 * ch)]

        axes = [fig.add_axes(rect(i)) for i in range(n)]
    panels = [_draw(v, ax, fs, filled) for v, ax in zip(views, axes)]
    heads = []
    if titled:
        heads = [ax.set_title(t, fontsize=fs + 1) for t, ax in zip(titles, axes)]
    cap_w, cap_h = MAX_FIGURE_INCHES
    for _ in range(4):  # check the drawn boxes; refit the figure or shrink the font
        needs, grow_w, grow_h = _measure(panels, axes, boxes.renderer)
        need = max(needs)
        if own:
            w_in, h_in = fig.get_size_inches()
            want_w = max(_MIN_FIGURE[0], w_in * grow_w)
            want_h = max(_MIN_FIGURE[1], h_in * grow_h)
            new_w, new_h = min(cap_w, want_w), min(cap_h, want_h)
            if need <= 1.0 and new_w > 0.9 * w_in and new_h > 0.9 * h_in:
                break  # no overlap, and the figure not 10% too large
            fig.set_size_inches(new_w, new_h)
            for i, ax in enumerate(axes):  # the title bands keep their height
                ax.set_position(rect(i))
            over = max(want_w / cap_w, want_h / cap_h)
            if over <= 1.0:
                continue
            shrink = 1.0 / over  # the figure is capped: the boxes shrink instead
        elif need <= 1.0:
            break
        else:
            shrink = 0.95 / need
        if fs <= _MIN_FONTSIZE:
            break
        fs = max(_MIN_FONTSIZE, fs * shrink)
        for artists, _, _ in panels:
            for a in artists:
                a.set_fontsize(fs)
        for head in heads:
            head.set_fontsize(fs + 1)
    if need > 1.0:
        warnings.warn(_overlap_message(needs, panels, titles, own, fs, max_depth),
                      UserWarning)
    return [a for artists, _, _ in panels for a in artists]


def _overlap_message(needs, panels, titles, own, fs, max_depth):
    """The warning of :func:`draw_views` where boxes overlap: for one tree,
    where and how large it is; for several (``titles``), how many of them
    overlap, the largest, what was drawn and how to draw them all."""
    worst = int(np.argmax(needs))
    _, n_slots, n_rows = panels[worst]
    cap_w, cap_h = MAX_FIGURE_INCHES
    if titles is None:
        if own:
            where = f"a figure of at most {cap_w:g} x {cap_h:g} inches is too small to draw"
            hint = "max_depth (an int, or 'auto'), or ax= axes of a larger figure"
        else:
            where, hint = "the axes are too small to draw", "a larger figure, max_depth"
        return (f"plot_tree: {where} {n_slots:.0f} leaf slots and {n_rows} levels "
                f"without overlapping boxes; use {hint}.")
    n, k = len(needs), sum(need > 1.0 for need in needs)
    where = (f"a figure of at most {cap_w:g} x {cap_h:g} inches is" if own
             else f"the {n} axes given are")
    if max_depth == "auto":
        drawn = "cut by max_depth='auto' (at least the root's split each)"
    elif max_depth is None:
        drawn = "whole (max_depth=None)"
    else:
        drawn = f"to max_depth={max_depth}"
    if own:
        hint = ("max_depth='auto' (every tree cut to the levels that fit), an int "
                "max_depth, or tree_index=i (tree i alone)")
    else:
        hint = ("ax=None (a new figure sized to the trees), axes of a larger figure "
                "(plt.subplots(..., figsize=(width, height))), "
                + ("" if max_depth == "auto" else "a smaller max_depth, ")
                + "or tree_index=i (tree i alone, into one axes)")
    return (f"plot_tree: {where} too small for {k} of the {n} trees: their boxes "
            f"overlap (most crowded: {titles[worst]}, {n_slots:.0f} leaf slots and "
            f"{n_rows} levels). All {n} trees were drawn, {drawn}, at {fs:.3g} points. "
            f"To draw them without overlap, use {hint}.")
