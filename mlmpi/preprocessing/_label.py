"""LabelEncoder with the classes of every rank's labels."""

import sklearn.preprocessing as sk
from sklearn.utils.validation import column_or_1d

from .._array import back_like, is_device_array, to_host
from .._contract import collective_method
from .._sklearn_compat import _fit_context
from ..base import DistributedEstimatorMixin
from ..comms import Comms
from ..utils.stats import global_classes


class LabelEncoder(DistributedEstimatorMixin, sk.LabelEncoder):
    """Encode target labels as 0..n_classes-1 with the classes of every rank.

    scikit-learn's :class:`sklearn.preprocessing.LabelEncoder` for
    row-sharded labels: ``classes_`` is the sorted union of the labels of
    every rank (one allgather of each rank's distinct labels), so a class
    seen on one rank only gets the same code everywhere. ``fit`` and
    ``fit_transform`` are collective; ``transform`` and
    ``inverse_transform`` are local (an unseen label raises scikit-learn's
    error on the rank that holds it).

    Parameters
    ----------
    comms : Comms, default=None
        The ranks that share the labels; None means :func:`mlmpi.get_comms`.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Sorted classes of every rank's labels. Replicated (host).

    Notes
    -----
    ``fit`` and ``fit_transform`` are collective: every rank calls them, with
    its own rows. Fitted attributes are replicated (the same on every rank).
    ``transform`` and ``inverse_transform`` are local: no communication.

    Examples
    --------
    >>> from mlmpi.preprocessing import LabelEncoder
    >>> LabelEncoder().fit(["paris", "tokyo", "paris", "amsterdam"]).classes_
    array(['amsterdam', 'paris', 'tokyo'], dtype='<U9')
    """

    _parameter_constraints: dict = {"comms": [None, Comms]}  # scikit-learn's has none

    def __init__(self, *, comms=None):
        self.comms = comms

    @collective_method
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, y):
        """Find the classes of every rank's labels.

        This method is collective.

        Parameters
        ----------
        y : array-like of shape (n_local,)
            This rank's labels (may be empty).

        Returns
        -------
        self : object
            Fitted label encoder.
        """
        classes = global_classes(
            y, self._get_comms(), check=lambda labels: column_or_1d(labels, warn=True)
        ).classes
        if not classes.size:
            raise ValueError("y has no labels on any rank.")
        self.classes_ = classes
        return self

    @collective_method
    def fit_transform(self, y):
        """Fit on every rank's labels and encode this rank's labels.

        This method is collective.

        Parameters
        ----------
        y : array-like of shape (n_local,)
            This rank's labels (may be empty).

        Returns
        -------
        y : ndarray of shape (n_local,)
            This rank's encoded labels (local).
        """
        return self.fit(y).transform(y)

    def transform(self, y):
        """Encode this rank's labels (no communication).

        Parameters
        ----------
        y : array-like of shape (n_local,)
            This rank's labels.

        Returns
        -------
        y : array of shape (n_local,)
            Their codes; CuPy labels are encoded on the host and the codes go
            back to the device.
        """
        return back_like(super().transform(to_host(y) if is_device_array(y) else y), y)

    def inverse_transform(self, y):
        """Labels of this rank's codes (no communication).

        Parameters
        ----------
        y : array-like of shape (n_local,)
            This rank's codes.

        Returns
        -------
        y_original : array of shape (n_local,)
            Their labels; on the device for CuPy codes and numeric classes.
        """
        return back_like(super().inverse_transform(to_host(y) if is_device_array(y) else y), y)
