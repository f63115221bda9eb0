# Python threads handing work to each other through a Lock, a Queue and a Condition, for
# condition-variable handoffs under `contend run` (scripts/cond_handoff.sh with
# PROGRAM="python3 bench/python_handoff.py"). CPython's global interpreter lock is a pthread
# mutex and condition variable (timed waits), so every switch between its threads is a cond
# handoff as well as the program's own. Prints the same line as pthread_cond_pingpong.
#
#   python3 bench/python_handoff.py [THREADS] [TURNS]   (default 8 threads, 20,000 turns)
import queue
import sys
import threading
import time


def main():
    try:
        threads = int(sys.argv[1]) if len(sys.argv) > 1 else 8
        turns = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    except ValueError:
        threads = turns = 0
    if not 2 <= threads <= 64 or not 1 <= turns <= 10**9:
        print("usage: python_handoff.py [THREADS 2..64] [TURNS 1..1e9]", file=sys.stderr)
        sys.exit(2)
    lock = threading.Lock()
    cond = threading.Condition()
    items = queue.Queue(maxsize=4)
    state = {"turn": 0, "sum": 0}

    def worker(me):
        while True:
            with cond:
                while state["turn"] < turns and state["turn"] % threads != me:
                    cond.wait()
                if state["turn"] >= turns:
                    cond.notify_all()
                    return
                state["turn"] += 1
                cond.notify_all()
            items.put(me)
            with lock:
                state["sum"] += items.get()

    start = time.monotonic()
    ts = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    ms = (time.monotonic() - start) * 1000
    print("threads=%d turns=%d ms=%.1f ns_per_turn=%.0f" % (threads, state["turn"], ms, ms * 1e6 / state["turn"]))


main()
