"""Hypothesis draws shared by the publishing tests."""

from __future__ import annotations

from anonymize.publish import DistinctLDiversity, KAnonymity, PrivacyModel, TCloseness


def draw_models(draw, st, k_max: int, t: float) -> list[PrivacyModel]:
    """k-anonymity with k in 2 … ``k_max``, then nothing, distinct 2-diversity or variational
    t-closeness at ``t`` (``st``: hypothesis.strategies)."""
    models: list[PrivacyModel] = [KAnonymity(draw(st.integers(2, k_max)))]
    extra = draw(st.sampled_from(["none", "distinct", "t"]))
    if extra == "distinct":
        models.append(DistinctLDiversity(2))
    elif extra == "t":
        models.append(TCloseness(t, distance="variational"))
    return models
