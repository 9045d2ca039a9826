"""LatentTree: pruned binary trees learned by argmin differentiation.

Zantedeschi, Kusner and Niculae (2021), "Learning Binary Decision Trees by
Argmin Differentiation". The estimators are not yet available; this package
currently holds only the private tree-isotonic (PAV) kernel wrapper
(``_pav``) and exports nothing.
"""
