"""Dataset tests never touch the network: every test gets a network function that fails,
and a private cache directory."""

import urllib.error

import pytest

from kerasrs.datasets import files


@pytest.fixture(autouse=True)
def offline(monkeypatch, tmp_path):
    def no_network(url, timeout=60):
        raise urllib.error.URLError(f"network disabled in tests ({url})")

    monkeypatch.setattr(files, "_open_url", no_network)
    monkeypatch.setenv("KERASRS_HOME", str(tmp_path / "home"))
