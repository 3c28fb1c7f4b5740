"""The dynamic batcher: FIFO, never splits a request, waits at most max_wait_us, bounded, thread-safe."""
from __future__ import annotations

import threading
import time

import pytest

from graphlab.errors import GraphlabError, OverloadedError
from graphlab.serve.batcher import DynamicBatcher


def _items(batch):
    return [p.item for p in batch.items]


def test_merges_in_arrival_order_without_splitting_a_request():
    b = DynamicBatcher(max_batch_rows=8, max_wait_us=0, merge=True, capacity=16)
    for name, rows in (("a", 3), ("b", 4), ("c", 2), ("d", 6)):
        b.put(name, rows)
    first = b.get(timeout_s=0)
    assert _items(first) == ["a", "b"] and first.rows == 7 and first.queue_depth == 2
    assert _items(b.get(timeout_s=0)) == ["c", "d"]
    assert b.get(timeout_s=0) is None


def test_without_merging_every_request_is_its_own_batch():
    b = DynamicBatcher(max_batch_rows=8, max_wait_us=10_000, merge=False, capacity=16)
    b.put("a", 1)
    b.put("b", 1)
    t0 = time.perf_counter()
    assert _items(b.get(timeout_s=0)) == ["a"]
    assert time.perf_counter() - t0 < 0.005  # no batching window
    assert _items(b.get(timeout_s=0)) == ["b"]


def test_a_request_larger_than_the_batch_runs_alone():
    b = DynamicBatcher(max_batch_rows=4, max_wait_us=0, merge=True, capacity=4)
    b.put("big", 10)
    b.put("small", 1)
    batch = b.get(timeout_s=0)
    assert _items(batch) == ["big"] and batch.rows == 10
    assert _items(b.get(timeout_s=0)) == ["small"]


def test_waits_for_company_at_most_max_wait_from_the_oldest_arrival():
    b = DynamicBatcher(max_batch_rows=32, max_wait_us=30_000, merge=True, capacity=64)
    b.put("a", 1)
    late = threading.Timer(0.01, lambda: b.put("b", 1))
    late.start()
    t0 = time.perf_counter()
    batch = b.get(timeout_s=1)
    waited = time.perf_counter() - t0
    late.join()
    assert _items(batch) == ["a", "b"]
    assert 0.02 <= waited < 0.2  # the window ran out (30 ms after "a"), not earlier, not much later
    assert batch.formed_ns - batch.first_ready_ns >= 20_000_000


def test_a_full_batch_leaves_before_the_window_ends():
    b = DynamicBatcher(max_batch_rows=4, max_wait_us=5_000_000, merge=True, capacity=64)
    for name in "abcd":
        b.put(name, 1)
    t0 = time.perf_counter()
    assert _items(b.get(timeout_s=1)) == list("abcd")
    assert time.perf_counter() - t0 < 0.05


def test_bounded_queue_refuses_with_overloaded_error():
    b = DynamicBatcher(max_batch_rows=4, max_wait_us=0, merge=True, capacity=2)
    b.put("a", 1)
    b.put("b", 1)
    with pytest.raises(OverloadedError, match="queue is full"):
        b.put("c", 1)
    assert len(b) == 2 and b.queued_rows == 2


def test_close_hands_out_what_is_queued_then_none_and_refuses_new():
    b = DynamicBatcher(max_batch_rows=1, max_wait_us=0, merge=True, capacity=4)
    b.put("a", 1)
    b.put("b", 1)
    b.close()
    with pytest.raises(OverloadedError, match="shutting down"):
        b.put("c", 1)
    assert _items(b.get()) == ["a"]
    assert _items(b.get()) == ["b"]
    assert b.get() is None


def test_counts_requests_still_in_preprocessing():
    b = DynamicBatcher(max_batch_rows=4, max_wait_us=0, merge=True, capacity=4)
    b.expect()
    b.expect()
    b.expect()
    b.put("a", 1, expected=True)
    b.forget()
    batch = b.get(timeout_s=0)
    assert batch.pre_in_flight == 1 and b.in_preprocessing == 1


def test_bad_arguments_are_one_clear_error():
    with pytest.raises(GraphlabError, match="positive"):
        DynamicBatcher(max_batch_rows=0, max_wait_us=0, merge=True, capacity=1)


def test_many_producers_one_consumer_every_item_exactly_once():
    b = DynamicBatcher(max_batch_rows=16, max_wait_us=200, merge=True, capacity=10_000)
    per_thread, threads = 500, 4
    got: list[int] = []
    done = threading.Event()

    def consume():
        while not (done.is_set() and len(b) == 0):
            batch = b.get(timeout_s=0.01)
            if batch is not None:
                assert batch.rows <= 16
                got.extend(p.item for p in batch.items)

    def produce(k):
        for i in range(per_thread):
            b.put(k * per_thread + i, 1 + i % 3)

    consumer = threading.Thread(target=consume)
    consumer.start()
    producers = [threading.Thread(target=produce, args=(k,)) for k in range(threads)]
    for t in producers:
        t.start()
    for t in producers:
        t.join()
    done.set()
    consumer.join(10)
    assert sorted(got) == list(range(per_thread * threads))


def test_a_request_past_its_deadline_is_handed_to_on_expired_not_to_a_batch():
    expired: list = []
    b = DynamicBatcher(max_batch_rows=8, max_wait_us=0, merge=True, capacity=8, on_expired=expired.append)
    now = time.monotonic_ns()
    b.put("late", 1, deadline_ns=now - 1)
    b.put("on time", 1, deadline_ns=now + 10**10)
    b.put("no deadline", 1)
    assert _items(b.get(timeout_s=0)) == ["on time", "no deadline"]
    assert [p.item for p in expired] == ["late"] and b.queued_rows == 0
    b.put("late too", 2, deadline_ns=now - 1)
    assert b.get(timeout_s=0.05) is None and len(expired) == 2 and b.queued_rows == 0  # only expired came: none


def test_batch_times_give_the_wait_of_the_rows_ahead():
    from graphlab.serve.batcher import BatchTimes

    times = BatchTimes(window=3)
    assert times.expected_wait_s(rows_ahead=100, max_batch_rows=8, merge=True) == 0.0  # nothing measured yet
    for duration_s in (7.0, 0.1, 0.2, 0.3):  # the window keeps the last three: the typical one is their median
        times.add(duration_s)
    assert times.typical_s == pytest.approx(0.2)
    for duration_s in (0.2, 0.2, 9.0):  # one batch held up by a pause moves it little
        times.add(duration_s)
    assert times.expected_wait_s(rows_ahead=17, max_batch_rows=8, merge=True) == pytest.approx(0.6)  # 3 batches
    assert times.expected_wait_s(rows_ahead=17, max_batch_rows=8, merge=False, requests_ahead=5) == pytest.approx(1.0)
