"""ONNX through ``as_sklearn()``: skl2onnx converts every mlmpi model whose
scikit-learn class it converts, and onnxruntime predicts as the model does.

The models are those of ``tests/mpi_cases/export_cases.py`` (fitted in one
process here: ``export_cases`` proves ``as_sklearn()`` gives the same
outputs at 1-3 ranks). Where skl2onnx refuses the converted model, it must
refuse scikit-learn's own estimator of that class too (fitted on the same
rows): a limit of skl2onnx, not of the conversion.
"""

import warnings

import export_cases  # tests/mpi_cases, on the path from conftest.py
import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.base import clone, is_classifier

OPSET = 18


def _inputs(kind):
    X = export_cases.DATA[kind][0]
    return X.astype(np.int64) if kind == "labels" else X.astype(np.float32)


def _convert(model, X):
    # Imported by the tests that convert (skipped without it), not while
    # collecting: skl2onnx takes seconds to import, in every test worker.
    skl2onnx = pytest.importorskip("skl2onnx")
    options = {"zipmap": False} if is_classifier(model) else None
    return skl2onnx.to_onnx(model, X[:1], target_opset=OPSET, options=options)


def _fit(make, kind):
    X, y = export_cases.DATA[kind]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make().fit(X) if y is None else make().fit(X, y)


@pytest.mark.parametrize(
    "name, make, kind, methods",
    export_cases.REPLICATED,
    ids=[e[0] for e in export_cases.REPLICATED],
)
def test_onnxruntime_predicts_as_the_model(name, make, kind, methods):
    model = _fit(make, kind).as_sklearn()
    X = _inputs(kind)
    try:
        onx = _convert(model, X)
    except Exception as exc:  # skl2onnx's own limit: scikit-learn's estimator fails alike
        native = clone(model)
        native = native.fit(*[a for a in export_cases.DATA[kind] if a is not None])
        with pytest.raises(type(exc)):
            _convert(native, X)
        pytest.skip(f"skl2onnx does not convert scikit-learn's {name}: {str(exc)[:120]}")
    onnxruntime = pytest.importorskip("onnxruntime")
    session = onnxruntime.InferenceSession(
        onx.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    outputs = session.run(None, {session.get_inputs()[0].name: X})
    expected = getattr(model, methods[0])(export_cases.DATA[kind][0])
    found = np.asarray(outputs[0]).reshape(np.shape(expected))
    if np.asarray(expected).dtype.kind in "fc":  # float32 inside the ONNX graph
        scale = max(1.0, float(np.max(np.abs(expected))))
        assert_allclose(found, expected, rtol=1e-5, atol=1e-5 * scale)
    else:
        np.testing.assert_array_equal(found, expected)
    if "predict_proba" in methods:
        assert_allclose(outputs[1], model.predict_proba(export_cases.DATA[kind][0]), atol=1e-5)
