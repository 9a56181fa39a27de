"""gpulab: one-command GPU-sharing labs on kind with mock GPUs."""

__version__ = "0.1.0"
