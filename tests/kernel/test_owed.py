"""Owed work is settled before its state is seen, once per look."""

from fakefs.kernel.owed import Settle


def test_settle_runs_the_hooks_and_a_hook_looking_again_does_not_recurse():
    settle = Settle()
    calls = []

    def hook():
        calls.append("hook")
        settle()                      # the hook reads the state itself

    settle.hooks.append(hook)
    settle()
    settle()
    assert calls == ["hook", "hook"]


def test_a_failing_hook_does_not_leave_it_stuck():
    settle = Settle()
    calls = []

    def bad():
        calls.append(1)
        raise RuntimeError("boom")

    settle.hooks.append(bad)
    for _ in range(2):
        try:
            settle()
        except RuntimeError:
            pass
    assert calls == [1, 1]
