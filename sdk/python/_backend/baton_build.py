"""The package's build backend (PEP 517), with the standard library only.

The SDK has no dependencies, and building it needs none either: pip finds
this backend in the source tree (``backend-path``) and installs nothing
first, so ``pip install ./sdk/python`` works without a package index. It
builds a pure-Python wheel of ``src/baton``, an editable wheel that points
at ``src``, and a source archive.
"""

from __future__ import annotations

import base64
import hashlib
import io
import re
import tarfile
import zipfile
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parents[1]
DIST = "baton_sdk"
TAG = "py3-none-any"


def _project() -> dict[str, str]:
    """The [project] fields the metadata needs, read from pyproject.toml."""
    text = (ROOT / "pyproject.toml").read_text()
    section = text.split("[project]", 1)[1].split("\n[", 1)[0]
    fields = {}
    for key in ("name", "version", "description", "requires-python"):
        m = re.search(rf'^{key}\s*=\s*"([^"]*)"', section, re.M)
        if m is None:
            raise RuntimeError(f"pyproject.toml: [project] has no {key}")
        fields[key] = m.group(1)
    return fields


def _metadata() -> str:
    p = _project()
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {p['name']}\n"
        f"Version: {p['version']}\n"
        f"Summary: {p['description']}\n"
        f"Requires-Python: {p['requires-python']}\n"
        "License: Apache-2.0\n"
        "Classifier: Programming Language :: Python :: 3\n"
        "Classifier: Typing :: Typed\n"
        "Description-Content-Type: text/markdown\n"
        "\n" + (ROOT / "README.md").read_text()
    )


def _dist_info() -> str:
    return f"{DIST}-{_project()['version']}.dist-info"


def _wheel_file() -> str:
    return f"Wheel-Version: 1.0\nGenerator: baton_build\nRoot-Is-Purelib: true\nTag: {TAG}\n"


def _package_files() -> list[tuple[str, bytes]]:
    src = ROOT / "src"
    files = sorted(p for p in (src / "baton").rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return [(p.relative_to(src).as_posix(), p.read_bytes()) for p in files]


def _write_wheel(directory: str, files: list[tuple[str, bytes]]) -> str:
    info = _dist_info()
    files = files + [(f"{info}/METADATA", _metadata().encode()), (f"{info}/WHEEL", _wheel_file().encode())]
    record = []
    name = f"{DIST}-{_project()['version']}-{TAG}.whl"
    with zipfile.ZipFile(Path(directory, name), "w", zipfile.ZIP_DEFLATED) as whl:
        for path, data in files:
            # A fixed time stamp: the same source makes the same wheel.
            whl.writestr(zipfile.ZipInfo(path, (1980, 1, 1, 0, 0, 0)), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(data)}")
        record.append(f"{info}/RECORD,,")
        whl.writestr(zipfile.ZipInfo(f"{info}/RECORD", (1980, 1, 1, 0, 0, 0)), "\n".join(record) + "\n")
    return name


def get_requires_for_build_wheel(config_settings: Optional[dict[str, Any]] = None) -> list[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[dict[str, Any]] = None) -> list[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[dict[str, Any]] = None) -> list[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: Optional[dict[str, Any]] = None) -> str:
    info = Path(metadata_directory, _dist_info())
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(_metadata())
    (info / "WHEEL").write_text(_wheel_file())
    return info.name


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory: str, config_settings: Optional[dict[str, Any]] = None,
                metadata_directory: Optional[str] = None) -> str:
    return _write_wheel(wheel_directory, _package_files())


def build_editable(wheel_directory: str, config_settings: Optional[dict[str, Any]] = None,
                   metadata_directory: Optional[str] = None) -> str:
    # A .pth file puts the checkout's src on the path: edits take effect at once.
    return _write_wheel(wheel_directory, [(f"{DIST}.pth", (str(ROOT / "src") + "\n").encode())])


def build_sdist(sdist_directory: str, config_settings: Optional[dict[str, Any]] = None) -> str:
    base = f"{DIST}-{_project()['version']}"
    name = base + ".tar.gz"
    paths = [ROOT / "pyproject.toml", ROOT / "README.md"] + sorted(
        p for d in ("src", "_backend", "tests") for p in (ROOT / d).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts)
    with tarfile.open(Path(sdist_directory, name), "w:gz") as tar:
        for p in paths:
            tar.add(p, arcname=f"{base}/{p.relative_to(ROOT).as_posix()}", recursive=False)
        pkg = _metadata().encode()
        ti = tarfile.TarInfo(f"{base}/PKG-INFO")
        ti.size = len(pkg)
        tar.addfile(ti, io.BytesIO(pkg))
    return name
