"""weights="imagenet" asks for the file Keras asks for: the same name, URL and published hash
(tests/fixtures/keras_application_files.json, written by
tests/fixtures/make_keras_application_files.py with Keras's get_file intercepted). Nothing is
downloaded here either."""

import json
import pathlib
import warnings

import pytest

import kerasrs
from kerasrs import applications
from kerasrs.applications import imagenet_utils

FILES = json.loads((pathlib.Path(__file__).parents[1] / "fixtures" /
                    "keras_application_files.json").read_text())
QUICK_NOTOP = {"MobileNet", "MobileNetV3Small", "NASNetMobile"}
QUICK_TOP = {"MobileNet", "MobileNetV3Small"}


class Asked(Exception):
    pass


@pytest.fixture
def asked(monkeypatch):
    def fake_fetch(who, name, url, file_hash=None):
        raise Asked([name, url, file_hash])

    monkeypatch.setattr(imagenet_utils, "fetch_file", fake_fetch)

    def ask(app, **kwargs):
        kerasrs.utils.clear_session()
        with pytest.raises(Asked) as info, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            getattr(applications, app)(weights="imagenet", **kwargs)
        return info.value.args[0]

    return ask


def _marked(apps, quick):
    return [app if app in quick else pytest.param(app, marks=pytest.mark.slow)
            for app in sorted(apps)]


@pytest.mark.parametrize("app", _marked(FILES["notop"], QUICK_NOTOP))
def test_headless_weights_file_is_keras_s(asked, app):
    entry = FILES["notop"][app]
    assert asked(app, include_top=False, input_shape=tuple(entry["input_shape"])) == \
        entry["file"]


@pytest.mark.parametrize("app", _marked(FILES["top"], QUICK_TOP))
def test_classifier_weights_file_is_keras_s(asked, app):
    assert asked(app) == FILES["top"][app]


def test_every_application_is_covered():
    assert sorted(FILES["notop"]) == sorted(n for n in dir(applications) if n[0].isupper())
