"""Matplotlib drawing of a :class:`~._tree_view.TreeView` without overlaps.

Layout: a tidy tree layout (see :func:`_layout`): leaves in their
left-to-right (in-order) order, every split at the midpoint of its children,
one row per level, subtrees packed so that two nodes of one row are at least
one slot apart; boxes no wider than a slot never overlap. The boxes are drawn, measured, and the slots widened to
the widest box: a figure this function creates grows with the number of
leaves and the depth (font size fixed); on axes you pass, the font shrinks
instead.
"""

import warnings

import numpy as np

from ._tree_view import node_colours

__all__ = ["draw_view"]

#: Largest figure side (inches) this module creates; beyond it the font shrinks.
_MAX_INCHES = 300.0
#: Smallest font size (points) the fitting into given axes goes down to.
_MIN_FONTSIZE = 3.0


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
        contours, offsets = [], []
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
            contours.append(cont)
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
    if v.is_leaf:
        lines = [v.label]
    else:
        rows, thr = v.split
        lines = list(rows[:-1]) + [f"{rows[-1]} <= {thr}"]
    return "\n".join(lines + v.info_lines())


def draw_view(view, *, ax=None, fontsize=None, filled=False):
    """Draw ``view``; return one :class:`matplotlib.text.Text` per node."""
    import matplotlib.pyplot as plt

    root = view.root
    nodes = list(root.walk())
    pos, n_slots = _layout(root)  # n_slots: width in slots (may be fractional)
    n_rows = root.depth() + 1
    texts = {id(v): _node_text(v) for v in nodes}
    colours = node_colours(view) if filled else {}
    own = ax is None
    fs = 9.0 if fontsize is None else float(fontsize)
    if own:
        # First guess of the size, refined after measuring the drawn boxes.
        chars = max(len(line) for t in texts.values() for line in t.split("\n"))
        n_lines = max(t.count("\n") + 1 for t in texts.values())
        width = min(_MAX_INCHES, max(4.0, n_slots * (0.6 * fs / 72 * chars + 0.4)))
        height = min(_MAX_INCHES, max(2.5, n_rows * (1.3 * fs / 72 * n_lines + 0.5)))
        fig = plt.figure(figsize=(width, height))
        ax = fig.add_axes([0.01, 0.01, 0.98, 0.98])
    fig = ax.figure
    ax.set_axis_off()
    ax.set_xlim(-0.5, n_slots - 0.5)
    ax.set_ylim(n_rows - 0.5, -0.5)
    for v in nodes:
        x, y = pos[id(v)]
        for c in v.children:
            cx, cy = pos[id(c)]
            ax.plot([x, cx], [y, cy], color="0.45", linewidth=1.0, zorder=1)
    artists = []
    for v in nodes:
        x, y = pos[id(v)]
        box = dict(boxstyle="round,pad=0.3", fc=colours.get(v.node, "white"), ec="0.3")
        artists.append(ax.text(x, y, texts[id(v)], ha="center", va="center", fontsize=fs,
                               bbox=box, zorder=2))
    need = np.inf
    for _ in range(8):  # measure, then widen the slots (own figure) or shrink the font
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        ext = [a.get_bbox_patch().get_window_extent(renderer) for a in artists]
        box_w = max(e.width for e in ext)
        box_h = max(e.height for e in ext)
        ax_box = ax.get_window_extent(renderer)
        slot_w = ax_box.width / max(n_slots, 1)
        slot_h = ax_box.height / n_rows
        need = max(box_w / (0.92 * slot_w), box_h / (0.8 * slot_h))
        w_in, h_in = fig.get_size_inches()
        # Own figure: slots just wider than the widest box (grow or shrink).
        new_w = max(3.0, w_in * box_w / (0.88 * slot_w))  # a margin below the bounds
        new_h = max(2.0, h_in * box_h / (0.76 * slot_h))
        if own and max(new_w, new_h) <= _MAX_INCHES:
            if need <= 1.0 and new_w > 0.9 * w_in and new_h > 0.9 * h_in:
                break
            fig.set_size_inches(new_w, new_h)
        elif need <= 1.0:
            break
        elif fs <= _MIN_FONTSIZE:
            break
        else:
            fs = max(_MIN_FONTSIZE, fs / need * 0.95)
            for a in artists:
                a.set_fontsize(fs)
    if need > 1.0:
        warnings.warn(
            f"plot_tree: the axes are too small to draw {n_slots:.0f} leaf slots and "
            f"{n_rows} levels without overlapping boxes; use a larger figure, max_depth, "
            "or ax=None (a figure sized to the tree).",
            UserWarning,
        )
    return artists

