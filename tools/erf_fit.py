"""Print web/kernels/erf.c's coefficient tables: least-squares polynomial fits, in double, to Python's math.erf
and math.erfc on Chebyshev nodes.  |x| <= 1: erf(x) / x as a degree-10 polynomial in x * x; 1 < |x| < 4: erfc on
six pieces of width 1/2, each a degree-12 polynomial in t = 4 (|x| - centre), t in [-1, 1].  It also prints the
fits' largest errors on a fine grid (relative for the first, absolute for the pieces).

    python3 tools/erf_fit.py
"""
import math

import numpy as np

P = np.polynomial.polynomial
SMALL_DEGREE, PIECE_DEGREE, PIECES, NODES = 10, 12, 6, 400


def chebyshev_nodes(lo: float, hi: float) -> np.ndarray:
    return lo + (hi - lo) * (np.cos(np.pi * (np.arange(NODES) + 0.5) / NODES) + 1) / 2


def erf_over_x(u: np.ndarray) -> np.ndarray:
    return np.array([math.erf(math.sqrt(v)) / math.sqrt(v) if v else 2 / math.sqrt(math.pi) for v in u])


def fits():
    small = P.polyfit(chebyshev_nodes(0.0, 1.0), erf_over_x(chebyshev_nodes(0.0, 1.0)), SMALL_DEGREE)
    pieces = []
    for k in range(PIECES):
        centre = 1.25 + 0.5 * k
        t = chebyshev_nodes(-1.0, 1.0)
        pieces.append(P.polyfit(t, [math.erfc(centre + v / 4) for v in t], PIECE_DEGREE))
    return small, pieces


def c_array(values) -> str:
    return "{" + ", ".join(repr(float(v)) for v in values) + "}"


def main() -> None:
    small, pieces = fits()
    x = np.linspace(1e-6, 1.0, 100001)
    worst_small = np.max(np.abs(x * P.polyval(x * x, small) / [math.erf(v) for v in x] - 1))
    t = np.linspace(-1.0, 1.0, 20001)
    worst_pieces = max(np.max(np.abs(P.polyval(t, c) - [math.erfc(1.25 + 0.5 * k + v / 4) for v in t]))
                       for k, c in enumerate(pieces))
    print(f"/* largest relative error of SMALL {worst_small:.1e}, absolute of PIECES {worst_pieces:.1e} */")
    print(f"static const double SMALL[{SMALL_DEGREE + 1}] = {c_array(small)};")
    print(f"static const double PIECES[{PIECES}][{PIECE_DEGREE + 1}] = {{")
    print(",\n".join("  " + c_array(c) for c in pieces))
    print("};")


if __name__ == "__main__":
    main()
