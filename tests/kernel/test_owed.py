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


def test_pay_slice_does_a_slice_of_each_and_says_whether_more_remains():
    settle = Settle()
    left = {"a": 3, "b": 1}

    def slicer(name):
        def fn():
            if left[name]:
                left[name] -= 1
            return left[name] > 0
        return fn

    settle.slices += [slicer("a"), slicer("b")]
    assert settle.pay_slice() and left == {"a": 2, "b": 0}
    assert settle.pay_slice() and left == {"a": 1, "b": 0}
    assert not settle.pay_slice() and left == {"a": 0, "b": 0}
    assert Settle().pay_slice() is False
