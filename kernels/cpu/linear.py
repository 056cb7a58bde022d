"""Host kernels of the linear models (numba): the rows of the augmented
least-squares block, written in one loop.

NumPy's two broadcast subtractions into the strided columns of a block (and
the weights' scaling) cost a third of the moments' pass over 64 features:
0.08 s of 0.24 s per million rows, against 0.05 s for this loop, and the
symmetric product that follows (``kernels/shared/linear.py``) is the rest.
"""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def shifted_rows(X, Y, weight, x_shift, y_shift, out):
    """``out[i] = √w_i [X[i] - x_shift, Y[i] - y_shift, 1]`` for every row ``i``.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    Y : ndarray of shape (n, t)
    weight : ndarray of shape (n,), or None (weights of one)
    x_shift, y_shift : float64 ndarrays of shape (d,), (t,)
    out : float64 ndarray of shape (n, d + t + 1); overwritten.

    Examples
    --------
    >>> import numpy as np
    >>> out = np.empty((2, 3))
    >>> shifted_rows(np.array([[1.0], [3.0]]), np.array([[2.0], [6.0]]), None,
    ...              np.array([2.0]), np.array([4.0]), out)
    >>> out
    array([[-1., -2.,  1.],
           [ 1.,  2.,  1.]])
    """
    n, d = X.shape
    t = Y.shape[1]
    for i in range(n):
        root = 1.0 if weight is None else np.sqrt(np.float64(weight[i]))
        for k in range(d):
            out[i, k] = (np.float64(X[i, k]) - x_shift[k]) * root
        for k in range(t):
            out[i, d + k] = (np.float64(Y[i, k]) - y_shift[k]) * root
        out[i, d + t] = root
