"""Upstream manifests (MetalLB, Calico) fetched once per pinned URL and cached on disk."""

from __future__ import annotations

import hashlib
import urllib.error
import urllib.request

from gpulab.errors import HostError
from gpulab.paths import cache_dir

__all__ = ["fetch_manifest"]


def fetch_manifest(url: str, *, timeout: float = 60) -> str:
    """The manifest text; pinned URLs never change, so a cached copy is reused."""
    key = hashlib.sha256(url.encode()).hexdigest()[:32]
    cached = cache_dir() / "manifests" / f"{key}.yaml"
    if cached.is_file():
        return cached.read_text(encoding="utf-8")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            text: str = response.read().decode("utf-8")
    except (urllib.error.URLError, OSError, UnicodeDecodeError) as err:
        raise HostError(f"could not download {url}: {err}",
                        hint="check the internet connection and retry gpulab up") from None
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_suffix(".partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(cached)
    return text
