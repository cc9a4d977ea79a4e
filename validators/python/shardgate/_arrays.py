"""numpy arrays from numpy or torch tensors (torch is never imported by shardgate)."""

import numpy as np


def as_numpy(tensor, what="tensor"):
    """A numpy array holding `tensor`: numpy arrays as they are, torch tensors detached and moved
    to the CPU (bfloat16, which numpy lacks, widened to float32), anything array-like through
    numpy.asarray."""
    if isinstance(tensor, np.ndarray):
        return tensor
    if hasattr(tensor, "detach") and hasattr(tensor, "cpu"):  # a torch.Tensor
        t = tensor.detach().cpu()
        if str(t.dtype) == "torch.bfloat16":
            t = t.float()
        return t.numpy()
    try:
        return np.asarray(tensor)
    except Exception as e:  # noqa: BLE001 - reported with the name of the argument
        raise TypeError(f"{what}: cannot convert {type(tensor).__name__} to a numpy array: {e}")
