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

__all__ = ["draw_view", "draw_views"]

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


def _first_size(view, fs):
    """First guess (inches) of a figure holding ``view`` alone, refined after
    measuring the drawn boxes."""
    root = view.root
    _, n_slots = _layout(root)
    texts = [_node_text(v) for v in root.walk()]
    chars = max(len(line) for t in texts for line in t.split("\n"))
    n_lines = max(t.count("\n") + 1 for t in texts)
    width = max(4.0, n_slots * (0.6 * fs / 72 * chars + 0.4))
    height = max(2.5, (root.depth() + 1) * (1.3 * fs / 72 * n_lines + 0.5))
    return width, height


def _draw(view, ax, fs, filled):
    """Draw ``view`` into ``ax``: ``(texts, n_slots, n_rows)``."""
    root = view.root
    nodes = list(root.walk())
    pos, n_slots = _layout(root)  # n_slots: width in slots (may be fractional)
    n_rows = root.depth() + 1
    colours = node_colours(view) if filled else {}
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
        artists.append(ax.text(x, y, _node_text(v), ha="center", va="center", fontsize=fs,
                               bbox=box, zorder=2))
    return artists, n_slots, n_rows


def _grid(n, cell_w, cell_h):
    """``(n_rows, n_cols)`` of a grid of ``n`` cells of ``cell_w x cell_h``
    inches, as close to square as the cells allow."""
    n_cols = int(min(n, max(1, round(np.sqrt(n * cell_h / cell_w)))))
    n_rows = -(-n // n_cols)
    return n_rows, -(-n // n_rows)


def draw_view(view, *, ax=None, fontsize=None, filled=False):
    """Draw ``view``; return one :class:`matplotlib.text.Text` per node."""
    return draw_views([view], axes=None if ax is None else [ax], fontsize=fontsize,
                      filled=filled)


def draw_views(views, *, titles=None, axes=None, fontsize=None, filled=False):
    """Draw each of ``views`` into its own axes, titled ``titles``.

    Without ``axes``, one new figure holds a grid of them (one tree: the whole
    figure), its size fitted to the largest tree; with ``axes`` (one per
    view), the font shrinks instead. Returns the
    :class:`matplotlib.text.Text` of every node, view after view.
    """
    import matplotlib.pyplot as plt

    own = axes is None
    fs = 9.0 if fontsize is None else float(fontsize)
    n = len(views)
    band = 0.0 if titles is None else (1.6 * fs + 8.0) / 72  # title height, inches
    if own:
        sizes = [_first_size(v, fs) for v in views]
        cell_w = max(w for w, _ in sizes)
        cell_h = max(h for _, h in sizes) + band
        grid_rows, grid_cols = _grid(n, cell_w, cell_h)
        fig = plt.figure(figsize=(min(_MAX_INCHES, grid_cols * cell_w),
                                  min(_MAX_INCHES, grid_rows * cell_h)))

        def rect(i):
            r, c = divmod(i, grid_cols)
            h_in = fig.get_size_inches()[1]
            cw, ch = 1.0 / grid_cols, 1.0 / grid_rows
            return [(c + 0.01) * cw, 1.0 - (r + 0.99) * ch, 0.98 * cw,
                    max(0.98 * ch - band / h_in, 0.01 * ch)]

        axes = [fig.add_axes(rect(i)) for i in range(n)]
    fig = axes[0].figure
    panels = [_draw(v, ax, fs, filled) for v, ax in zip(views, axes)]
    heads = []
    if titles is not None:
        heads = [ax.set_title(t, fontsize=fs + 1) for t, ax in zip(titles, axes)]
    need = worst = np.inf
    for _ in range(8):  # measure, then widen the slots (own figure) or shrink the font
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        needs, grow_w, grow_h = [], [], []
        for ax, (artists, n_slots, n_rows) in zip(axes, panels):
            ext = [a.get_bbox_patch().get_window_extent(renderer) for a in artists]
            box_w = max(e.width for e in ext)
            box_h = max(e.height for e in ext)
            ax_box = ax.get_window_extent(renderer)
            slot_w = ax_box.width / max(n_slots, 1)
            slot_h = ax_box.height / n_rows
            needs.append(max(box_w / (0.92 * slot_w), box_h / (0.8 * slot_h)))
            # Own figure: slots just wider than the widest box (grow or shrink).
            grow_w.append(box_w / (0.88 * slot_w))  # a margin below the bounds
            grow_h.append(box_h / (0.76 * slot_h))
        worst = int(np.argmax(needs))
        need = needs[worst]
        w_in, h_in = fig.get_size_inches()
        new_w = max(3.0, w_in * max(grow_w))
        new_h = max(2.0, h_in * max(grow_h))
        if own and max(new_w, new_h) <= _MAX_INCHES:
            if need <= 1.0 and new_w > 0.9 * w_in and new_h > 0.9 * h_in:
                break
            fig.set_size_inches(new_w, new_h)
            for i, ax in enumerate(axes):  # the title bands keep their height
                ax.set_position(rect(i))
        elif need <= 1.0:
            break
        elif fs <= _MIN_FONTSIZE:
            break
        else:
            fs = max(_MIN_FONTSIZE, fs / need * 0.95)
            for artists, _, _ in panels:
                for a in artists:
                    a.set_fontsize(fs)
            for head in heads:
                head.set_fontsize(fs + 1)
    if need > 1.0:
        _, n_slots, n_rows = panels[worst]
        if titles is None:
            which, hint = "", "a larger figure, max_depth, or ax=None (a figure sized to the tree)"
        else:
            which, hint = f" ({titles[worst]})", "larger axes, max_depth, or tree_index=i"
        warnings.warn(
            f"plot_tree: the axes are too small to draw {n_slots:.0f} leaf slots and "
            f"{n_rows} levels{which} without overlapping boxes; use {hint}.",
            UserWarning,
        )
    return [a for artists, _, _ in panels for a in artists]
