"""probe.state: `patch` is once per tag (interventions and instruments both wrap a function once each),
`guarded(everywhere=True)` acts without an attached probe and disables itself on failure."""

from __future__ import annotations

import types

from ddp_doctor.probe.interventions import INTERVENTIONS, help_text, markdown_table, parse_value
from ddp_doctor.probe.state import PROBE, guarded, patch


def _owner():
    return types.SimpleNamespace(f=lambda x: x + 1)


def test_patch_is_once_per_tag_and_keeps_both_layers():
    owner = _owner()

    def plus(n):
        return lambda original: lambda x: original(x) + n

    patch(owner, "f", plus(10), tag="intervention")
    patch(owner, "f", plus(10), tag="intervention")  # a nested or repeated start: no second layer
    patch(owner, "f", plus(100))  # the instrument, default tag, wraps the intervention's layer
    patch(owner, "f", plus(100))
    assert owner.f(0) == 111
    assert owner.f.__ddp_doctor_original__.__ddp_doctor_tag__ == "intervention"


def test_guarded_everywhere_runs_without_a_probe_and_disables_itself_after_a_failure():
    assert not PROBE.active
    calls = []

    @guarded("intervention:test-only", default="fallback", everywhere=True)
    def body(fail: bool) -> str:
        calls.append(fail)
        if fail:
            raise RuntimeError("boom")
        return "ran"

    @guarded("instrument:test-only", default="fallback")
    def probe_only() -> str:
        return "ran"

    try:
        assert body(False) == "ran"
        assert probe_only() == "fallback"  # instruments act only in the attached process
        assert body(True) == "fallback"  # never raises into the caller
        assert body(False) == "fallback" and calls == [False, True]  # disabled for the process
    finally:
        PROBE.disabled.discard("intervention:test-only")


def test_every_intervention_is_documented_and_its_example_parses():
    for key, spec in INTERVENTIONS.items():
        assert spec.does and spec.values, key
        k, _, v = spec.example.partition("=")
        assert k == key
        parse_value(k, v)
        assert spec.example in help_text()
        assert f"| `{key}` |" in markdown_table()
