"""A safe wire format for values coming back from a learner's kernel.

The grader never unpickles anything produced by submitted code: unpickling can run
arbitrary code in the grader. A return value is instead turned into plain JSON by
:func:`encode` inside the kernel (numbers, strings, lists, tuples, dicts with string
keys, tensors and arrays as dtype + shape + base64 bytes, dataclasses as their
fields) and rebuilt by :func:`decode` in the grader, which only ever allocates
tensors of allow-listed dtypes with consistent sizes. Anything else arrives as an
:class:`~sts_lib.exercises._core.Opaque` naming its type, so the checker can say
"expected a tensor, got a Foo". Arguments travel the other way as a pickle, which
is harmless: the grader produced it.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import numbers

import numpy as np
import torch

from ..exercises import Opaque

MAX_BYTES = 16 * 2**20  # refuse to send or rebuild more than this from one return value
_MAX_DEPTH = 12
_DTYPES = {"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"}


class ValueTooLarge(ValueError):
    """An array in a return value is larger than the grader reads (raised in the kernel)."""


def _array(kind: str, a: np.ndarray) -> dict:
    if a.nbytes > MAX_BYTES:
        raise ValueTooLarge(a.nbytes)
    a = np.array(a, dtype=a.dtype.newbyteorder("="), order="C", copy=True)  # keeps 0-d arrays 0-d
    return {kind: {"dtype": str(a.dtype), "shape": list(a.shape), "data": base64.b64encode(a.tobytes()).decode()}}


def encode(obj, _depth: int = 0):
    """A JSON-able description of ``obj`` (runs in the learner's kernel)."""
    if _depth > _MAX_DEPTH:
        return {"__object__": type(obj).__name__}
    if obj is None or type(obj) in (bool, int, str):
        return obj
    if isinstance(obj, np.generic):  # NumPy scalars (np.float64 is also a float)
        return encode(obj.item(), _depth + 1)
    if isinstance(obj, str):
        return str(obj)
    if isinstance(obj, numbers.Integral):
        return int(obj)
    if isinstance(obj, numbers.Real):  # float, Fraction, Decimal and their subclasses
        return {"__float__": repr(float(obj))}  # JSON has no nan/inf; repr(float) round-trips
    if isinstance(obj, numbers.Complex):
        return {"__object__": "complex number"}
    if isinstance(obj, torch.Tensor):
        t = obj.detach().cpu()
        if t.layout != torch.strided:
            t = t.to_dense()
        if t.dtype == torch.bfloat16:
            t = t.float()
        if str(t.dtype).replace("torch.", "") not in _DTYPES:
            return {"__object__": f"torch.Tensor of dtype {str(t.dtype).replace('torch.', '')}"}
        return _array("__tensor__", t.contiguous().numpy())
    if isinstance(obj, np.ndarray):
        obj = obj.astype(obj.dtype.newbyteorder("="), copy=False)
        if str(obj.dtype) not in _DTYPES:
            return {"__object__": f"numpy array of dtype {obj.dtype}"}
        return _array("__ndarray__", obj)
    if isinstance(obj, tuple):
        return {"__tuple__": [encode(v, _depth + 1) for v in obj]}
    if isinstance(obj, list):
        return [encode(v, _depth + 1) for v in obj]
    if isinstance(obj, dict):
        if all(isinstance(k, str) for k in obj):
            return {"__dict__": {k: encode(v, _depth + 1) for k, v in obj.items()}}
        return {"__object__": "dict"}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = {f.name: encode(getattr(obj, f.name, None), _depth + 1) for f in dataclasses.fields(obj)}
        return {"__object__": type(obj).__name__, "fields": fields}
    return {"__object__": type(obj).__name__}


def dumps(obj) -> str:
    """``encode`` then JSON then base64 (plain ASCII, safe to pass through any repr)."""
    return base64.b64encode(json.dumps(obj).encode()).decode()


class WireError(ValueError):
    """The kernel sent something that is not a valid encoded value."""


def _rebuild(spec: dict, torch_out: bool):
    if not isinstance(spec, dict) or set(spec) != {"dtype", "shape", "data"}:
        raise WireError("malformed array")
    dtype, shape = str(spec["dtype"]), spec["shape"]
    if dtype not in _DTYPES or not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
        raise WireError("bad array header")
    data = base64.b64decode(spec["data"], validate=True)
    npdt = np.dtype(dtype)
    if len(data) != int(np.prod(shape, dtype=np.int64)) * npdt.itemsize:
        raise WireError("array size does not match its shape")
    a = np.frombuffer(data, dtype=npdt).reshape(shape).copy()
    return torch.from_numpy(a) if torch_out else a


def decode(obj, _depth: int = 0):
    """Rebuild a value from :func:`encode`'s output (runs in the grader)."""
    if _depth > _MAX_DEPTH + 2:
        raise WireError("value nested too deeply")
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, list):
        return [decode(v, _depth + 1) for v in obj]
    if not isinstance(obj, dict) or len(obj) not in (1, 2):
        raise WireError("malformed value")
    if "__float__" in obj:
        if not isinstance(obj["__float__"], str) or len(obj["__float__"]) > 40:
            raise WireError("malformed float")
        return float(obj["__float__"])
    if "__tensor__" in obj:
        return _rebuild(obj["__tensor__"], True)
    if "__ndarray__" in obj:
        return _rebuild(obj["__ndarray__"], False)
    if "__tuple__" in obj:
        return tuple(decode(v, _depth + 1) for v in obj["__tuple__"])
    if "__dict__" in obj:
        return {str(k): decode(v, _depth + 1) for k, v in obj["__dict__"].items()}
    if "__object__" in obj:
        fields = obj.get("fields") or {}
        return Opaque(str(obj["__object__"])[:80], {str(k): decode(v, _depth + 1) for k, v in fields.items()})
    raise WireError("unknown value kind")


def safe_decode(obj):
    """:func:`decode`, with every way a kernel's value can be malformed turned into a WireError.

    >>> import numpy as np
    >>> safe_decode(loads(dumps(encode(np.float64(0.25))))), safe_decode(encode(np.array(2.0))).shape
    (0.25, ())
    """
    try:
        return decode(obj)
    except WireError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError, OverflowError) as e:
        raise WireError(f"malformed value ({type(e).__name__})") from None


def loads(text: str, limit: int = MAX_BYTES):
    """Inverse of :func:`dumps` (plain JSON, still to :func:`decode`), with a size limit.

    >>> import torch
    >>> out = decode(loads(dumps(encode((torch.eye(2), 3.5, None, [1, "a"])))))
    >>> out[0].tolist(), out[1:]
    ([[1.0, 0.0], [0.0, 1.0]], (3.5, None, [1, 'a']))
    """
    if not isinstance(text, str) or len(text) > limit * 4 // 3 + 16:
        raise WireError("value too large or not text")
    try:
        raw = json.loads(base64.b64decode(text, validate=True))
    except (ValueError, TypeError, RecursionError, binascii.Error) as e:
        raise WireError(f"not a valid encoded value ({type(e).__name__})") from None
    return raw
