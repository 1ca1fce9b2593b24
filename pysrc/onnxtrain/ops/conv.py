"""Kernels: conv."""
from __future__ import annotations

import numpy as np

from .registry import kernel
